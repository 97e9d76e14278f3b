"""`--target-driver` on migrate and plan: the claims are for NVIDIA's driver by default, for HAMi's when
asked, and with `auto` for HAMi's exactly where the cluster publishes its slices or DeviceClass."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.dra import facts, hami
from tests.fleet_cluster import container, device_class, node, owned_by, pod, resource_slice, template, workload
from tests.test_core_hami_target import HAMI_CLASS
from tests.test_dra_hami import GIB, hami_device, slice_of

SHARE = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 25}


def manifest(tmp_path) -> str:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": {"containers": [{"name": "infer", "image": "x", "resources": {"limits": SHARE}}]}}}}
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(deployment))
    return str(path)


def hami_node_objects() -> list[dict]:
    published = slice_of(hami.HAMI_DRIVER, [hami_device(i, f"GPU-{i}", "NVIDIA A100-SXM4-80GB", 80 * GIB)
                                            for i in range(2)])
    published["spec"]["nodeName"] = published["spec"]["pool"]["name"] = "dra-1"
    return [HAMI_CLASS, published]


def write(tmp_path, name: str, objects: list[dict]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def migrate(*args: str):
    return CliRunner().invoke(main, ["migrate", *args])


def claim_classes(output: str) -> set[str]:
    return {d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
            for d in yaml.safe_load_all(output) if d and d.get("kind") == "ResourceClaimTemplate"}


def test_migrate_writes_hami_claims_with_the_enforcement_in_the_report(tmp_path):
    result = migrate(manifest(tmp_path), "--target-driver", "hami")
    assert result.exit_code == 0, result.output
    assert claim_classes(result.stdout) == {hami.HAMI_DEVICE_CLASS}
    assert "container 'infer'" in result.stderr and "HAMi-core enforces memory limit 4Gi, compute limit 25%" in result.stderr


def test_migrate_is_nvidias_by_default_and_the_same_as_asking_for_it(tmp_path):
    default = migrate(manifest(tmp_path))
    assert claim_classes(default.stdout) == {facts.GPU_DEVICE_CLASS}
    asked = migrate(manifest(tmp_path), "--target-driver", "nvidia")
    assert (asked.exit_code, asked.stdout, asked.stderr) == (default.exit_code, default.stdout, default.stderr)


def test_migrate_auto_follows_the_cluster(tmp_path):
    hami_cluster = write(tmp_path, "hami.yaml", hami_node_objects())
    nvidia_cluster = write(tmp_path, "nvidia.yaml", [resource_slice("dra-1"), device_class()])
    on_hami = migrate(manifest(tmp_path), "--target-driver", "auto", "--cluster", hami_cluster)
    assert on_hami.exit_code == 0, on_hami.output
    assert claim_classes(on_hami.stdout) == {hami.HAMI_DEVICE_CLASS}
    assert "--target-driver auto: claims are for HAMi's DRA driver" in on_hami.stderr
    on_nvidia = migrate(manifest(tmp_path), "--target-driver", "auto", "--cluster", nvidia_cluster)
    assert claim_classes(on_nvidia.stdout) == {facts.GPU_DEVICE_CLASS}


def test_an_unknown_target_driver_is_a_usage_error_naming_the_choices(tmp_path):
    result = migrate(manifest(tmp_path), "--target-driver", "amd")
    assert result.exit_code == 2
    assert "'nvidia', 'hami', 'auto'" in result.output


def test_plan_places_hami_shares_on_hamis_gpus(tmp_path):
    tmpl = template("train", container("1024", resource="nvidia.com/gpumem"))
    train = workload("Deployment", "train", "team", tmpl, replicas=2)
    files = write(tmp_path, "cluster.yaml", [
        node("dra-1", dra=True, gpus=2), *hami_node_objects(), node("legacy-1"), train,
        *(owned_by(pod(f"train-{i}", "team", tmpl, "legacy-1"), train) for i in range(2))])
    result = CliRunner().invoke(main, ["plan", "-f", files, "--target-driver", "auto", "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert any(line.startswith("--target-driver auto: claims are for HAMi's") for line in document["cluster"])
    assert "kgpu-hami-1-cores0-memory1gi" in result.stdout


def test_a_namespace_cap_on_gpus_counts_claims_of_hamis_class(tmp_path):
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "ml"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}}
    path = tmp_path / "quota.yaml"
    path.write_text(yaml.safe_dump(quota))
    result = migrate(str(path), manifest(tmp_path), "--target-driver", "hami")
    assert result.exit_code == 0, result.output
    (migrated,) = [d for d in yaml.safe_load_all(result.stdout) if d and d["kind"] == "ResourceQuota"]
    assert migrated["spec"]["hard"][f"{hami.HAMI_DEVICE_CLASS}.deviceclass.resource.k8s.io/devices"] == "4"


def test_plan_predicts_hamis_gpus_on_nodes_not_yet_on_dra(tmp_path):
    """Before any node runs HAMi's driver, the nodes a wave switches are predicted from their GPU Feature
    Discovery labels as HAMi's driver publishes GPUs: shareable hami-gpus, so two 1Gi shares take one GPU."""
    from kubectl_gpu.fleet.capacity import predict_devices
    from kubectl_gpu.core import TargetDriver
    from tests.fleet_cluster import GFD

    predicted = predict_devices("legacy-0", GFD, {}, target=TargetDriver.HAMI)
    assert {d.driver for d in predicted} == {hami.HAMI_DRIVER}
    assert [d.name for d in predicted] == [hami.device_name(i) for i in range(len(predicted))]
    assert all(d.allow_multiple_allocations and d.attribute("type") == hami.HAMI_GPU_TYPE for d in predicted)

    tmpl = template("train", container("1024", resource="nvidia.com/gpumem"))
    train = workload("Deployment", "train", "team", tmpl, replicas=2)
    files = write(tmp_path, "cluster.yaml", [
        HAMI_CLASS, node("legacy-0"), node("legacy-1"), train,
        *(owned_by(pod(f"train-{i}", "team", tmpl, "legacy-1"), train) for i in range(2))])
    result = CliRunner().invoke(main, ["plan", "-f", files, "--target-driver", "hami",
                                       "--feature-gates", "DRAConsumableCapacity=true", "-o", "json"])
    assert result.exit_code == 0, result.output
    (first, *_) = json.loads(result.stdout)["waves"]
    assert first["workloads"] == ["Deployment/team/train"]
    assert (first["dra"]["devices"], first["dra"]["devicesUsed"]) == (4, 1)  # both pods' shares on one GPU
    assert "kgpu-hami-1-cores0-memory1gi" in result.stdout
