"""`kubectl gpu plan` lists the ResourceQuota changes each wave's namespaces need, and refuses a wave
after which a namespace's GPU cap could no longer count what its pods use."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests.fleet_cluster import device_class, node, owned_by, pod, resource_slice, template, workload

DEVICES = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def cluster(tmp_path, hard: dict) -> str:
    train = workload("Deployment", "train", "team", template("train"), replicas=2)
    objects = [node("dra-1", dra=True, gpus=8), resource_slice("dra-1", gpus=8), device_class(), node("legacy-1"),
               train, *(owned_by(pod(f"train-{i}", "team", template("train"), "legacy-1"), train) for i in range(2)),
               {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "team"},
                "spec": {"hard": hard}}]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def plan(*args: str):
    return CliRunner().invoke(main, ["plan", *args])


def test_the_wave_that_moves_a_namespace_lists_its_quota_change(tmp_path):
    result = plan("-f", cluster(tmp_path, {"requests.nvidia.com/gpu": "4"}))
    assert result.exit_code == 0, result.output
    assert f"  quota:   ResourceQuota team/gpus: add {DEVICES}: 4" in result.stdout
    waves = json.loads(plan("-f", cluster(tmp_path, {"requests.nvidia.com/gpu": "4"}), "-o", "json").stdout)["waves"]
    assert waves[0]["workloads"] == ["Deployment/team/train"]
    assert waves[0]["quotas"] == [f"ResourceQuota team/gpus: add {DEVICES}: 4"]
    assert all("quotas" not in w for w in waves[1:])


def test_a_wave_that_would_leave_a_cap_behind_is_refused_unless_allowed(tmp_path):
    files = cluster(tmp_path, {"requests.nvidia.com/gpu": "4", "requests.nvidia.com/gpumem": "40000"})
    refused = plan("-f", files)
    assert refused.exit_code == 1
    assert ("refused: namespace team: ResourceQuota gpus caps requests.nvidia.com/gpumem, which no DRA quota entry "
            "can count") in refused.stdout
    assert "--allow-uncapped" in refused.stdout
    allowed = plan("-f", files, "--allow-uncapped")
    assert allowed.exit_code == 0, allowed.output
    assert f"ResourceQuota team/gpus: add {DEVICES}: 4" in allowed.stdout
