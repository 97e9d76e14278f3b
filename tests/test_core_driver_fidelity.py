"""Claims that allocate on what NVIDIA's DRA driver really publishes.

Each test states a behaviour derived from upstream source, not from our code:
  kubernetes-sigs/dra-driver-nvidia-gpu  cmd/gpu-kubelet-plugin/deviceinfo.go, mig.go (attributes,
      `profile` from go-nvlib MigProfileInfo.String(): 1g.10gb, 1g.10gb+me, +me.all, +gfx, -me),
      api/nvidia.com/resource/v1beta1/sharing.go (MpsConfig.MultiUser)
  NVIDIA/k8s-device-plugin  internal/rm/rm.go and internal/resource/nvml-mig-device.go (MIG resource
      names: strings.ReplaceAll(profile, "+", ".")), internal/lm/resource.go (GFD labels: sanitise()
      drops "+" from the product label; getArchFamily() -> "ada-lovelace"), and the MIG "single"
      strategy labeler (internal/lm/mig-strategy.go: "<model>-MIG-INVALID" when profiles differ).
  Project-HAMi/HAMi  nvidia.com/use-gputype & co. (comma separated card types / UUIDs).
"""

from __future__ import annotations

import pytest

from kubectl_gpu.cel import compile_selector
from kubectl_gpu.dra.devices import make_device
from kubectl_gpu.core import Severity, Sharing, TranslateOptions, translate_pod_template
from kubectl_gpu.dra.driver_config import validate_nvidia_parameters

NVIDIA = "gpu.nvidia.com"


def gpu(name, product="NVIDIA H100 80GB HBM3", architecture="Hopper", memory="81559Mi", uuid=None):
    return make_device(NVIDIA, name, attributes={
        "type": "gpu", "uuid": uuid or f"GPU-{name}", "productName": product, "brand": "Nvidia",
        "architecture": architecture}, capacity={"memory": memory})


def mig(name, profile, product="NVIDIA A100-SXM4-80GB", memory="9728Mi"):
    return make_device(NVIDIA, name, attributes={
        "type": "mig", "uuid": f"MIG-{name}", "parentUUID": "GPU-parent", "profile": profile,
        "productName": product, "brand": "Nvidia", "architecture": "Ampere"}, capacity={"memory": memory})


def template(limits, node_selector=None, annotations=None):
    return {"metadata": {"annotations": annotations or {}},
            "spec": {"nodeSelector": node_selector or {},
                     "containers": [{"name": "c", "resources": {"limits": limits}}]}}


def translate(limits, node_selector=None, annotations=None, **options):
    return translate_pod_template(template(limits, node_selector, annotations), TranslateOptions(**options))


def only_request(result):
    (claim,) = result.claims
    (request,) = claim.claim_spec["devices"]["requests"]
    return request["exactly"]


def matches(result, devices):
    """Names of the devices the single request of the result could get (class type included)."""
    exactly = only_request(result)
    wanted_type = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig"}[exactly["deviceClassName"]]
    selectors = [compile_selector(s["cel"]["expression"]) for s in exactly.get("selectors", [])]
    return {d.name for d in devices
            if d.attributes[NVIDIA]["type"] == wanted_type and all(s.matches(d) for s in selectors)}


A100_MIG = [mig("plain", "1g.10gb"), mig("me", "1g.10gb+me"), mig("all", "1g.10gb+me.all"),
            mig("gfx", "1g.10gb+gfx"), mig("nome", "1g.10gb-me"), mig("ci", "1c.2g.20gb"),
            gpu("whole", "NVIDIA A100-SXM4-80GB", "Ampere", "81920Mi")]


# --- MIG profile spellings --------------------------------------------------------------------

@pytest.mark.parametrize("resource, device", [
    ("nvidia.com/mig-1g.10gb", "plain"),
    ("nvidia.com/mig-1g.10gb.me", "me"),
    ("nvidia.com/mig-1g.10gb.me.all", "all"),
    ("nvidia.com/mig-1g.10gb.gfx", "gfx"),
    ("nvidia.com/mig-1g.10gb-me", "nome"),
    ("nvidia.com/mig-1c.2g.20gb", "ci"),
])
def test_device_plugin_mig_resource_names_select_the_profile_the_driver_publishes(resource, device):
    result = translate({resource: 1})
    assert not result.errors
    assert matches(result, A100_MIG) == {device}


