"""A tenant's GPU cap holds through the move to DRA, end to end against the API double (which enforces
ResourceQuota as kube-apiserver does, tests/k8sdouble/quota.py).

Namespace `team` is capped at `requests.nvidia.com/gpu: "4"` and runs a Deployment of eight 1-GPU
replicas: the fifth replica is refused before the move and after `migrate --from-cluster --apply`,
which adds `gpu.nvidia.com.deviceclass.resource.k8s.io/devices: "4"` before it rewrites the
Deployment; `rollback --apply` takes that entry away again.
"""
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

DEVICES = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "team"},
         "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}}
PLURALS = {"Node": ("", "nodes"), "ResourceSlice": ("resource.k8s.io", "resourceslices"),
           "DeviceClass": ("resource.k8s.io", "deviceclasses"), "Namespace": ("", "namespaces"),
           "ResourceQuota": ("", "resourcequotas"), "Deployment": ("apps", "deployments")}


def create(api: Client, obj: dict) -> None:
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("uid", None)
    status = obj.pop("status", None)
    group, plural = PLURALS[obj["kind"]]
    namespace = obj["metadata"].get("namespace")
    path = collection_path(group, obj["apiVersion"].rpartition("/")[2], plural, namespace)
    created = send(api, "POST", path, obj, query=[("fieldManager", "helm")])
    if status is not None:
        created["status"] = status
        send(api, "PUT", f"{path}/{obj['metadata']['name']}/status", created)


def refusals(double: K8sDouble, reason: str) -> list[str]:
    return [e["message"] for e in double.list("events", "team") if e["reason"] == reason]


def kubectl_gpu(double: K8sDouble, *args: str, expect: int = 0) -> str:
    result = CliRunner().invoke(main, list(args), env=double.kubectl_env(), catch_exceptions=False)
    assert result.exit_code == expect, f"kubectl gpu {' '.join(args)}: {result.output}"
    return result.output


@pytest.fixture
def double():
    with K8sDouble(controllers=True) as api:
        client = Client(api.api_client().configuration)
        for obj in (node("legacy-1", gpus=8), node("dra-1", dra=True), resource_slice("dra-1", gpus=8),
                    device_class(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}, QUOTA,
                    workload("Deployment", "train", "team", template("train"), replicas=8)):
            create(client, obj)
        yield api


def running(double: K8sDouble) -> list[dict]:
    return [p for p in double.list("pods", "team") if p["status"].get("phase") == "Running"]


def test_the_fifth_replica_is_refused_before_and_after_the_move(double):
    assert len(running(double)) == 4
    [before] = refusals(double, "FailedCreate")
    assert "exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, " \
           "limited: requests.nvidia.com/gpu=4" in before

    double.reset_requests()
    output = kubectl_gpu(double, "migrate", "--from-cluster", "--apply", "-n", "team", "--timeout", "1ms", expect=3)
    assert f"ResourceQuota/team/gpus: added {DEVICES}: 4" in output
    writes = [r.resource for r in double.requests if r.verb in ("patch", "update") and not r.dry_run]
    assert writes.index("resourcequotas") < writes.index("deployments")
    assert "did not become ready" in output  # four of eight, as before
    hard = double.get("resourcequotas", "gpus", "team")["spec"]["hard"]
    assert hard == {"requests.nvidia.com/gpu": "4", DEVICES: "4"}

    pods = double.list("pods", "team")
    assert all(p["spec"].get("resourceClaims") for p in pods) and len(pods) == 8
    assert len(running(double)) == 4 and len(double.list("resourceclaims", "team")) == 4
    after = refusals(double, "FailedResourceClaimCreation")  # one for each of the four Pending pods
    assert len(after) == 4
    assert all(f"exceeded quota: gpus, requested: {DEVICES}=1, used: {DEVICES}=4, limited: {DEVICES}=4" in m
               for m in after)
    assert double.get("resourcequotas", "gpus", "team")["status"]["used"] == {
        "requests.nvidia.com/gpu": "0", DEVICES: "4"}


def test_a_server_dry_run_changes_no_quota(double):
    output = kubectl_gpu(double, "migrate", "--from-cluster", "-n", "team")
    assert f"ResourceQuota/team/gpus: would add {DEVICES}: 4" in output
    assert DEVICES not in double.get("resourcequotas", "gpus", "team")["spec"]["hard"]


def test_rollback_takes_the_added_entry_away(double):
    kubectl_gpu(double, "migrate", "--from-cluster", "--apply", "-n", "team", "--timeout", "1ms", expect=3)
    # The tenant fits its workload to its cap, so rollouts can finish.
    send(Client(double.api_client().configuration), "PATCH", "/apis/apps/v1/namespaces/team/deployments/train",
         {"spec": {"replicas": 4}}, content_type="application/merge-patch+json", query=[("fieldManager", "kubectl")])
    output = kubectl_gpu(double, "rollback", "--apply", "-n", "team", "--timeout", "5s")
    assert f"ResourceQuota/team/gpus: removed {DEVICES}" in output
    quota = double.get("resourcequotas", "gpus", "team")
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "4"}
    assert "kubectl-gpu.io/quota-entries" not in (quota["metadata"].get("annotations") or {})
    assert len(running(double)) == 4 and not any(p["spec"].get("resourceClaims") for p in running(double))
