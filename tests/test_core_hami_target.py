"""Every fractional family on HAMi's DRA driver: each legacy unit becomes the capacity HAMi's GPUs
publish (``cores``: percent of one GPU; ``memory``: bytes), which HAMi-core enforces; whole GPUs ask
for none (the driver's request policy gives a claim that names no capacity the whole device).  The
claims are strictly valid for Kubernetes 1.34-1.37, allocatable on HAMi's published GPUs, and refused
where no GPU has the capacity.  Facts: kubectl_gpu/dra/hami.py (Project-HAMi/k8s-dra-driver ebeaad97)."""

from __future__ import annotations

import pytest

from kubectl_gpu.cluster.fit import fit_options, unsatisfiable
from kubectl_gpu.cluster.profile import build_profile
from kubectl_gpu.core import ApiVersion, Severity, Sharing, TargetDriver, TranslateOptions, translate_pod_template
from kubectl_gpu.dra import facts, hami
from kubectl_gpu.dra.quantity import parse_quantity
from tests.strict_validation import RELEASES, assert_strictly_valid
from tests.test_dra_hami import GIB, hami_device, slice_of

HAMI = TranslateOptions(target_driver=TargetDriver.HAMI)
MIB = 2**20
HAMI_CLASS = {"apiVersion": facts.NEWEST_DRA_API_VERSION, "kind": "DeviceClass",
              "metadata": {"name": hami.HAMI_DEVICE_CLASS},
              "spec": {"selectors": [{"cel": {"expression": hami.HAMI_DEVICE_CLASS_SELECTOR}}]}}


def hami_cluster(*memories: int):
    devices = [hami_device(i, f"GPU-{i}", "NVIDIA A100-SXM4-80GB", m) for i, m in enumerate(memories)]
    return build_profile("fake HAMi node", objects=[HAMI_CLASS, slice_of(hami.HAMI_DRIVER, devices)],
                         kubernetes_minor=34)


def translate(limits, options=HAMI, annotations=None, node_selector=None):
    spec = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return translate_pod_template({"metadata": {"annotations": annotations or {}}, "spec": spec}, options)


def only_request(result):
    assert not result.errors, result.errors
    (claim,) = result.claims
    (request,) = claim.claim_spec["devices"]["requests"]
    return claim, request["exactly"]


def asked(exactly):
    """count and each capacity request as a number (bytes, percent)."""
    capacity = (exactly.get("capacity") or {}).get("requests", {})
    return exactly["count"], {k: parse_quantity(v) for k, v in capacity.items()}


