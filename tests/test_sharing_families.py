"""GPU-sharing schedulers whose resources used to pass migrate and the webhook unseen.

Each case comes from the scheduler's own source or design at a named commit:
  volcano-sh/volcano pkg/scheduler/api/devices/nvidia/gpushare/type.go @ f4e3e58ff2d5af90053cb77527530ee1f43fa7f1
      (VolcanoGPUResource = "volcano.sh/gpu-memory", VolcanoGPUNumber = "volcano.sh/gpu-number") and share.go
      @ c08fc715e09ea76e52798dd0076e1029e7e31bd2: gpu-memory (MiB, the device plugin's unit: volcano-sh/devices
      pkg/plugin/nvidia/const.go @ 64dbad0b280399496f9c3ed2c51bff958d66d056) is placed on ONE GPU with that much
      idle memory (predicateGPUbyMemory); gpu-number takes that many IDLE GPUs, no other pod on them
      (predicateGPUbyNumber, isIdleGPU).
  koordinator-sh/koordinator apis/extension/device_share.go @ d275a4434e26bc38a3cbee96eb35293d07c8a8c8 (the names)
      and docs/proposals/scheduling/20230803-enhance-gpu-share-api.md @ 768f84af8121d8bc0cd25c9ab09c998ebb9bd198:
      gpu-memory in bytes, gpu-memory-ratio and gpu-core in percent of one GPU, the totals divided equally over
      `koordinator.sh/gpu.shared` GPUs (absent: ratio / 100 when a multiple of 100, else 1); memory and ratio
      together, or gpu-core without memory, are rejected; `koordinator.sh/gpu` is gpu-core + gpu-memory-ratio.
"""

from __future__ import annotations

import pytest

from kubectl_gpu.core import Severity, TranslateOptions, family_of, translate_pod_template


