"""The webhook reads a pod's nvidia.com/gpu as slots where migrate does: it watches the Nodes' GPU
Feature Discovery labels (NVIDIA/k8s-device-plugin internal/lm/resource.go @ aaccdfd2: `nvidia.com/gpu.replicas`,
`nvidia.com/gpu.sharing-strategy`), so a workload whose node selection keeps it in a time-sliced pool
becomes the same shared claim from either, and one free to land on whole GPUs the same per-pod claims."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonpatch
import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.cluster.shared_gpus import node_as_read, sharing_identity
from tests.conftest import admission_review, patch_of
from tests.k8sdouble import K8sDouble

DATA = Path(__file__).parent / "data"
SHARES = DATA / "cluster" / "h100-unlimited-shares.yaml"
SLICED = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED", "nvidia.com/gpu.count": "2",
          "nvidia.com/gpu.replicas": "8", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
WHOLE = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
         "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none"}


def node(name: str, labels: dict) -> dict:
    gpus = int(labels["nvidia.com/gpu.count"]) * int(labels["nvidia.com/gpu.replicas"])
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": "64", "nvidia.com/gpu": str(gpus)}}}


NODES = [node("h100-s1", SLICED), node("h100-a", WHOLE)]


def deployment(node_selector: dict | None = None, affinity: dict | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "vllm", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer", "namespace": "default"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "infer"}},
                     "template": {"metadata": {"labels": {"app": "infer"}}, "spec": spec}}}


def by_migrate(workload: dict, tmp_path: Path) -> tuple[dict, list[dict]]:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all(NODES))
    result = CliRunner().invoke(main, ["migrate", "--sharing", "timeslicing", "--cluster", str(nodes),
                                       "--cluster", str(SHARES), "-"], input=yaml.safe_dump(workload))
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    (migrated,) = [d for d in docs if d["kind"] == "Deployment"]
    return migrated, [d for d in docs if d["kind"] != "Deployment"]


def by_webhook(workload: dict, webhook_on, **settings) -> tuple[dict, list[dict]]:
    settings = {"translation": {"sharing": "timeslicing"}, **settings}
    with K8sDouble() as double:
        double.seed(*NODES, *[d for d in yaml.safe_load_all(SHARES.read_text()) if d])
        response = webhook_on(double, **settings).review(
            "/mutate", admission_review(workload))
        assert response["allowed"] is True, response
        migrated = jsonpatch.apply_patch(copy.deepcopy(workload), patch_of(response))
        claims = []
        for entry in migrated["spec"]["template"]["spec"]["resourceClaims"]:
            kind, name = (("ResourceClaim", entry["resourceClaimName"]) if "resourceClaimName" in entry
                          else ("ResourceClaimTemplate", entry["resourceClaimTemplateName"]))
            stored = double.get(kind, name, "default", version="v1")
            assert stored is not None, (kind, name)
            claims.append(stored)
    return migrated, claims


BY_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "nvidia.com/gpu.sharing-strategy", "operator": "In", "values": ["time-slicing"]}]}]}}}


@pytest.mark.parametrize("pinned, affinity, kind", [
    ({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED"}, None, "ResourceClaim"),  # slots of the shared pool
    (None, BY_AFFINITY, "ResourceClaim"),  # kept there by required node affinity
    (None, None, "ResourceClaimTemplate"),  # may land on the whole H100s: whole GPUs
])
def test_the_webhook_and_migrate_agree_on_a_pod_pinned_to_a_time_sliced_pool(pinned, affinity, kind, webhook_on,
                                                                              tmp_path):
    workload = deployment(pinned, affinity)
    cli_object, cli_claims = by_migrate(workload, tmp_path)
    hook_object, hook_claims = by_webhook(workload, webhook_on)
    assert [c["kind"] for c in cli_claims] == [c["kind"] for c in hook_claims] == [kind]
    assert cli_claims[0]["spec"] == hook_claims[0]["spec"]
    assert cli_claims[0]["metadata"]["name"] == hook_claims[0]["metadata"]["name"]
    cli_spec, hook_spec = cli_object["spec"]["template"]["spec"], hook_object["spec"]["template"]["spec"]
    assert cli_spec["resourceClaims"] == hook_spec["resourceClaims"]
    assert cli_spec["containers"][0]["resources"] == hook_spec["containers"][0]["resources"]
    if kind == "ResourceClaim":
        (config,) = hook_claims[0]["spec"]["devices"]["config"]
        assert config["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"


def test_a_node_keeps_only_what_slot_reading_needs_and_a_heartbeat_changes_nothing_kept():
    gpu = {**node("h100-s1", SLICED), "metadata": {**node("h100-s1", SLICED)["metadata"], "resourceVersion": "7",
                                                   "managedFields": [{"manager": "kubelet"}], "uid": "u"},
           "status": {"allocatable": {"cpu": "64", "nvidia.com/gpu": "16"}, "conditions": [{"type": "Ready"}],
                      "images": [{"names": ["vllm"]}]}}
    kept = node_as_read(gpu)
    assert kept == {"metadata": {"name": "h100-s1", "resourceVersion": "7", "labels": gpu["metadata"]["labels"]},
                    "status": {"allocatable": {"nvidia.com/gpu": "16"}}}
    cpu = {"metadata": {"name": "cpu-1", "resourceVersion": "3", "labels": {"kubernetes.io/hostname": "cpu-1"}},
           "status": {"allocatable": {"cpu": "8"}}}
    assert node_as_read(cpu) == {"metadata": {"name": "cpu-1", "resourceVersion": "3"}}
    beat = copy.deepcopy(gpu)
    beat["metadata"]["resourceVersion"] = "8"
    assert sharing_identity([node_as_read(beat)]) == sharing_identity([kept])
    relabelled = copy.deepcopy(gpu)
    relabelled["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4"
    assert sharing_identity([node_as_read(relabelled)]) != sharing_identity([kept])


def test_a_webhook_whose_translation_needs_nothing_else_of_the_cluster_still_reads_slots(webhook_on, tmp_path):
    """A fixed apiVersion and sharing with the claim check off need no profile for translation, but
    the pool a pod is kept in still decides what its nvidia.com/gpu meant (docs/webhook.md "Time-sliced
    pools"): the webhook must not give that pod whole GPUs where migrate gives it the pool's slot."""
    workload = deployment({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED"})
    _, cli_claims = by_migrate(workload, tmp_path)
    _, hook_claims = by_webhook(workload, webhook_on, translation={"sharing": "timeslicing", "apiVersion": "v1"},
                                cluster={"unsatisfiableClaims": "ignore"})
    assert [c["kind"] for c in hook_claims] == [c["kind"] for c in cli_claims] == ["ResourceClaim"]
    assert cli_claims[0]["spec"] == hook_claims[0]["spec"]
