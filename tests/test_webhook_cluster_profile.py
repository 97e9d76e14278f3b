"""The webhook writes claims its own cluster can take: the served resource.k8s.io version, sharing the
GPUs allow, and a warning or denial for a claim no published device can satisfy.

Kubernetes serves resource.k8s.io v1beta1 from 1.32, v1beta2 from 1.33 and v1 from 1.34: a webhook
that always wrote v1 denied every GPU pod on 1.32/1.33 (its template could never be created).  The
API double stands in for those releases by not serving the newer versions.
"""

from __future__ import annotations

import time
from pathlib import Path

import jsonpatch
import kubernetes_validate
import pytest
import yaml

from tests.conftest import admission_review, patch_of
from tests.k8sdouble import K8sDouble

DATA = Path(__file__).parent / "data"
H100_NODE = DATA / "slices" / "nvidia-h100-node.yaml"
A100_MIG_V1BETA1 = DATA / "slices" / "nvidia-a100-mig-v1beta1.yaml"
SHARES = DATA / "cluster" / "h100-unlimited-shares.yaml"


def docs(path: Path, version: str | None = None) -> list[dict]:
    found = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        for item in doc.get("items", [doc]) if doc.get("kind") == "List" else [doc]:
            found.append({**item, "apiVersion": f"resource.k8s.io/{version}"} if version else item)
    return found


def gpu_pod(limits: dict, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "default"},
            "spec": {"containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": limits}}], **spec}}


def template_of(double: K8sDouble, response: dict, pod: dict, version: str) -> dict:
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    [entry] = patched["spec"]["resourceClaims"]
    stored = double.get("ResourceClaimTemplate", entry["resourceClaimTemplateName"], "default", version=version)
    assert stored is not None
    return stored