def translate(limits):
    template = {"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]}}
    return translate_pod_template(template, TranslateOptions())


def only_request(result):
    (claim,) = result.claims
    (request,) = claim.claim_spec["devices"]["requests"]
    return request["exactly"]


# --- Volcano GPU share (the device plugin before vGPU) ------------------------------------------


def test_volcano_gpu_memory_is_a_memory_share_of_one_gpu_in_mib():
    result = translate({"volcano.sh/gpu-memory": 4096})
    assert not result.errors
    exactly = only_request(result)
    assert exactly.get("count", 1) == 1
    assert exactly["capacity"]["requests"]["memory"] == "4Gi"


def test_volcano_gpu_number_is_whole_gpus():
    result = translate({"volcano.sh/gpu-number": 2})
    assert not result.errors
    exactly = only_request(result)
    assert exactly["count"] == 2 and "capacity" not in exactly


def test_volcano_gpu_memory_beside_gpu_number_is_refused():
    result = translate({"volcano.sh/gpu-number": 1, "volcano.sh/gpu-memory": 1024})
    assert not result.patch
    (error,) = result.errors
    assert "volcano.sh/gpu-number" in error.message and "volcano.sh/gpu-memory" in error.message


# --- per pod: the scheduler places a pod's requests as one -------------------------------------------
# Volcano: share.go @ 09d37cf3ab97c787f638c3750229bb92ed71e850 getGPUMemoryOfPod / getGPUNumberOfPod add the
# containers' limits (init containers: the largest, if more) and place the total; volcano-sh/devices
# pkg/plugin/nvidia/server.go @ 95b591b6787c7ae97fb340a6d7832ffcc3d29083 Allocate gives every GPU container
# all of the pod's GPU ids (VisibleDevice from the pod's annotation).  Koordinator @ a7a1b76bbf81abd26f9c377de1f31a60dd965f6e:
# pkg/scheduler/plugins/deviceshare/utils.go GetPodDeviceRequests reads resourceapi.PodRequests (the same sum),
# and the koordlet's gpu hook (pkg/koordlet/runtimehooks/hooks/gpu/gpu.go) gives each container the pod's GPUs.


def translate_pod(*containers, init=()):
    spec = {"containers": [{"name": n, "resources": {"limits": limits}} for n, limits in containers]}
    if init:
        spec["initContainers"] = [{"name": n, "resources": {"limits": limits}} for n, limits in init]
    return translate_pod_template({"metadata": {}, "spec": spec}, TranslateOptions())


def claim_users(result):
    """container name -> the pod claim names it uses, read from the patch."""
    names = {}
    for op in result.patch:
        parts = op["path"].split("/")
        if len(parts) >= 6 and parts[-2:] == ["resources", "claims"]:
            names[(parts[2], int(parts[3]))] = [c["name"] for c in op["value"]]
    return names


@pytest.mark.parametrize("containers, init, expected", [
    # 1024 + 2048 MiB on ONE GPU with 3 GiB idle, not two shares that may land on two GPUs.
    ((("a", {"volcano.sh/gpu-memory": 1024}), ("b", {"volcano.sh/gpu-memory": 2048})), (),
     {"count": 1, "memory": "3Gi"}),
    # An init container asking more than the containers together sets the pod's figure.
    ((("a", {"volcano.sh/gpu-memory": 1024}), ("b", {"volcano.sh/gpu-memory": 2048})),
     (("warm", {"volcano.sh/gpu-memory": 4096}),), {"count": 1, "memory": "4Gi"}),
    # gpu-number 1 + 1: the pod takes 2 idle GPUs and both containers see both.
    ((("a", {"volcano.sh/gpu-number": 1}), ("b", {"volcano.sh/gpu-number": 1})), (), {"count": 2, "memory": None}),
    # Koordinator: 50 + 50 % is one whole GPU for the pod; 30 + 30 % is 60 % of one GPU.
    ((("a", {"koordinator.sh/gpu-memory-ratio": 50}), ("b", {"koordinator.sh/gpu-memory-ratio": 50})), (),
     {"count": 1, "memory": None}),
])
def test_a_per_pod_schedulers_containers_share_one_claim_of_the_pods_total(containers, init, expected):
    result = translate_pod(*containers, init=init)
    assert not result.errors, result.notes
    (claim,) = result.claims
    (request,) = claim.claim_spec["devices"]["requests"]
    assert request["exactly"].get("count", 1) == expected["count"]
    memory = request["exactly"].get("capacity", {}).get("requests", {}).get("memory")
    assert memory == expected["memory"]
    users = claim_users(result)
    assert len(users) == len(containers) + len(init)
    assert len({tuple(v) for v in users.values()}) == 1  # every container names the same pod claim
    (pod_claims,) = [op["value"] for op in result.patch if op["path"] == "/spec/resourceClaims"]
    assert len(pod_claims) == 1
    assert any("places a pod's GPU requests as one" in n.message for n in result.notes)


def test_koordinator_ratio_shares_of_a_pod_add_up_to_one_share():
    result = translate_pod(("a", {"koordinator.sh/gpu-memory-ratio": 30}), ("b", {"koordinator.sh/gpu-memory-ratio": 30}))
    assert not result.errors
    assert len(result.claims) == 1
    assert "0.6 of a GPU" in next(n.message for n in result.notes if "places a pod's" in n.message)


def test_koordinator_refuses_a_pods_total_it_would_refuse():
    """70 + 70 % without gpu.shared is 140 % of one GPU: ValidateDeviceRequest refuses the pod's request."""
    result = translate_pod(("a", {"koordinator.sh/gpu-memory-ratio": 70}), ("b", {"koordinator.sh/gpu-memory-ratio": 70}))
    assert not result.patch
    assert any("the pod's" in e.message and "more than one GPU" in e.message for e in result.errors)


def test_one_container_of_a_per_pod_family_is_read_as_before():
    result = translate_pod(("a", {"volcano.sh/gpu-memory": 1024}), ("b", {"cpu": "1"}))
    assert only_request(result)["capacity"]["requests"]["memory"] == "1Gi"
    assert not any("places a pod's" in n.message for n in result.notes)


# --- Koordinator device share -------------------------------------------------------------------


def test_koordinator_totals_are_divided_over_gpu_shared():
    # The proposal's own example: 4Gi and 100 cores over 2 GPUs are 2Gi and 50% on each.
    result = translate({"koordinator.sh/gpu-memory": "4Gi", "koordinator.sh/gpu-core": 100,
                        "koordinator.sh/gpu.shared": 2})
    assert not result.errors
    exactly = only_request(result)
    assert exactly["count"] == 2
    assert exactly["capacity"]["requests"]["memory"] == "2Gi"


def test_koordinator_memory_ratio_of_whole_gpus_is_whole_gpus():
    result = translate({"koordinator.sh/gpu-memory-ratio": 200, "koordinator.sh/gpu-core": 200})
    assert not result.errors
    exactly = only_request(result)
    assert exactly["count"] == 2 and "capacity" not in exactly


def test_koordinator_gpu_is_core_and_memory_ratio_together():
    half = translate({"koordinator.sh/gpu": 50})
    assert not half.errors
    assert only_request(half).get("count", 1) == 1
    assert any("50%" in n.message or "1/2" in n.message or "0.5" in n.message for n in half.notes)
    whole = translate({"koordinator.sh/gpu": 100})
    assert only_request(whole).get("count", 1) == 1 and "capacity" not in only_request(whole)


@pytest.mark.parametrize("limits, words", [
    ({"koordinator.sh/gpu-memory": "4Gi", "koordinator.sh/gpu-memory-ratio": 50}, "not both"),
    ({"koordinator.sh/gpu-core": 50}, "gpu-memory"),
    ({"koordinator.sh/gpu-memory-ratio": 150}, "multiple of 100"),
])
def test_what_koordinator_rejects_is_an_error_naming_the_fix(limits, words):
    result = translate(limits)
    assert not result.patch
    assert any(words in e.message for e in result.errors), [e.message for e in result.errors]


@pytest.mark.parametrize("name", ["volcano.sh/gpu-memory", "volcano.sh/gpu-number", "koordinator.sh/gpu",
                                  "koordinator.sh/gpu.shared", "koordinator.sh/gpu-core",
                                  "koordinator.sh/gpu-memory", "koordinator.sh/gpu-memory-ratio"])
def test_sharing_resources_are_legacy_gpu_requests_the_guard_sees(name):
    """family_of is what the webhook's fencing, doctor, fleet capacity and the chart's test read."""
    assert family_of(name) is not None


# --- Other vendors: named, never silent ---------------------------------------------------------

# Resource names as the vendors' device plugins advertise them, and as HAMi shares them (Project-HAMi/HAMi
# pkg/device/devices_test.go @ 8c7a181fac92324cf29f7c55bc0349cf650491b2, loadTestConfig), transcribed as data.
OTHER_VENDORS = [
    "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe",
    "iluvatar.ai/vgpu", "iluvatar.ai/vcuda-memory", "iluvatar.ai/vcuda-core",
    "metax-tech.com/gpu",
    "mthreads.com/vgpu", "mthreads.com/sgpu-memory", "mthreads.com/sgpu-core",
    "cambricon.com/mlu", "cambricon.com/vmlu", "cambricon.com/mlu.smlu.vmemory", "cambricon.com/mlu.smlu.vcore",
    "kunlunxin.com/xpu",
    "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice",
    "habana.ai/gaudi",
]


@pytest.mark.parametrize("name", OTHER_VENDORS)
def test_another_vendors_accelerator_is_named_in_a_warning(name):
    result = translate({name: 1})
    assert not result.patch
    (warning,) = [n for n in result.notes if n.severity is Severity.WARNING and name in n.message]
    assert "not rewritten" in warning.message


@pytest.mark.parametrize("limits", ["volcano.sh/gpu-memory: 4096", "volcano.sh/gpu-number: 1",
                                    "koordinator.sh/gpu-memory-ratio: 50\n        koordinator.sh/gpu.shared: 1"])
def test_migrate_check_fails_while_a_sharing_request_is_left(limits):
    """A CI gate (`migrate --check`) must not pass a manifest that still asks a sharing scheduler for GPUs."""
    from click.testing import CliRunner

    from kubectl_gpu.cli.main import main

    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  schedulerName: volcano\n  containers:\n"
           f"  - name: c\n    image: cuda\n    resources:\n      limits:\n        {limits}\n")
    result = CliRunner().invoke(main, ["migrate", "--check", "-"], input=pod)
    assert result.exit_code != 0, result.output
    migrated = CliRunner().invoke(main, ["migrate", "-"], input=pod)
    assert migrated.exit_code == 0 and "ResourceClaimTemplate" in migrated.stdout
    assert CliRunner().invoke(main, ["migrate", "--check", "-"], input=migrated.stdout).exit_code == 0


