"""The webhook's guard knows nodes that run the NVIDIA DRA driver without any label (GPU Operator
GPUCluster installs label nothing) by the gpu.nvidia.com ResourceSlices its cluster profile reads:
a legacy GPU pod is fenced off them, denied when pinned to one, and their status loses legacy GPU
capacity.  The DRA label stays an option beside it."""

from __future__ import annotations

from pathlib import Path

import jsonpatch

from tests.conftest import admission_review, patch_of
from tests.k8sdouble import K8sDouble
from tests.test_double_counting import schedulable_on
from tests.test_webhook_cluster_profile import docs, gpu_pod
from webhook.fencing import DRIVER_NODE, fence_driver_nodes, pinned_to_dra_node, strip_legacy_capacity

H100_NODE = Path(__file__).parent / "data" / "slices" / "nvidia-h100-node.yaml"  # driver slice of h100-node-1
# HAMi's DRA driver publishing on hami-h100-node (tests/hami_slices.py predicts it from the driver's code).
HAMI_NODE = Path(__file__).parent / "data" / "slices" / "hami-h100-node.yaml"
DRIVER_NODES = frozenset({"h100-node-1"})


def legacy_pod(**spec) -> dict:
    return gpu_pod({"nvidia.com/gpu": "1"}, **spec)


def test_a_legacy_pod_is_fenced_off_driver_nodes_by_name_and_only_off_them():
    pod = legacy_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}})

    fenced = jsonpatch.apply_patch(pod, fence_driver_nodes(pod, DRIVER_NODES))

    assert not schedulable_on(fenced, {"zone": "a"}, "h100-node-1")
    assert schedulable_on(fenced, {"zone": "a"}, "plugin-node-1")
    assert fence_driver_nodes(fenced, DRIVER_NODES) == []  # idempotent
    assert fence_driver_nodes(gpu_pod({"cpu": "1"}), DRIVER_NODES) == []  # no legacy GPU: left alone


def test_a_pod_without_affinity_gets_a_term_of_its_own():
    fenced = jsonpatch.apply_patch(legacy_pod(), fence_driver_nodes(legacy_pod(), DRIVER_NODES))

    assert not schedulable_on(fenced, {}, "h100-node-1") and schedulable_on(fenced, {}, "other")


def test_a_legacy_pod_pinned_to_a_driver_node_is_denied_with_the_reason():
    [reason] = pinned_to_dra_node(legacy_pod(nodeName="h100-node-1"), (), None, DRIVER_NODES)

    assert DRIVER_NODE in reason and "h100-node-1" in reason


def test_a_driver_nodes_status_loses_its_legacy_gpu_capacity():
    node = {"metadata": {"name": "h100-node-1", "labels": {}},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}

    assert [op["path"] for op in strip_legacy_capacity(node, (), DRIVER_NODES)] == [
        "/status/capacity/nvidia.com~1gpu", "/status/allocatable/nvidia.com~1gpu"]


def test_validate_denies_a_legacy_pod_pinned_to_an_unlabelled_node_that_publishes_gpu_slices(webhook_on):
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "h100-node-1"}})
        response = webhook_on(double).review("/validate", admission_review(legacy_pod(nodeName="h100-node-1")))

    assert response["allowed"] is False
    assert "h100-node-1" in response["status"]["message"] and "gpu.nvidia.com" in response["status"]["message"]
    assert "ResourceSlices" in response["status"]["message"]


def test_mutate_fences_a_pod_it_translates_off_driver_nodes_when_it_keeps_legacy_requests(webhook_on):
    """A family left to the device plugin (passThroughFamilies) keeps its request: the fitted plan keeps
    it off the nodes the driver publishes slices for."""
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        hook = webhook_on(double, passThroughFamilies=["nvidia-gpu"])
        pod = legacy_pod()
        response = hook.review("/mutate", admission_review(pod))

    assert response["allowed"] is True
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    assert not schedulable_on(patched, {}, "h100-node-1")  # no label there: kept off by its name
    assert schedulable_on(patched, {}, "plugin-node-1")


# A webhook whose translation needs nothing of the cluster (a fixed apiVersion and sharing, no claim
# check) still reads the driver's slices to know its nodes: fencing by label alone would let a legacy
# pod onto a GPU Operator node that carries no DRA label.
FIXED_TRANSLATION = {"translation": {"apiVersion": "v1", "sharing": "exclusive"},
                     "cluster": {"unsatisfiableClaims": "ignore"}}


def test_without_a_fitted_profile_mutate_still_fences_a_legacy_pod_off_driver_nodes(webhook_on):
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        hook = webhook_on(double, passThroughFamilies=["nvidia-gpu"], **FIXED_TRANSLATION)
        pod = legacy_pod()
        response = hook.review("/mutate", admission_review(pod))

    assert response["allowed"] is True
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    assert not schedulable_on(patched, {}, "h100-node-1")
    assert schedulable_on(patched, {}, "plugin-node-1")


def test_without_a_fitted_profile_validate_still_denies_a_legacy_pod_pinned_to_a_driver_node(webhook_on):
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "h100-node-1"}})
        response = webhook_on(double, **FIXED_TRANSLATION).review(
            "/validate", admission_review(legacy_pod(nodeName="h100-node-1")))

    assert response["allowed"] is False
    assert "ResourceSlices" in response["status"]["message"]



# HAMi's DRA driver is a GPU DRA driver too: a node its kubelet plugin publishes on hands out the GPUs
# HAMi's device plugin would also advertise there, so legacy pods are kept off it the same way.

def test_mutate_fences_legacy_pods_off_nodes_that_publish_hamis_slices(webhook_on):
    with K8sDouble() as double:
        double.seed(*docs(HAMI_NODE))
        hook = webhook_on(double, passThroughFamilies=["nvidia-gpu"], **FIXED_TRANSLATION)
        pod = legacy_pod()
        response = hook.review("/mutate", admission_review(pod))

    patched = jsonpatch.apply_patch(pod, patch_of(response))
    assert not schedulable_on(patched, {}, "hami-h100-node")
    assert schedulable_on(patched, {}, "plugin-node-1")


def test_validate_denies_a_legacy_pod_pinned_to_a_node_that_publishes_hamis_slices(webhook_on):
    with K8sDouble() as double:
        double.seed(*docs(HAMI_NODE), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "hami-h100-node"}})
        response = webhook_on(double).review("/validate", admission_review(legacy_pod(nodeName="hami-h100-node")))

    assert response["allowed"] is False
    assert "hami-h100-node" in response["status"]["message"]
    assert "hami-core-gpu.project-hami.io" in response["status"]["message"]