# (legacy limits, extra options, count, cores %, memory bytes or None for the whole GPU's memory)
FAMILIES = [
    # HAMi: nvidia.com/gpu counts vGPUs, gpumem MiB, gpucores %, gpumem-percentage % of --gpu-memory.
    ({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1024, "nvidia.com/gpucores": 30}, {}, 1, 30, 1024 * MIB),
    ({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 3000}, {}, 2, 0, 3000 * MIB),
    ({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 25}, {"gpu_memory": "80Gi"}, 1, 0, 20 * GIB),
    ({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 40, "nvidia.com/gpumem-percentage": 50}, {"gpu_memory": "40Gi"},
     1, 40, 20 * GIB),
    # gpu-manager (nvidia.com/vcuda-*): vcuda-core 100 = one GPU, vcuda-memory MiB.
    ({"nvidia.com/vcuda-core": 50, "nvidia.com/vcuda-memory": 4096}, {}, 1, 50, 4 * GIB),
    # tkestack (tencent.com/vcuda-*): vcuda-memory counts 256 MiB blocks.
    ({"tencent.com/vcuda-core": 25, "tencent.com/vcuda-memory": 16}, {}, 1, 25, 4 * GIB),
    # ACK gpushare: aliyun.com/gpu-mem GiB (or MiB with the plugin's --memory-unit=MiB), core percentage.
    ({"aliyun.com/gpu-mem": 8}, {}, 1, 0, 8 * GIB),
    ({"aliyun.com/gpu-mem": 2048}, {"aliyun_memory_unit": "MiB"}, 1, 0, 2 * GIB),
    ({"aliyun.com/gpu-mem": 8, "aliyun.com/gpu-core.percentage": 30}, {}, 1, 30, 8 * GIB),
    # Volcano vGPU: vgpu-number devices, each vgpu-memory MiB and vgpu-cores %.
    ({"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 2048, "volcano.sh/vgpu-cores": 25}, {}, 2, 25, 2 * GIB),
    # vgpu-manager, the same units under nvidia.com/vgpu-*.
    ({"nvidia.com/vgpu-number": 1, "nvidia.com/vgpu-memory": 1024}, {}, 1, 0, GIB),
    # Volcano's GPU share: MiB of one GPU.
    ({"volcano.sh/gpu-memory": 1024}, {}, 1, 0, GIB),
    # Koordinator: gpu-core % and gpu-memory-ratio % of a GPU.
    ({"koordinator.sh/gpu-core": 50, "koordinator.sh/gpu-memory-ratio": 50}, {"gpu_memory": "80Gi"}, 1, 50, 40 * GIB),
    # A fraction of nvidia.com/gpu: a share of --gpu-memory, compute not limited.
    ({"nvidia.com/gpu": "0.5"}, {"gpu_memory": "80Gi"}, 1, 0, 40 * GIB),
]


@pytest.mark.parametrize("limits, extra, count, cores, memory", FAMILIES, ids=lambda v: str(v))
def test_each_family_asks_for_its_cores_and_memory_in_hamis_units(limits, extra, count, cores, memory):
    claim, exactly = only_request(translate(limits, TranslateOptions(target_driver=TargetDriver.HAMI, **extra)))
    assert exactly["deviceClassName"] == hami.HAMI_DEVICE_CLASS
    want = {"cores": cores, **({"memory": memory} if memory is not None else {})}
    assert asked(exactly) == (count, want)
    assert "config" not in claim.claim_spec["devices"]  # HAMi-core takes its limits from the consumed capacity


@pytest.mark.parametrize("limits", [{"nvidia.com/gpu": 2}, {"nvidia.com/vcuda-core": 200},
                                    {"nvidia.com/gpu": 1, "nvidia.com/gpucores": 100},
                                    {"volcano.sh/gpu-number": 2}, {"aliyun.com/gpu-count": 2}])
def test_whole_gpus_ask_for_no_capacity_so_each_takes_a_whole_hami_gpu(limits):
    _, exactly = only_request(translate(limits))
    assert exactly["deviceClassName"] == hami.HAMI_DEVICE_CLASS
    assert "capacity" not in exactly and exactly["count"] == 2 - ("nvidia.com/gpucores" in limits)


def test_the_report_says_what_hami_core_enforces_and_what_nvidias_driver_only_accounts():
    result = translate({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1024, "nvidia.com/gpucores": 30})
    (enforced,) = [n for n in result.notes if "HAMi-core enforces" in n.message]
    assert enforced.container == "c"
    assert "memory limit 1Gi" in enforced.message and "compute limit 30%" in enforced.message
    assert "only accounted" in enforced.message and "compute not limited" in enforced.message
    unlimited = translate({"aliyun.com/gpu-mem": 8})
    assert any("memory limit 8Gi, compute not limited" in n.message for n in unlimited.notes)


def test_a_share_whose_memory_is_unknown_takes_all_of_a_gpus_memory_and_says_so():
    _, exactly = only_request(translate({"nvidia.com/gpu": "0.5"}))
    assert asked(exactly) == (1, {"cores": 0})
    assert any(n.severity is Severity.WARNING and "--gpu-memory" in n.message
               for n in translate({"nvidia.com/gpu": "0.5"}).notes)


def test_shares_need_v1_so_older_versions_get_whole_gpus_with_a_warning():
    result = translate({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1024},
                       TranslateOptions(target_driver=TargetDriver.HAMI, api_version=ApiVersion.V1BETA2))
    _, exactly = only_request(result)
    assert "capacity" not in exactly
    assert any("consumable capacity" in n.message for n in result.warnings)


def test_mig_requests_stay_with_nvidias_driver_which_hamis_does_not_replace():
    result = translate({"nvidia.com/mig-1g.10gb": 1})
    _, exactly = only_request(result)
    assert exactly["deviceClassName"] == facts.MIG_DEVICE_CLASS
    assert any("no MIG devices" in n.message for n in result.warnings)


def test_a_mig_claim_beside_a_hami_share_keeps_selectors_on_nvidias_attributes():
    spec = {"containers": [
        {"name": "mig", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}},
        {"name": "share", "resources": {"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1024}}}]}
    result = translate_pod_template({"metadata": {"annotations": {"nvidia.com/use-gpuuuid": "GPU-1"}}, "spec": spec},
                                    HAMI)
    assert not result.errors
    expressions = {c.claim_spec["devices"]["requests"][0]["exactly"]["deviceClassName"]:
                   " ".join(s["cel"]["expression"] for s in c.claim_spec["devices"]["requests"][0]["exactly"]["selectors"])
                   for c in result.claims}
    assert hami.HAMI_DRIVER not in expressions[facts.MIG_DEVICE_CLASS]
    assert facts.NVIDIA_DRIVER not in expressions[hami.HAMI_DEVICE_CLASS]


def test_node_labels_become_selectors_on_hamis_attributes():
    cluster = hami_cluster(80 * GIB)
    _, exactly = only_request(translate({"nvidia.com/gpu": 1}, node_selector={"nvidia.com/gpu.product": "A100-SXM4-80GB"}))
    (selector,) = exactly["selectors"]
    assert hami.HAMI_DRIVER in selector["cel"]["expression"] and facts.NVIDIA_DRIVER not in selector["cel"]["expression"]
    from kubectl_gpu.cel import compile_selector

    assert [compile_selector(selector["cel"]["expression"]).matches(d) for d in cluster.devices] == [True]


def test_the_nvidia_target_is_the_default_and_unchanged():
    limits = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1024, "nvidia.com/gpucores": 30}
    assert TranslateOptions().target_driver is TargetDriver.NVIDIA
    default = translate(limits, TranslateOptions())
    assert translate(limits, TranslateOptions(target_driver=TargetDriver.NVIDIA)) == default
    assert translate(limits, TranslateOptions(target_driver=TargetDriver.AUTO)) == default


CASES = [(limits, extra) for limits, extra, *_ in FAMILIES] + [({"nvidia.com/gpu": 2}, {})]


@pytest.mark.parametrize("limits, extra", CASES, ids=str)
def test_every_hami_claim_is_strictly_valid_for_1_34_to_1_37(limits, extra):
    result = translate(limits, TranslateOptions(target_driver=TargetDriver.HAMI, **{"gpu_memory": "80Gi", **extra}))
    assert result.claims
    for claim in result.claims:
        assert_strictly_valid(claim.manifest("default"), RELEASES["v1"])


@pytest.mark.parametrize("limits, extra", CASES, ids=str)
def test_every_hami_claim_is_allocatable_on_hamis_published_gpus(limits, extra):
    cluster = hami_cluster(80 * GIB)
    fitted = fit_options(TranslateOptions(target_driver=TargetDriver.AUTO, sharing=Sharing.AUTO, **extra), cluster,
                         api_version_given=False)
    assert fitted.options.target_driver is TargetDriver.HAMI
    result = translate(limits, fitted.options)
    assert result.claims and unsatisfiable(result.claims, hami_cluster(80 * GIB, 80 * GIB)) == {}


@pytest.mark.parametrize("limits", [{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 50 * 1024},
                                    {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 48 * 1024},
                                    {"nvidia.com/gpu": 3}])
def test_no_hami_claim_is_allocatable_on_gpus_without_the_capacity(limits):
    cluster = hami_cluster(16 * GIB, 40 * GIB)  # too little memory for the first two; two GPUs for three
    result = translate(limits, fit_options(HAMI, cluster, api_version_given=False).options)
    assert set(unsatisfiable(result.claims, cluster)) == {c.name for c in result.claims}


def test_auto_picks_hamis_driver_only_where_the_cluster_publishes_it():
    auto = TranslateOptions(target_driver=TargetDriver.AUTO)
    assert fit_options(auto, hami_cluster(80 * GIB), api_version_given=False).options.target_driver is TargetDriver.HAMI
    by_class = build_profile("class only", objects=[HAMI_CLASS], kubernetes_minor=34)
    assert fit_options(auto, by_class, api_version_given=False).options.target_driver is TargetDriver.HAMI
    nvidia = build_profile("nvidia", objects=[slice_of(facts.NVIDIA_DRIVER, [
        {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}, "capacity": {"memory": {"value": "80Gi"}}}])],
        kubernetes_minor=34)
    assert fit_options(auto, nvidia, api_version_given=False).options.target_driver is TargetDriver.NVIDIA
    assert fit_options(auto, None, api_version_given=False).options.target_driver is TargetDriver.NVIDIA


def test_a_count_of_vgpus_takes_that_many_distinct_gpus_as_hami_placed_them():
    # HAMi places nvidia.com/gpu: 2 vGPUs on two GPUs; one request of count 2 never takes one device twice.
    result = translate({"nvidia.com/gpu": 2, "nvidia.com/gpumem": 1024})
    assert set(unsatisfiable(result.claims, hami_cluster(80 * GIB))) == {c.name for c in result.claims}
    assert unsatisfiable(result.claims, hami_cluster(80 * GIB, 80 * GIB)) == {}
