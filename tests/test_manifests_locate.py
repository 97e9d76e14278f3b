"""Finding pod templates by shape, and GPU specs migrate must warn about instead of rewriting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_gpu.manifests.locate import find_pod_sites, find_unrewritable

CONTAINERS = {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}


def test_every_template_of_a_custom_resource_is_found() -> None:
    ray = {"kind": "RayCluster", "spec": {
        "headGroupSpec": {"template": {"spec": CONTAINERS}},
        "workerGroupSpecs": [{"template": {"metadata": {}, "spec": CONTAINERS}},
                             {"template": {"spec": CONTAINERS}}]}}
    assert [s.pointer for s in find_pod_sites(ray)] == [
        "/spec/headGroupSpec/template", "/spec/workerGroupSpecs/0/template", "/spec/workerGroupSpecs/1/template"]


def test_a_pod_is_a_template_at_the_root_and_inline_pod_specs_are_marked() -> None:
    assert [(s.pointer, s.inline) for s in find_pod_sites({"kind": "Pod", "spec": CONTAINERS})] == [("", False)]
    kserve = {"spec": {"predictor": CONTAINERS}}
    [site] = find_pod_sites(kserve)
    assert (site.pointer, site.spec_pointer, site.inline) == ("/spec/predictor", "/spec/predictor", True)


def test_argo_container_sets_are_not_pod_specs_and_their_gpus_are_reported() -> None:
    workflow = {"spec": {"templates": [{"name": "t", "containerSet": CONTAINERS}]}}
    assert find_pod_sites(workflow) == []
    [finding] = find_unrewritable(workflow, [])
    assert finding.pointer == "/spec/templates/0/containerSet/containers/0/resources"
    assert "outside any pod template" in finding.message


def test_gpu_requests_inside_strings_are_reported_once_with_where_they_are() -> None:
    manifest = "resources:\n  limits:\n    nvidia.com/gpu: {{inputs.gpus}}\n"
    obj = {"spec": {"steps": [{"manifest": manifest}, {"manifest": manifest}]}}
    [finding] = find_unrewritable(obj, [])
    assert finding.pointer == "/spec/steps/0/manifest" and "inside a string value" in finding.message


def test_one_finding_names_every_place_it_was_seen() -> None:
    """Three NIMPipeline services each asking for a GPU are three places to fix, not one."""
    service = {"name": "s", "spec": {"image": {"repository": "nvcr.io/nim/x"},
                                     "resources": {"limits": {"nvidia.com/gpu": 1}}}}
    pipeline = {"kind": "NIMPipeline", "spec": {"services": [service, service, service]}}
    [finding] = find_unrewritable(pipeline, [])
    assert finding.pointers == tuple(f"/spec/services/{i}/spec/resources" for i in range(3))
    assert finding.where == "/spec/services/0/spec/resources, /spec/services/1/spec/resources, " \
                            "/spec/services/2/spec/resources"
    many = {"kind": "NIMPipeline", "spec": {"services": [service] * 5}}
    [finding] = find_unrewritable(many, [])
    assert finding.where.endswith(" and 2 more: /spec/services/3/spec/resources, /spec/services/4/spec/resources")
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    # Through migrate, a custom resource of the same shape it has no mapping for (NIM's are migrated).
    report = CliRunner().invoke(main, ["migrate", "-"], input=json.dumps(
        {"apiVersion": "serving.example.com/v1", "metadata": {"name": "p"}, **pipeline, "kind": "ModelPipeline"})).stderr
    assert all(f"/spec/services/{i}/spec/resources" in report for i in range(3)), report


def test_things_that_merely_mention_gpus_are_not_reported() -> None:
    pod = {"kind": "Pod",
           "metadata": {"annotations": {
               "kubectl.kubernetes.io/last-applied-configuration": json.dumps({"nvidia.com/gpu": 1}),
               "kubectl-gpu.io/original-resources": json.dumps({"limits": {"nvidia.com/gpu": "1"}})}},
           "spec": {**CONTAINERS,
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "nodeSelector": {"nvidia.com/gpu.product": "A100"}}}
    embedded_zero = {"spec": {"manifest": "limits:\n  nvidia.com/gpu: 0\n"}}
    assert find_unrewritable(pod, find_pod_sites(pod)) == []
    assert find_unrewritable(embedded_zero, []) == []


def test_quotas_and_accelerator_types_naming_a_legacy_resource_are_reported() -> None:
    queue = {"kind": "ClusterQueue", "spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"]}]}}
    [finding] = find_unrewritable(queue, [])
    assert finding.pointer == "/spec/resourceGroups/0/coveredResources/1"
    assert "DRA device class" in finding.message


def test_a_device_classes_extended_resource_name_serves_the_legacy_name_on_purpose() -> None:
    """KEP-5004 (kubernetes/enhancements keps/sig-scheduling/5004-dra-extended-resource; DeviceClassSpec
    .extendedResourceName, resource.k8s.io/v1): the scheduler gives a pod that still requests
    `nvidia.com/mig-1g.12gb` a device of this class.  The name is the point of the field, so it is no
    stale setting to re-point (the driver's demo/specs/extended-resources/mig-1g-12gb.yaml, and what
    `migrate --device-classes` writes).  Another object naming it still is one."""
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                    "metadata": {"name": "mig-1g-12gb.gpu.nvidia.com"},
                    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
                             "extendedResourceName": "nvidia.com/mig-1g.12gb"}}
    assert find_unrewritable(device_class, []) == []
    elsewhere = {"kind": "ConfigMap", "data": {"extendedResourceName": "nvidia.com/mig-1g.12gb"}}
    assert "refers to the legacy resource" in find_unrewritable(elsewhere, [])[0].message
    demo = Path(__file__).parent / "data" / "manifests" / "claims" / "mig-1g-12gb-extended-resource.yaml"
    result = CliRunner().invoke(main, ["migrate", str(demo)])
    assert result.exit_code == 0, result.stderr
    assert "refers to the legacy resource" not in result.stderr


def test_mpijob_v1alpha1_gpu_count_is_reported() -> None:
    job = {"apiVersion": "kubeflow.org/v1alpha1", "kind": "MPIJob", "spec": {"gpus": 16}}
    [finding] = find_unrewritable(job, [])
    assert finding.pointer == "/spec/gpus" and "v2beta1" in finding.message


@pytest.mark.parametrize("resource", [
    "nvidia.com/gpu", "alpha.kubernetes.io/nvidia-gpu", "tencent.com/vcuda-core", "nvidia.com/vcuda-memory",
    "nvidia.com/gpumem", "aliyun.com/gpu-mem", "nvidia.com/vgpu-number", "google.com/tpu", "nvidia.com/mig-1g.10gb",
])
def test_every_legacy_family_is_recognised_inside_strings_and_outside_pod_templates(resource: str) -> None:
    embedded = {"spec": {"manifest": f"limits:\n  {resource}: 2\n"}}
    setting = {"spec": {"quota": {"resource": resource}}}
    container_set = {"spec": {"containerSet": {"containers": [
        {"name": "c", "image": "x", "resources": {"limits": {resource: 2}}}]}}}
    assert "inside a string value" in find_unrewritable(embedded, [])[0].message
    assert "refers to the legacy resource" in find_unrewritable(setting, [])[0].message
    assert "outside any pod template" in find_unrewritable(container_set, [])[0].message


@pytest.mark.parametrize("zero", ["0", "0.0", "0Gi", "0m", 0])
def test_zero_written_any_way_the_api_server_accepts_asks_for_nothing(zero: str | int) -> None:
    container_set = {"spec": {"containerSet": {"containers": [
        {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": zero}}}]}}}
    embedded = {"spec": {"manifest": f'{{"limits": {{"nvidia.com/gpu": "{zero}"}}}}'}}
    assert find_unrewritable(container_set, []) == []
    assert find_unrewritable(embedded, []) == []
