"""A ResourceQuota's GPU caps follow the migration: for each legacy family with a cap, the DRA entry
that caps the same devices on the target cluster (1.34, 1.35, 1.36 with its defaults, 1.36 with
DRAExtendedResource off), and a WARNING where no entry can."""
from __future__ import annotations

import copy

import jsonpatch
import kubernetes_validate
import pytest

from kubectl_gpu.dra.gates import EXTENDED_RESOURCE
from kubectl_gpu.cluster.device_classes import mig_device_classes
from kubectl_gpu.cluster.profile import build_profile
from kubectl_gpu.cluster.quota import quota_target
from kubectl_gpu.core import (IntegerGpuMode, QuotaTarget, Severity, Sharing, TranslateOptions, devices_entry,
                              plan_quota)
from kubectl_gpu.core.families import LEGACY_RESOURCE_NAMES
from kubectl_gpu.core.quota import SHARE_RESOURCES

GPU_DEVICES = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
MIG_DEVICES = "mig.nvidia.com.deviceclass.resource.k8s.io/devices"
# The driver's GPU class on resource.k8s.io/v1 (deployments/helm/dra-driver-nvidia-gpu/templates/
# deviceclass-gpu.yaml): extendedResourceName nvidia.com/gpu.
GPU_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
                      "extendedResourceName": "nvidia.com/gpu"}}
CLUSTERS = {
    "1.34": dict(kubernetes_minor=34),
    "1.35": dict(kubernetes_minor=35),
    "1.36": dict(kubernetes_minor=36),
    "1.36 DRAExtendedResource off": dict(kubernetes_minor=36, gate_overrides={EXTENDED_RESOURCE: False}),
}


def target(cluster: str) -> QuotaTarget:
    return quota_target(build_profile(f"test {cluster}", objects=[GPU_CLASS], served_versions=["v1"],
                                      **CLUSTERS[cluster]))


def quota(hard: dict, name: str = "gpus", namespace: str = "team-a") -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": hard}}


def added(plan) -> dict[str, str]:
    return {e.key: e.value for e in plan.entries}


def warnings(plan) -> list[str]:
    return [n.message for n in plan.notes if n.severity is Severity.WARNING]


def test_only_1_36_with_its_defaults_counts_claims_under_the_classes_extended_resource():
    assert [target(c).counted_as("gpu.nvidia.com") for c in CLUSTERS] == [None, None, "nvidia.com/gpu", None]


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/gpu.shared", "alpha.kubernetes.io/nvidia-gpu",
                                      "nvidia.com/vgpu-number", "volcano.sh/vgpu-number", "aliyun.com/gpu-count"])
def test_a_cap_on_a_number_of_gpus_becomes_the_gpu_class_device_count(cluster, resource):
    plan = plan_quota(quota({f"requests.{resource}": "4", "requests.cpu": "16"}), target=target(cluster))
    assert added(plan) == {GPU_DEVICES: "4"}
    assert plan.entries[0].carries == (f"requests.{resource}",)
    assert plan.uncapped == () and warnings(plan) == [] and plan.caps_gpus


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_on_1_36_requests_nvidia_com_gpu_also_counts_the_claims_and_says_so(cluster):
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "4"}), target=target(cluster))
    says_so = [n for n in plan.notes if "also counts claims of DeviceClass gpu.nvidia.com" in n.message]
    assert bool(says_so) is (cluster == "1.36")
    # The device count is added everywhere: it holds whatever the gate and the class become.
    assert added(plan) == {GPU_DEVICES: "4"}


