"""Cluster-wide queues follow a live migration: `migrate --from-cluster` gives a Volcano Queue the
DRA keys that carry its GPU caps (kubectl_gpu/core/volcano.py cites Volcano's capacity plugin) and,
with --kueue, a Kueue ClusterQueue its DRA device counts and prints the deviceClassMappings for
Kueue's Configuration (kubectl_gpu/core/kueue.py cites Kueue); both before any workload moves, and
`rollback -A --apply` takes exactly those entries away again."""
from __future__ import annotations

import copy

import pytest
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.fleet.cluster_io import send
from kubectl_gpu.k8s import Client
from kubectl_gpu.k8s.paths import collection_path
from tests.fleet_cluster import device_class, node, resource_slice, template, workload
from tests.k8sdouble import K8sDouble
from tests.k8sdouble.kinds import ResourceKind

KUEUE = ResourceKind("kueue.x-k8s.io", ("v1beta2",), "clusterqueues", "ClusterQueue", False)
VOLCANO = ResourceKind("scheduling.volcano.sh", ("v1beta1",), "queues", "Queue", False)
PLURALS = {"Node": ("", "nodes"), "ResourceSlice": ("resource.k8s.io", "resourceslices"),
           "DeviceClass": ("resource.k8s.io", "deviceclasses"), "Namespace": ("", "namespaces"),
           "Deployment": ("apps", "deployments"), "ClusterQueue": (KUEUE.group, KUEUE.plural),
           "Queue": (VOLCANO.group, VOLCANO.plural)}
VOLCANO_QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "research"},
                 "spec": {"reclaimable": True, "capability": {"cpu": "64", "nvidia.com/gpu": "8"},
                          "deserved": {"nvidia.com/gpu": "4"}, "guarantee": {"resource": {"nvidia.com/gpu": "2"}}}}
MIG_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inference"},
             "spec": {"namespaceSelector": {}, "resourceGroups": [{
                 "coveredResources": ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"],
                 "flavors": [{"name": "a100-mig", "resources": [
                     {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "14"},
                     {"name": "nvidia.com/mig-3g.40gb", "nominalQuota": "4"}]}]}]}}


def create(api: Client, obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    status = obj.pop("status", None)
    group, plural = PLURALS[obj["kind"]]
    path = collection_path(group, obj["apiVersion"].rpartition("/")[2], plural, obj["metadata"].get("namespace"))
    created = send(api, "POST", path, obj, query=[("fieldManager", "helm")])
    if status is not None:
        created["status"] = status
        send(api, "PUT", f"{path}/{obj['metadata']['name']}/status", created)
    return created


def kubectl_gpu(double: K8sDouble, *args: str, expect: int = 0) -> str:
    result = CliRunner().invoke(main, list(args), env=double.kubectl_env(), catch_exceptions=False)
    assert result.exit_code == expect, f"kubectl gpu {' '.join(args)}: {result.output}"
    return result.output


@pytest.fixture
def double():
    with K8sDouble(controllers=True, extra_kinds=[KUEUE, VOLCANO]) as api:
        client = Client(api.api_client().configuration)
        for obj in (node("legacy-1", gpus=8), node("dra-1", dra=True), resource_slice("dra-1", gpus=8), device_class(),
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
                    VOLCANO_QUEUE, MIG_QUEUE, workload("Deployment", "train", "team", template("train"), replicas=1)):
            create(client, obj)
        yield api


def queue(double: K8sDouble, kind: ResourceKind, name: str) -> dict:
    [found] = [q for q in double.list(kind.plural, None) if q["metadata"]["name"] == name]
    return found


def test_a_server_dry_run_changes_no_queue_but_says_what_it_would(double):
    output = kubectl_gpu(double, "migrate", "--from-cluster", "-A", "--kueue")
    assert "Queue/research: would add capability: deviceclass/gpu.nvidia.com: 8" in output
    assert "ClusterQueue/inference: would add mig.nvidia.com/devices: 18" in output
    assert "deviceClassMappings" in output and "restart kueue-controller-manager" in output
    assert queue(double, VOLCANO, "research")["spec"] == VOLCANO_QUEUE["spec"]
    assert queue(double, KUEUE, "inference")["spec"] == MIG_QUEUE["spec"]


def test_queues_are_capped_before_the_workloads_move_and_rolled_back_exactly(double):
    double.reset_requests()
    output = kubectl_gpu(double, "migrate", "--from-cluster", "-A", "--kueue", "--apply", "--timeout", "30s")
    assert "Queue/research: added capability: deviceclass/gpu.nvidia.com: 8, deserved: deviceclass/gpu.nvidia.com: 4" in output
    writes = [r.resource for r in double.requests if r.verb in ("patch", "update", "create") and not r.dry_run]
    assert writes.index("queues") < writes.index("deployments")
    assert writes.index("clusterqueues") < writes.index("deployments")
    volcano = queue(double, VOLCANO, "research")
    assert volcano["spec"]["capability"] == {"cpu": "64", "nvidia.com/gpu": "8", "deviceclass/gpu.nvidia.com": "8"}
    assert volcano["spec"]["deserved"] == {"nvidia.com/gpu": "4", "deviceclass/gpu.nvidia.com": "4"}
    assert volcano["spec"]["guarantee"] == {"resource": {"nvidia.com/gpu": "2", "deviceclass/gpu.nvidia.com": "2"}}
    [group] = queue(double, KUEUE, "inference")["spec"]["resourceGroups"]
    assert group["coveredResources"][-1] == "mig.nvidia.com/devices"
    assert group["flavors"][0]["resources"][-1] == {"name": "mig.nvidia.com/devices", "nominalQuota": "18"}

    again = kubectl_gpu(double, "migrate", "--from-cluster", "-A", "--kueue", "--apply", "--timeout", "30s")
    assert "Queue/research: unchanged" in again  # idempotent

    rolled = kubectl_gpu(double, "rollback", "-A", "--apply", "--timeout", "30s")
    assert "Queue/research: removed" in rolled and "ClusterQueue/inference: removed" in rolled
    after = queue(double, VOLCANO, "research")
    assert after["spec"] == VOLCANO_QUEUE["spec"]
    assert "kubectl-gpu.io/quota-entries" not in (after["metadata"].get("annotations") or {})
    assert queue(double, KUEUE, "inference")["spec"] == MIG_QUEUE["spec"]


def test_without_kueue_a_cluster_queue_covering_gpus_is_named_not_changed(double):
    output = kubectl_gpu(double, "migrate", "--from-cluster", "-A", "--apply", "--timeout", "30s")
    assert "ClusterQueue/inference" in output and "--kueue" in output
    assert queue(double, KUEUE, "inference")["spec"] == MIG_QUEUE["spec"]
