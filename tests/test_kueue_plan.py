"""Kueue counts claims only through its Configuration's deviceClassMappings (kubectl_gpu/fleet/kueue.py
cites kubernetes-sigs/kueue): `plan` says what Kueue needs for ClusterQueues covering GPUs."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.fleet.kueue import plan_kueue
from tests.fleet_cluster import device_class, node, resource_slice


def cluster_queue(name: str, *groups: dict) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": {}, "resourceGroups": list(groups)}}


def group(covered: list[str], *flavors: tuple[str, dict]) -> dict:
    return {"coveredResources": covered,
            "flavors": [{"name": name, "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()]}
                        for name, quotas in flavors]}


GPU_QUEUE = cluster_queue("research", group(["cpu", "nvidia.com/gpu"], ("a100", {"cpu": 64, "nvidia.com/gpu": 8})))
MIG_QUEUE = cluster_queue("inference", group(
    ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"],
    ("a100-mig", {"nvidia.com/mig-1g.10gb": 14, "nvidia.com/mig-3g.40gb": 4})))


def test_a_queue_covering_nvidia_com_gpu_needs_only_the_mapping_to_the_same_name():
    plan = plan_kueue([GPU_QUEUE])
    assert plan.configuration == {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                                  "resources": {"deviceClassMappings": [
                                      {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}]}}
    assert plan.cluster_queues == ()
    assert any("v0.18 or newer" in n and "restart kueue-controller-manager" in n for n in plan.notes)
    assert any("firstAvailable" in n for n in plan.notes)


def test_mig_quotas_become_one_mig_device_count_per_flavor():
    plan = plan_kueue([MIG_QUEUE])
    assert plan.mappings == ({"name": "mig.nvidia.com/devices", "deviceClassNames": ["mig.nvidia.com"]},)
    [queue] = plan.cluster_queues
    [changed] = queue["spec"]["resourceGroups"]
    assert changed["coveredResources"][-1] == "mig.nvidia.com/devices"
    assert changed["flavors"][0]["resources"][-1] == {"name": "mig.nvidia.com/devices", "nominalQuota": "18"}
    # Kueue's CEL rule: each flavor lists as many resources as the group covers.
    assert all(len(f["resources"]) == len(changed["coveredResources"]) for f in changed["flavors"])
    assert plan_kueue([queue]).cluster_queues == ()  # idempotent


def test_no_gpu_queue_means_nothing_to_say():
    assert plan_kueue([cluster_queue("cpu", group(["cpu"], ("default", {"cpu": 8})))]).notes == ()


def test_plan_shows_kueue_changes_and_writes_them_in_yaml(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node("dra-1", dra=True), resource_slice("dra-1"), device_class(),
                                        GPU_QUEUE, MIG_QUEUE]))
    table = CliRunner().invoke(main, ["plan", "-f", str(path)])
    assert "KUEUE" in table.stdout and "deviceClassMappings: nvidia.com/gpu <- gpu.nvidia.com" in table.stdout
    document = json.loads(CliRunner().invoke(main, ["plan", "-f", str(path), "-o", "json"]).stdout)
    assert [m["name"] for m in document["kueue"]["configuration"]["resources"]["deviceClassMappings"]] == [
        "nvidia.com/gpu", "mig.nvidia.com/devices"]
    assert [q["metadata"]["name"] for q in document["kueue"]["clusterQueues"]] == ["inference"]


QUEUES_FILE = """\
# the inference team's share
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: inference
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]
    flavors:
    - name: a100-mig
      resources:
      - name: nvidia.com/mig-1g.10gb
        nominalQuota: 14  # seven per GPU
      - name: nvidia.com/mig-3g.40gb
        nominalQuota: 4
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: research
spec:
  resourceGroups:
  - coveredResources: ["cpu", "nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: cpu
        nominalQuota: 64
      - name: nvidia.com/gpu
        nominalQuota: 8
"""


def test_migrate_kueue_rewrites_cluster_queues_and_writes_kueues_configuration(tmp_path):
    path = tmp_path / "queues.yaml"
    path.write_text(QUEUES_FILE)
    result = CliRunner().invoke(main, ["migrate", "--kueue", str(path)])
    assert result.exit_code == 0, result.output
    assert "nominalQuota: 14  # seven per GPU" in result.stdout
    inference, research, configuration = list(yaml.safe_load_all(result.stdout))
    assert inference["spec"]["resourceGroups"][0]["coveredResources"][-1] == "mig.nvidia.com/devices"
    assert inference["spec"]["resourceGroups"][0]["flavors"][0]["resources"][-1] == {
        "name": "mig.nvidia.com/devices", "nominalQuota": "18"}
    assert research == yaml.safe_load(QUEUES_FILE.split("---\n")[1])
    assert configuration["kind"] == "Configuration"
    assert configuration["resources"]["deviceClassMappings"] == [
        {"name": "mig.nvidia.com/devices", "deviceClassNames": ["mig.nvidia.com"]},
        {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}]
    assert "kueue: Kueue v0.18 or newer counts claims" in result.stderr
    again = tmp_path / "again.yaml"
    again.write_text("---\n".join(result.stdout.split("---\n")[:2]))
    second = CliRunner().invoke(main, ["migrate", "--kueue", "--in-place", str(again)])
    assert second.exit_code == 0 and "quota object(s) given DRA caps" not in second.stderr


def test_without_kueue_cluster_queues_are_left_alone(tmp_path):
    path = tmp_path / "queues.yaml"
    path.write_text(QUEUES_FILE)
    result = CliRunner().invoke(main, ["migrate", str(path)])
    assert result.stdout == QUEUES_FILE