@pytest.mark.parametrize("limits", [{"volcano.sh/gpu-number": "1"}, {"volcano.sh/gpu-memory": "4096"},
                                    {"koordinator.sh/gpu-memory-ratio": "100", "koordinator.sh/gpu-core": "100"}])
def test_the_webhook_rewrites_a_sharing_schedulers_pod_into_a_claim(webhook_on, limits):
    from pathlib import Path

    import jsonpatch
    import yaml

    from tests.conftest import admission_review, patch_of
    from tests.k8sdouble import K8sDouble

    node = Path(__file__).parent / "data" / "slices" / "nvidia-h100-node.yaml"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"limits": limits}}]}}
    with K8sDouble() as double:
        double.seed(*[d for d in yaml.safe_load_all(node.read_text()) if d])
        response = webhook_on(double).review("/mutate", admission_review(pod))
    assert response["allowed"] is True, response
    patched = jsonpatch.apply_patch(pod, patch_of(response))
    assert patched["spec"]["resourceClaims"]
    assert not set(limits) & set(patched["spec"]["containers"][0]["resources"].get("limits") or {})


@pytest.mark.parametrize("api_version", ["v1", "v1beta2", "v1beta1"])
@pytest.mark.parametrize("limits", [{"volcano.sh/gpu-memory": 4096}, {"volcano.sh/gpu-number": 2},
                                    {"koordinator.sh/gpu-memory": "4Gi", "koordinator.sh/gpu-core": 100,
                                     "koordinator.sh/gpu.shared": 2},
                                    {"koordinator.sh/gpu": 50}])
def test_the_claims_of_sharing_families_are_strictly_valid_for_1_32_to_1_37(api_version, limits):
    from kubectl_gpu.core import ApiVersion
    from tests.strict_validation import RELEASES, assert_strictly_valid

    template = {"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]}}
    result = translate_pod_template(template, TranslateOptions(api_version=ApiVersion.parse(api_version),
                                                               gpu_memory="80Gi"))
    assert not result.errors and result.claims
    for claim in result.claims:
        assert_strictly_valid(claim.manifest("default"), RELEASES[api_version])
