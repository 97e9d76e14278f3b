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