@pytest.mark.parametrize("minor, disabled, slices, version", [
    ("1.32", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"], (A100_MIG_V1BETA1, None), "v1beta1"),
    ("1.33", ["resource.k8s.io/v1"], (H100_NODE, "v1beta2"), "v1beta2"),
])
def test_gpu_pods_are_admitted_with_claims_in_the_version_the_api_server_serves(
        webhook_on, minor, disabled, slices, version) -> None:
    with K8sDouble(kubernetes_version=minor, disabled_group_versions=disabled) as double:
        double.seed(*docs(*slices))
        hook = webhook_on(double)
        pod = gpu_pod({"nvidia.com/gpu": "1"})
        response = hook.review("/mutate", admission_review(pod))
        assert response["allowed"] is True, response
        template = template_of(double, response, pod, version)
        assert template["apiVersion"] == f"resource.k8s.io/{version}"
        kubernetes_validate.validate(template, minor, strict=True)


def test_a_claim_no_device_can_satisfy_is_warned_by_default_and_denied_when_configured(webhook_on) -> None:
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        l40s = gpu_pod({"nvidia.com/gpu": "1"}, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-L40S"})
        warned = webhook_on(double).review("/mutate", admission_review(l40s))
        assert warned["allowed"] is True
        assert any("no device in the cluster can satisfy ResourceClaimTemplate" in w for w in warned["warnings"])
        assert all(len(w) <= 120 for w in warned["warnings"])
        denied = webhook_on(double, cluster={"unsatisfiableClaims": "deny"}).review("/mutate", admission_review(l40s))
        assert denied["allowed"] is False
        assert "productName" in denied["status"]["message"] and "matches none of 8 device(s)" in denied["status"]["message"]
        h100 = webhook_on(double, cluster={"unsatisfiableClaims": "deny"}).review(
            "/mutate", admission_review(gpu_pod({"nvidia.com/gpu": "1"})))
        assert h100["allowed"] is True


def test_sharing_auto_gives_memory_shares_only_on_gpus_that_advertise_them(webhook_on) -> None:
    half = gpu_pod({"nvidia.com/gpumem": "20000", "nvidia.com/gpu": "1"})
    with K8sDouble() as double:
        double.seed(*docs(SHARES))
        hook = webhook_on(double)
        shared = template_of(double, hook.review("/mutate", admission_review(half)), half, "v1")
        assert shared["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {
            "requests": {"memory": "20000Mi"}}
        whole_pod = gpu_pod({"nvidia.com/gpu": "1"})
        whole = template_of(double, hook.review("/mutate", admission_review(whole_pod)), whole_pod, "v1")
        # The driver's unlimited mode gives a claim without a capacity request no share: ask for all of it.
        assert whole["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {
            "requests": {"memory": "81559Mi"}}
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        response = webhook_on(double).review("/mutate", admission_review(half))
        exclusive = template_of(double, response, half, "v1")
        assert "capacity" not in exclusive["spec"]["spec"]["devices"]["requests"][0]["exactly"]


def test_the_profile_is_read_once_for_many_pods(webhook_on) -> None:
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        hook = webhook_on(double)
        for name in ("a", "b", "c"):
            pod = gpu_pod({"nvidia.com/gpu": "1"})
            pod["metadata"]["name"] = name
            assert hook.review("/mutate", admission_review(pod))["allowed"]
        assert double.count(verb="list", resource="resourceslices") == 1


def test_devices_published_after_the_webhook_started_serve_the_next_pod_without_a_re_list(webhook_on) -> None:
    """Drivers publish and republish ResourceSlices as GPUs appear (a node joins, a driver
    restarts: https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/
    "ResourceSlice"), and issue 9 asks the webhook to read the profile "with a watch or a short
    cache": the webhook watches them, so the next pod sees new devices without a timer and without
    listing again (the API concepts page's "Efficient detection of changes")."""
    l40s = gpu_pod({"nvidia.com/gpu": "1"}, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-L40S"})
    with K8sDouble() as double:
        double.seed(*docs(H100_NODE))
        hook = webhook_on(double, cluster={"unsatisfiableClaims": "deny", "profileTtlSeconds": 3600})
        assert hook.review("/mutate", admission_review(l40s))["allowed"] is False
        double.seed(*docs(DATA / "driver" / "l40s.yaml"))
        deadline = time.monotonic() + 10  # the watch delivers in milliseconds; a bound against a hang
        while not hook.review("/mutate", admission_review(l40s))["allowed"]:
            assert time.monotonic() < deadline, "the new L40S slice never reached the webhook"
            time.sleep(0.05)
        assert double.count(verb="list", resource="resourceslices") == 1
        assert double.count(verb="watch", resource="resourceslices") >= 1


def test_api_version_auto_denies_with_a_retry_only_while_the_api_server_cannot_say(webhook_on) -> None:
    with K8sDouble() as double:
        hook = webhook_on(double)
        double.fail("list", "resourceslices", status=500, times=None)
        response = hook.review("/mutate", admission_review(gpu_pod({"nvidia.com/gpu": "1"})))
        assert response["allowed"] is False and response["status"]["code"] == 503
        assert "resource.k8s.io versions" in response["status"]["message"]


def test_a_legacy_gpu_beside_a_gpu_claim_is_denied_on_a_1_32_cluster_too(webhook_on) -> None:
    """The claim is read in the version the API server serves: a v1 GET is 404 on 1.32, which
    would hide the second GPU."""
    with K8sDouble(kubernetes_version="1.32",
                   disabled_group_versions=["resource.k8s.io/v1", "resource.k8s.io/v1beta2"]) as double:
        double.seed({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": "gpu", "namespace": "default"},
                     "spec": {"spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu.nvidia.com"}]}}}})
        pod = gpu_pod({"nvidia.com/gpu": "1"}, resourceClaims=[{"name": "g", "resourceClaimTemplateName": "gpu"}])
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "g"}]
        response = webhook_on(double).review("/validate", admission_review(pod))
        assert response["allowed"] is False and "asks for GPUs twice" in response["status"]["message"]


def test_mig_requests_a_cluster_deviceclass_serves_are_left_for_the_scheduler(webhook_on) -> None:
    """KEP-5004: with DRAExtendedResource on (beta, on by default from 1.36) a DeviceClass whose
    extendedResourceName is `nvidia.com/mig-1g.10gb` lets the scheduler give the pod's extended
    resource a DRA device; the webhook leaves the request as written and does not fence the pod off the
    DRA nodes that serve it.  The class is NVIDIA's own example shape (demo/specs/extended-resources)."""
    from kubectl_gpu.cluster.device_classes import mig_device_class

    mig_class = mig_device_class("1g.10gb")
    with K8sDouble(kubernetes_version="1.36") as double:
        double.seed(*docs(DATA / "driver" / "a100-mig.yaml"), mig_class)
        response = webhook_on(double).review("/mutate", admission_review(gpu_pod({"nvidia.com/mig-1g.10gb": "1"})))
        assert response["allowed"] is True
        assert not response.get("patch"), "left as written, not rewritten, not fenced"
        assert double.count(verb="create", resource="resourceclaimtemplates") == 0
    with K8sDouble(kubernetes_version="1.35") as double:  # the gate is off by default: rewritten
        double.seed(*docs(DATA / "driver" / "a100-mig.yaml"), mig_class)
        response = webhook_on(double).review("/mutate", admission_review(gpu_pod({"nvidia.com/mig-1g.10gb": "1"})))
        assert response["allowed"] is True and response.get("patch")