def test_caps_of_one_device_class_add_up_in_one_entry():
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "4", "requests.aliyun.com/gpu-count": "2"}))
    assert added(plan) == {GPU_DEVICES: "6"}
    assert plan.entries[0].carries == ("requests.nvidia.com/gpu", "requests.aliyun.com/gpu-count")


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_mig_caps_become_the_mig_class_total_with_a_warning_per_profile(cluster):
    plan = plan_quota(quota({"requests.nvidia.com/mig-1g.10gb": "4", "requests.nvidia.com/mig-3g.40gb": "1"}),
                      target=target(cluster))
    assert added(plan) == {MIG_DEVICES: "5"}
    assert len(warnings(plan)) == 2
    assert "ResourceQuota team-a/gpus: requests.nvidia.com/mig-1g.10gb: 4 caps MIG profile 1g.10gb alone" \
        in warnings(plan)[0]
    assert "--device-classes" in warnings(plan)[0]


def test_mig_left_to_the_per_profile_classes_keeps_its_own_cap():
    # migrate --device-classes on a cluster serving extended resources leaves nvidia.com/mig-* in the pods:
    # the scheduler serves them from the per-profile class, and the pod evaluator still counts them.
    classes = mig_device_classes(["nvidia.com/mig-1g.10gb"])
    profile = build_profile("1.36", objects=[GPU_CLASS, *classes], served_versions=["v1"], kubernetes_minor=36)
    options = TranslateOptions(dra_extended_resources=frozenset({"nvidia.com/mig-1g.10gb"}))
    plan = plan_quota(quota({"requests.nvidia.com/mig-1g.10gb": "4"}), options, quota_target(profile, classes))
    assert added(plan) == {} and warnings(plan) == []
    assert "keeps its cap: pods keep nvidia.com/mig-1g.10gb" in plan.notes[0].message


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("resource,role", [("tencent.com/vcuda-core", "cores"), ("tencent.com/vcuda-memory", "memory"),
                                           ("nvidia.com/gpumem", "memory"), ("nvidia.com/gpucores", "cores"),
                                           ("aliyun.com/gpu-mem", "memory"), ("nvidia.com/vgpu-memory", "memory"),
                                           ("volcano.sh/vgpu-cores", "cores")])
def test_memory_and_cores_of_shared_gpus_cannot_follow_and_say_what_to_do(cluster, resource, role):
    plan = plan_quota(quota({f"requests.{resource}": "400"}), target=target(cluster))
    assert added(plan) == {}
    assert plan.uncapped == (f"requests.{resource}",)
    [warning] = warnings(plan)
    assert warning.startswith(f"ResourceQuota team-a/gpus: requests.{resource}: 400 caps the {role} of shared GPUs")
    assert f"set {GPU_DEVICES} to the number of GPUs" in warning


def test_hami_count_follows_while_its_memory_cap_is_reported():
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "2", "requests.nvidia.com/gpumem": "20000"}))
    assert added(plan) == {GPU_DEVICES: "2"}
    assert plan.uncapped == ("requests.nvidia.com/gpumem",)


def test_tpus_follow_to_the_tpu_class():
    assert added(plan_quota(quota({"requests.google.com/tpu": "8"}))) == {
        "tpu.google.com.deviceclass.resource.k8s.io/devices": "8"}


@pytest.mark.parametrize("key", ["nvidia.com/gpu", "limits.nvidia.com/gpu"])
def test_bare_and_limits_entries_capped_nothing_and_get_no_dra_entry(key):
    plan = plan_quota(quota({key: "4"}))
    assert added(plan) == {} and not plan.caps_gpus
    [warning] = warnings(plan)
    assert f"{key}: 4 caps nothing: Kubernetes counts extended resources only as requests.nvidia.com/gpu" in warning


def test_pods_that_keep_their_legacy_request_keep_their_cap():
    options = TranslateOptions(integer_gpus=IntegerGpuMode.EXTENDED_RESOURCE)
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "4"}), options)
    assert added(plan) == {} and "keeps its cap" in plan.notes[0].message
    passed = plan_quota(quota({"requests.aliyun.com/gpu-mem": "40"}),
                        TranslateOptions(pass_through_families=frozenset({"aliyun"})))
    assert added(passed) == {} and passed.uncapped == ()