@pytest.mark.parametrize("label, device", [
    ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "plain"),
    ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gbme", "me"),
    ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gbme.all", "all"),
    ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gbgfx", "gfx"),
    ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-me", "nome"),
])
def test_gfd_single_strategy_product_label_selects_the_drivers_mig_profile(label, device):
    result = translate({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.product": label})
    assert not result.errors
    assert only_request(result)["deviceClassName"] == "mig.nvidia.com"
    assert matches(result, A100_MIG) == {device}


@pytest.mark.parametrize("label", ["NVIDIA-A100-SXM4-40GB-MIG-INVALID", "NVIDIA-A100-SXM4-40GB-MIG-9x.foo"])
def test_an_unrecognised_mig_product_label_never_becomes_a_whole_gpu_product_selector(label):
    result = translate({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.product": label})
    for claim in result.claims:
        for request in claim.claim_spec["devices"]["requests"]:
            for selector in request["exactly"].get("selectors", []):
                assert "MIG" not in selector["cel"]["expression"]
    assert any(label in n.message and n.severity is not Severity.INFO for n in result.notes)
    # The constraint stays on the node: it still means something to the device plugin's nodes.
    assert not any(op["path"].startswith("/spec/nodeSelector") for op in result.patch)


def test_an_unknown_mig_resource_is_an_error_not_a_claim_that_matches_nothing():
    result = translate({"nvidia.com/mig-huge": 1})
    assert not result.claims
    assert any("nvidia.com/mig-huge" in n.message for n in result.errors)


# --- Architecture names -----------------------------------------------------------------------

@pytest.mark.parametrize("family, architecture", [
    ("ada-lovelace", "Ada Lovelace"), ("hopper", "Hopper"), ("ampere", "Ampere"), ("blackwell", "Blackwell"),
    ("turing", "Turing"), ("volta", "Volta"), ("rubin", "Rubin"),
])
def test_gfd_family_label_selects_the_drivers_architecture_name(family, architecture):
    devices = [gpu("wanted", architecture=architecture),
               gpu("other", architecture="Pascal" if architecture != "Pascal" else "Hopper")]
    result = translate({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.family": family})
    assert matches(result, devices) == {"wanted"}


def test_a_gfd_family_the_driver_cannot_name_stays_on_the_node_with_a_warning():
    result = translate({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.family": "fermi"})
    assert "selectors" not in only_request(result)
    assert any("fermi" in n.message for n in result.warnings)
    assert not any(op["path"].startswith("/spec/nodeSelector") for op in result.patch)


# --- HAMi annotations -------------------------------------------------------------------------

def test_hami_nouse_gpuuuid_with_one_value_type_checks_and_excludes_that_gpu():
    devices = [gpu("a", uuid="GPU-aaa"), gpu("b", uuid="GPU-bbb")]
    result = translate({"nvidia.com/gpu": 1}, annotations={"nvidia.com/nouse-gpuuuid": "GPU-aaa"})
    assert matches(result, devices) == {"b"}


def test_hami_nouse_gputype_with_one_value_excludes_that_type():
    devices = [gpu("h", "NVIDIA H100 80GB HBM3"), gpu("a", "NVIDIA A100-SXM4-80GB")]
    result = translate({"nvidia.com/gpu": 1}, annotations={"nvidia.com/nouse-gputype": "A100"})
    assert matches(result, devices) == {"h"}


@pytest.mark.parametrize("key", ["nvidia.com/use-gputype", "nvidia.com/nouse-gputype",
                                 "nvidia.com/use-gpuuuid", "nvidia.com/nouse-gpuuuid"])
@pytest.mark.parametrize("value", ["", ",", " , ", ",,"])
def test_an_empty_hami_annotation_fails_closed_with_a_clear_error(key, value):
    result = translate({"nvidia.com/gpu": 1}, annotations={key: value})
    assert not result.patch and not result.claims
    (error,) = result.errors
    assert key in error.message and "empty" in error.message


# --- Memory -----------------------------------------------------------------------------------

H100_MIB = 81559  # GFD nvidia.com/gpu.memory on an H100 80GB HBM3 (NVML total, MiB)


@pytest.mark.parametrize("reported", [
    f"{H100_MIB}Mi",            # the driver's bytes, a whole number of MiB
    str(H100_MIB * 2**20 + 123456),  # NVML's total is not always whole MiB; GFD floors it
    "80896Mi",                  # DynamicMIG: the largest profile's (7g.80gb) memory
    f"{H100_MIB - 1}Mi",        # consumable shares: capacity rounded down to whole Mi
])
def test_a_gpu_memory_label_matches_the_gpu_however_the_driver_reports_its_memory(reported):
    result = translate({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.memory": str(H100_MIB)})
    assert matches(result, [gpu("h100", memory=reported)]) == {"h100"}


@pytest.mark.parametrize("other", ["40Gi", "95830Mi", "46068Mi", "144Gi"])
def test_a_gpu_memory_label_still_tells_gpu_sizes_apart(other):
    result = translate({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.memory": str(H100_MIB)})
    assert matches(result, [gpu("other", memory=other)]) == set()


# --- Resources the core does not translate itself ---------------------------------------------

def test_time_slicing_renamed_gpu_shared_translates_like_nvidia_gpu_and_says_it_was_a_replica():
    result = translate({"nvidia.com/gpu.shared": 1}, sharing=Sharing.EXCLUSIVE)
    exactly = only_request(result)
    assert exactly["deviceClassName"] == "gpu.nvidia.com" and exactly["count"] == 1
    assert any("nvidia.com/gpu.shared" in n.message and "time-slic" in n.message for n in result.warnings)


def test_gpu_shared_in_a_workload_with_timeslicing_shares_one_claim():
    result = translate({"nvidia.com/gpu.shared": 1}, sharing=Sharing.TIMESLICING, sharing_group="Deployment/web")
    (claim,) = result.claims
    assert claim.kind == "ResourceClaim"
    (config,) = claim.claim_spec["devices"]["config"]
    assert config["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"


def test_volcano_vgpu_requests_translate_like_hami_vgpus():
    result = translate({"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 4096, "volcano.sh/vgpu-cores": 50})
    exactly = only_request(result)
    assert exactly["count"] == 2 and exactly["capacity"]["requests"]["memory"] == "4Gi"
    assert not result.errors


@pytest.mark.parametrize("resource", ["hygon.com/dcunum", "huawei.com/Ascend910", "huawei.com/Ascend310P",
                                      "amd.com/gpu", "gpu.intel.com/i915", "cloud-tpus.google.com/v3"])
def test_an_accelerator_without_translation_is_named_in_a_warning_and_left_with_its_device_plugin(resource):
    result = translate({resource: 1})
    assert not result.patch
    (warning,) = [n for n in result.warnings if resource in n.message]
    assert "device plugin" in warning.message


# --- Opaque config: what the driver's main branch accepts --------------------------------------

def test_mps_multi_user_that_the_driver_accepts_is_not_denied():
    params = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
              "sharing": {"strategy": "MPS", "mpsConfig": {"multiUser": True}}}
    assert validate_nvidia_parameters(params, "parameters") == []


def test_mps_multi_user_must_be_a_boolean():
    params = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
              "sharing": {"strategy": "MPS", "mpsConfig": {"multiUser": "yes"}}}
    (finding,) = validate_nvidia_parameters(params, "parameters")
    assert finding.path == "parameters.sharing.mpsConfig.multiUser"


@pytest.mark.parametrize("sharing", [Sharing.TIMESLICING, Sharing.MPS])
@pytest.mark.parametrize("limits, annotations", [
    ({"nvidia.com/gpu": "500m"}, {}),
    ({"nvidia.com/gpu.shared": 2}, {}),
    ({"nvidia.com/vcuda-core": 30, "nvidia.com/vcuda-memory": 1024}, {"nvidia.com/vcuda-core-limit": "25"}),
    ({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 3000, "nvidia.com/gpucores": 40}, {}),
    ({"aliyun.com/gpu-mem": 8}, {}),
    ({"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-cores": 10}, {}),
])
def test_every_opaque_config_the_core_writes_passes_the_drivers_validation(sharing, limits, annotations):
    result = translate(limits, annotations=annotations, sharing=sharing, sharing_group="Deployment/web")
    configs = [c for claim in result.claims for c in claim.claim_spec["devices"].get("config", [])]
    assert configs, result.notes
    for index, config in enumerate(configs):
        assert config["opaque"]["driver"] == "gpu.nvidia.com"
        assert validate_nvidia_parameters(config["opaque"]["parameters"], f"config[{index}]") == []
