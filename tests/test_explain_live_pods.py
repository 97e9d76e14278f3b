"""Live `explain` judges claims as the scheduler allocates them (issue 24): `-A` / `-l` allocate
each pod's claims together on one node (k8s.io/dynamic-resource-allocation structured: one
Allocate call per pod and node, every claim of the pod in it), and `--node NAME` reads that
Node from the cluster, whose labels decide which node selectors of network-attached slices
reach it (ResourceSlice spec.nodeSelector; the allocator's node selection)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests import builders as b


def explain(double, *args: str):
    result = CliRunner().invoke(main, ["explain", *args, "--kubeconfig", double.kubeconfig_path(namespace="ml"),
                                       "-o", "json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, {f"{i['namespace']}/{i['name']}": i for i in json.loads(result.stdout)["items"]}


def test_every_pod_with_claims_has_its_claims_judged_together(k8s_double):
    """One GPU: each of pod two-claims' claims fits alone, not both at once; pod lone's claim fits."""
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 1),
        b.claim("first", "ml"), b.claim("second", "ml"), b.claim("alone", "ml"),
        b.pod("two-claims", "ml", phase="Pending", labels={"team": "x"},
              claims=[{"name": "a", "resourceClaimName": "first"}, {"name": "b", "resourceClaimName": "second"}]),
        b.pod("lone", "ml", phase="Pending", labels={"team": "x"},
              claims=[{"name": "gpu", "resourceClaimName": "alone"}]),
    )
    for args in (["-A"], ["-l", "team=x"]):
        code, items = explain(k8s_double, *args)
        assert code == 1, args
        assert not items["ml/first"]["allocatable"] and not items["ml/second"]["allocatable"]
        assert "together with the pod's other claims" in items["ml/first"]["verdict"]
        assert items["ml/alone"]["allocatable"], items["ml/alone"]["verdict"]


def network_attached_slice() -> dict:
    """Devices reachable from the nodes labelled gpu-pool=a (no nodeName: spec.nodeSelector)."""
    slice_obj = b.gpu_slice("fabric", 1)
    spec = slice_obj["spec"]
    del spec["nodeName"]
    spec["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "gpu-pool", "operator": "In", "values": ["a"]}]}]}
    return slice_obj


def test_node_reads_the_nodes_labels_from_the_cluster(k8s_double):
    k8s_double.seed(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *b.nvidia_device_classes(), b.node("in-pool", labels={"gpu-pool": "a"}), b.node("elsewhere"),
        network_attached_slice(), b.claim("waiting", "ml"),
    )
    code, items = explain(k8s_double, "claim/waiting", "--node", "in-pool")
    assert code == 0 and items["ml/waiting"]["allocatable"], items
    code, items = explain(k8s_double, "claim/waiting", "--node", "elsewhere")
    assert code == 1 and not items["ml/waiting"]["allocatable"], items