def test_shared_claims_are_charged_once_per_workload_and_the_plan_says_so():
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "4"}), TranslateOptions(sharing=Sharing.TIMESLICING))
    assert any("charged once" in n.message for n in plan.notes)


def test_a_custom_gpu_class_gets_its_own_entry():
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "4"}), TranslateOptions(gpu_device_class="a100.example.com"))
    assert added(plan) == {devices_entry("a100.example.com"): "4"}


@pytest.mark.parametrize("version", ["1.32", "1.33", "1.34", "1.35", "1.36", "1.37"])
def test_the_patched_quota_validates_and_a_second_plan_changes_nothing(version):
    original = quota({"requests.nvidia.com/gpu": "4", "requests.nvidia.com/mig-1g.10gb": "2"})
    plan = plan_quota(original)
    patched = jsonpatch.apply_patch(copy.deepcopy(original), list(plan.patch))
    kubernetes_validate.validate(patched, version, strict=True)
    assert patched["spec"]["hard"] == {"requests.nvidia.com/gpu": "4", "requests.nvidia.com/mig-1g.10gb": "2",
                                       GPU_DEVICES: "4", MIG_DEVICES: "2"}
    again = plan_quota(patched)
    assert again.entries == () and again.patch == ()


def test_an_unreadable_cap_is_an_error_naming_the_quota():
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "four"}))
    assert added(plan) == {}
    assert [n.severity for n in plan.notes] == [Severity.ERROR]
    assert plan.notes[0].message.startswith("ResourceQuota team-a/gpus: requests.nvidia.com/gpu: ")


def test_every_legacy_resource_is_known_as_a_device_count_or_a_share():
    shares = set(SHARE_RESOURCES)
    assert shares <= set(LEGACY_RESOURCE_NAMES)
    counts = set(LEGACY_RESOURCE_NAMES) - shares
    assert counts == {"nvidia.com/gpu", "alpha.kubernetes.io/nvidia-gpu", "nvidia.com/gpu.shared",
                      "aliyun.com/gpu-count", "nvidia.com/vgpu-number", "volcano.sh/vgpu-number", "google.com/tpu",
                      "volcano.sh/gpu-number", "koordinator.sh/gpu.shared"}


@pytest.mark.parametrize("scoping", [{"scopes": ["NotTerminating"]},
                                     {"scopeSelector": {"matchExpressions": [
                                         {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}])
def test_a_scoped_quota_cannot_carry_a_cap_for_claims_and_says_so(scoping):
    """The claim evaluator matches no scope (resource_claims.go: generic.MatchesNoScopeFunc), so a DRA
    entry in a scoped quota would validate and cap nothing: none is added, and the cap is reported lost."""
    scoped = quota({"requests.nvidia.com/gpu": "4"}, name="high-priority")
    scoped["spec"].update(scoping)
    plan = plan_quota(scoped, target=target("1.34"))
    assert plan.entries == ()
    assert plan.uncapped == ("requests.nvidia.com/gpu",) and plan.caps_gpus
    [warning] = warnings(plan)
    assert "ResourceQuota team-a/high-priority" in warning and "scoped" in warning
    assert "never counts ResourceClaims" in warning and GPU_DEVICES in warning


def test_a_negative_cap_is_an_error_not_carried():
    """The API server refuses a negative hard limit (kubernetes pkg/apis/core/validation/validation.go
    ValidateResourceQuantityValue: "must be greater than or equal to 0"), so migrate names it instead of
    writing a DRA entry that is refused or that adds up with other caps to a wrong one."""
    plan = plan_quota(quota({"requests.nvidia.com/gpu": "-3", "requests.nvidia.com/gpu.shared": "4"}))
    assert added(plan) == {GPU_DEVICES: "4"}  # the valid cap alone, not -3 + 4
    [error] = [n.message for n in plan.notes if n.severity is Severity.ERROR]
    assert "requests.nvidia.com/gpu" in error and "negative" in error
