"""Ray groups keep their GPU count when migrate turns the Ray container's GPU limit into a claim.

KubeRay writes `ray start --num-gpus` from `rayStartParams["num-gpus"]`, else from the first limit of the
Ray container (containers[0]), in sorted key order, whose name ends in `gpu` or names a MIG profile,
non-zero (ray-project/kuberay ray-operator/controllers/ray/common/pod.go @ b2f504f2aea6f49277b3d80d2fa0d9f9a8cc064f,
addWellKnownAcceleratorResources, isGPUResourceKey; the value is strconv.FormatInt: a string). The Ray
autoscaler reads a group's GPUs the same way: `rayStartParams["num-gpus"]`, else a containers[0] limit or
request whose name ends in `gpu`, rounded up (ray-project/ray python/ray/autoscaler/_private/kuberay/
autoscaling_config.py @ 0219fc3ead0a2a4144f30e791e08d883b68b4f09, _get_num_gpus). Without the limit and
without num-gpus an autoscaling group looks GPU-less and GPU demand never scales it up.
"""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main


def group(limits, ray_start_params=..., sidecar_limits=None, name=None):
    containers = [{"name": "ray-worker", "image": "rayproject/ray:2.9.0-gpu",
                   "resources": {"limits": {"cpu": "4", **limits}}}]
    if sidecar_limits is not None:
        containers.append({"name": "sidecar", "image": "busybox", "resources": {"limits": sidecar_limits}})
    spec = {"template": {"spec": {"containers": containers}}}
    if name is not None:
        spec = {"groupName": name, "replicas": 1, "minReplicas": 0, "maxReplicas": 4, **spec}
    if ray_start_params is not ...:
        spec["rayStartParams"] = ray_start_params
    return spec


def cluster_spec(worker):
    return {"enableInTreeAutoscaling": True,
            "headGroupSpec": group({}, {"dashboard-host": "0.0.0.0"}),
            "workerGroupSpecs": [worker]}


def ray_object(kind, worker):
    spec = {"RayCluster": lambda s: s, "RayService": lambda s: {"rayClusterConfig": s},
            "RayJob": lambda s: {"entrypoint": "python train.py", "rayClusterSpec": s}}[kind](cluster_spec(worker))
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": "r"}, "spec": spec}


def migrate(obj, *args):
    result = CliRunner().invoke(main, ["migrate", *args, "-"], input=yaml.safe_dump(obj))
    assert result.exit_code == 0, result.output
    (migrated,) = [d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == obj["kind"]]
    return migrated, result


def cluster_of(obj):
    spec = obj["spec"]
    return spec.get("rayClusterConfig") or spec.get("rayClusterSpec") or spec


@pytest.mark.parametrize("kind", ["RayCluster", "RayService", "RayJob"])
def test_a_worker_groups_gpu_limit_becomes_num_gpus_as_a_string(kind):
    migrated, result = migrate(ray_object(kind, group({"nvidia.com/gpu": 2}, {}, name="gpu-group")))
    worker = cluster_of(migrated)["workerGroupSpecs"][0]
    assert worker["rayStartParams"] == {"num-gpus": "2"}
    assert "nvidia.com/gpu" not in worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert "num-gpus" in result.stderr and "gpu-group" in result.stderr
    # The head asked for no GPU: its params are as written.
    assert cluster_of(migrated)["headGroupSpec"]["rayStartParams"] == {"dashboard-host": "0.0.0.0"}


def test_the_head_group_gets_num_gpus_too_and_missing_params_are_created():
    obj = ray_object("RayCluster", group({}, {}, name="cpu"))
    obj["spec"]["headGroupSpec"] = group({"nvidia.com/gpu": 1})
    migrated, _ = migrate(obj)
    assert migrated["spec"]["headGroupSpec"]["rayStartParams"] == {"num-gpus": "1"}


def test_a_num_gpus_the_group_sets_is_kept():
    migrated, result = migrate(ray_object("RayCluster", group({"nvidia.com/gpu": 2}, {"num-gpus": "1"}, name="g")))
    assert cluster_of(migrated)["workerGroupSpecs"][0]["rayStartParams"] == {"num-gpus": "1"}
    assert "num-gpus" not in result.stderr


def test_a_mig_limit_counts_as_kuberay_counts_it():
    migrated, _ = migrate(ray_object("RayCluster", group({"nvidia.com/mig-1g.10gb": 1}, {}, name="mig")))
    assert cluster_of(migrated)["workerGroupSpecs"][0]["rayStartParams"] == {"num-gpus": "1"}


def test_a_gpu_on_another_container_than_the_ray_container_is_not_rays():
    migrated, _ = migrate(ray_object("RayCluster", group({}, {}, sidecar_limits={"nvidia.com/gpu": 1}, name="g")))
    assert cluster_of(migrated)["workerGroupSpecs"][0]["rayStartParams"] == {}


def test_a_limit_left_as_is_needs_no_num_gpus():
    migrated, _ = migrate(ray_object("RayCluster", group({"nvidia.com/gpu": 2}, {}, name="g")),
                          "--integer-gpus", "extended-resource")
    assert cluster_of(migrated)["workerGroupSpecs"][0]["rayStartParams"] == {}


def test_migrating_the_output_again_changes_nothing():
    migrated, _ = migrate(ray_object("RayJob", group({"nvidia.com/gpu": 4}, {}, name="g")))
    again = CliRunner().invoke(main, ["migrate", "--check", "-"], input=yaml.safe_dump(migrated))
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("api_version", ["v1", "v1beta2", "v1beta1"])
def test_a_migrated_ray_groups_pod_and_claims_are_strictly_valid_for_1_32_to_1_37(api_version):
    from tests.strict_validation import RELEASES, assert_strictly_valid, pod_of

    obj = ray_object("RayCluster", group({"nvidia.com/gpu": 2}, {}, name="g"))
    migrated_obj, result = migrate(obj, "--api-version", api_version)
    for claim in (d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == "ResourceClaimTemplate"):
        assert_strictly_valid(claim, RELEASES[api_version])
    assert_strictly_valid(pod_of(migrated_obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]))