def test_validate_does_not_fence_a_pinned_pod_off_the_dra_node_whose_deviceclass_serves_its_mig_request(
        webhook_on) -> None:
    """/validate judges a pod with the translation fitted to the cluster, as /mutate does.  KEP-5004
    (kubernetes/enhancements keps/sig-scheduling/5004-dra-extended-resource: "the scheduler ... allocates
    a device from a DeviceClass whose extendedResourceName matches") gives a pod's `nvidia.com/mig-1g.10gb`
    a DRA device on a DRA node: a pod pinned there by spec.nodeName belongs there, and /mutate leaves it.
    /validate must not deny the same pod as pinned to a DRA node; with the gate off (1.35) it still does."""
    from kubectl_gpu.cluster.device_classes import mig_device_class

    dra_node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": "gpu-7", "labels": {"ack.node.gpu.schedule": "disabled"}}}
    pod = gpu_pod({"nvidia.com/mig-1g.10gb": "1"}, nodeName="gpu-7")
    with K8sDouble(kubernetes_version="1.36") as double:
        double.seed(*docs(DATA / "driver" / "a100-mig.yaml"), mig_device_class("1g.10gb"), dra_node)
        hook = webhook_on(double)
        assert hook.review("/mutate", admission_review(pod))["allowed"] is True
        response = hook.review("/validate", admission_review(pod))
        assert response["allowed"] is True, response.get("status")
    with K8sDouble(kubernetes_version="1.35") as double:  # DRAExtendedResource off by default: fenced
        double.seed(*docs(DATA / "driver" / "a100-mig.yaml"), mig_device_class("1g.10gb"), dra_node)
        response = webhook_on(double).review("/validate", admission_review(pod))
        assert response["allowed"] is False and "gpu-7" in response["status"]["message"]


# --- memory: the watched slices keep only what the profile reads ------------------------------


def test_watched_slices_keep_only_what_the_profile_reads_and_give_the_same_profile() -> None:
    import asyncio

    import kubernetes

    from kubectl_gpu.cluster.profile import profile_from_discovery, stamped
    from kubectl_gpu.k8s import AsyncClient
    from tests import builders
    from webhook.cluster_profile import ProfileCache

    with K8sDouble() as double:
        slices = [builders.gpu_slice(f"node-{i}") for i in range(3)]
        for obj in slices:  # as the kubelet plugin writes them: through the API, with managedFields
            obj["metadata"].update(labels={"app": "dra-driver"}, ownerReferences=[
                {"apiVersion": "v1", "kind": "Node", "name": obj["spec"]["nodeName"], "uid": "u"}])
            kubernetes.client.ResourceV1Api(double.api_client()).create_resource_slice(obj)

        async def read() -> tuple:
            cache = ProfileCache(AsyncClient(double.api_client().configuration, 5))
            try:
                profile = await cache.get()
                [watch] = [w for (_, _, kind), w in cache._watches.items() if kind == "ResourceSlice"]
                return profile, list(watch.values())
            finally:
                await cache.close()

        profile, kept = asyncio.run(read())
        full = double.list("ResourceSlice")
        assert full[0]["metadata"]["managedFields"] and all(set(s["metadata"]) == {"name", "resourceVersion"} for s in kept)
        assert [s["spec"] for s in kept] == [s["spec"] for s in full]
        version, group = {"major": "1", "minor": "34"}, double_group(double)
        unstripped = profile_from_discovery("the webhook's cluster", version, group,
                                            stamped(full, "resource.k8s.io/v1", "ResourceSlice"), {})
        assert profile.revision == unstripped.revision
        assert list(map(repr, profile.devices)) == list(map(repr, unstripped.devices))  # Device compares by identity


def double_group(double: K8sDouble) -> dict:
    import json
    import urllib.request

    return json.loads(urllib.request.urlopen(f"{double.url}/apis/resource.k8s.io").read())
