"""The translation core, specified by what a user gets for each kind of legacy GPU request."""

from __future__ import annotations

import copy
import json

import jsonpatch
import kubernetes_validate
import pytest

from kubectl_gpu.core import (ApiVersion, IntegerGpuMode, Severity, Sharing, TranslateOptions,
                              translate_pod_template)
from kubectl_gpu.core.constants import MANAGED_BY_LABEL, ORIGINAL_RESOURCES_ANNOTATION


def pod(*containers, init=(), annotations=None, node_selector=None, affinity=None, claims=None):
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if claims:
        spec["resourceClaims"] = claims
    meta = {"name": "p", "namespace": "ml"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def ctr(name="main", limits=None, requests=None, **extra):
    resources = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    c = {"name": name, "image": "cuda:12", **extra}
    if resources:
        c["resources"] = resources
    return c


def migrate(obj, **options):
    result = translate_pod_template(obj, TranslateOptions(**options))
    patched = jsonpatch.apply_patch(obj, list(result.patch)) if result.patch else copy.deepcopy(obj)
    return result, patched


def request_of(claim, api=ApiVersion.V1):
    req = claim.claim_spec["devices"]["requests"][0]
    return req if api is ApiVersion.V1BETA1 else req["exactly"]


def assert_valid(obj, version="1.34"):
    kubernetes_validate.validate(obj, version, strict=True)


# --- nvidia.com/gpu -------------------------------------------------------------------------------

def test_whole_gpus_become_a_per_pod_claim_template_with_that_count():
    original = pod(ctr(limits={"nvidia.com/gpu": 2, "cpu": "1"}, requests={"cpu": "1"}))
    result, patched = migrate(original)

    (claim,) = result.claims
    assert claim.kind == "ResourceClaimTemplate"
    assert request_of(claim) == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}
    container = patched["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"cpu": "1"}, "other resources stay untouched"
    assert container["resources"]["requests"] == {"cpu": "1"}
    assert container["resources"]["claims"] == [{"name": "main-gpu"}]
    assert patched["spec"]["resourceClaims"] == [{"name": "main-gpu", "resourceClaimTemplateName": claim.name}]
    assert claim.manifest("ml")["metadata"]["labels"][MANAGED_BY_LABEL] == "kubectl-gpu"
    assert_valid(patched)
    assert_valid(claim.manifest("ml"))
    assert_valid(claim.manifest("ml"), "1.35")


def test_the_pod_records_its_original_requests_so_the_rewrite_is_reversible():
    original = pod(ctr(limits={"nvidia.com/gpu": "1"}, requests={"nvidia.com/gpu": "1"}))
    _, patched = migrate(original)
    record = json.loads(patched["metadata"]["annotations"][ORIGINAL_RESOURCES_ANNOTATION])
    assert record == {"containers": {"main": {"limits": {"nvidia.com/gpu": "1"},
                                              "requests": {"nvidia.com/gpu": "1"}}}}
    assert "resources" not in patched["spec"]["containers"][0] or \
        set(patched["spec"]["containers"][0]["resources"]) == {"claims"}


def test_translating_twice_changes_nothing_more():
    original = pod(ctr(limits={"nvidia.com/gpu": 1}), node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"})
    _, once = migrate(original)
    again = translate_pod_template(once, TranslateOptions())
    assert again.patch == ()


def test_the_input_mapping_is_never_modified():
    original = pod(ctr(limits={"nvidia.com/gpu": 1}))
    snapshot = copy.deepcopy(original)
    translate_pod_template(original)
    assert original == snapshot


def test_identical_shapes_share_one_template_and_names_are_stable_dns_names():
    a, _ = migrate(pod(ctr("a", limits={"nvidia.com/gpu": 1}), ctr("b", limits={"nvidia.com/gpu": 1})))
    b, _ = migrate(pod(ctr("other", limits={"nvidia.com/gpu": 1})))
    assert len(a.claims) == 1 and a.claims[0].name == b.claims[0].name
    name = a.claims[0].name
    assert len(name) <= 63 and name == name.lower() and name[0].isalnum() and name[-1].isalnum()


def test_two_containers_of_one_shape_still_get_their_own_devices():
    _, patched = migrate(pod(ctr("a", limits={"nvidia.com/gpu": 1}), ctr("b", limits={"nvidia.com/gpu": 1})))
    names = [c["resources"]["claims"][0]["name"] for c in patched["spec"]["containers"]]
    assert names == ["a-gpu", "b-gpu"]
    assert len(patched["spec"]["resourceClaims"]) == 2


@pytest.mark.parametrize("value", ["500m", 0.5, "0.5"])
def test_half_a_gpu_becomes_a_memory_share_when_the_gpu_memory_is_known(value):
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": value})), gpu_memory="80Gi")
    (claim,) = result.claims
    assert request_of(claim)["capacity"] == {"requests": {"memory": "40Gi"}}
    assert any("consumable capacity" in n.message and n.severity is Severity.WARNING for n in result.notes)
    assert_valid(patched)
    assert_valid(claim.manifest("ml"))


def test_half_a_gpu_without_known_memory_becomes_a_whole_gpu_and_says_so():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": "500m"})))
    assert "capacity" not in request_of(result.claims[0])
    warning = " ".join(n.message for n in result.warnings)
    assert "whole GPU" in warning and "--gpu-memory" in warning


def test_exclusive_sharing_rounds_up_with_a_warning():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": "0.5"})), sharing=Sharing.EXCLUSIVE, gpu_memory="80Gi")
    assert request_of(result.claims[0])["count"] == 1
    assert "capacity" not in request_of(result.claims[0])
    assert any("exclusive" in n.message for n in result.warnings)


def test_time_slicing_shares_one_resource_claim_across_the_pods_of_a_workload():
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": "0.5"})), sharing=Sharing.TIMESLICING,
                              sharing_group="Deployment/web")
    (claim,) = result.claims
    assert claim.kind == "ResourceClaim"
    assert patched["spec"]["resourceClaims"][0] == {"name": "main-gpu", "resourceClaimName": claim.name}
    params = claim.claim_spec["devices"]["config"][0]["opaque"]["parameters"]
    assert params == {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
                      "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}}}
    assert any("ONE ResourceClaim" in n.message for n in result.warnings)
    assert_valid(claim.manifest("ml"))


def test_time_slicing_for_a_bare_pod_is_honest_that_it_gets_a_whole_gpu():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": "0.5"})), sharing=Sharing.TIMESLICING)
    assert result.claims[0].kind == "ResourceClaimTemplate"
    assert any("gets 1 whole GPU" in n.message for n in result.warnings)


def test_mps_carries_the_compute_share_as_the_thread_percentage():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/vcuda-core": 30, "nvidia.com/vcuda-memory": 2048})),
                        sharing=Sharing.MPS, sharing_group="Job/train")
    mps = result.claims[0].claim_spec["devices"]["config"][0]["opaque"]["parameters"]["sharing"]["mpsConfig"]
    assert mps == {"defaultActiveThreadPercentage": 30, "defaultPinnedDeviceMemoryLimit": "2Gi"}


def test_a_gpu_count_that_is_neither_whole_nor_a_fraction_is_an_error_and_nothing_changes():
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": "1.5"})))
    assert result.patch == () and result.claims == ()
    assert "whole number" in result.errors[0].message and result.errors[0].container == "main"


def test_zero_gpus_are_removed_without_a_claim():
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": 0, "cpu": "1"})))
    assert result.claims == ()
    assert patched["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "1"}
    assert_valid(patched)


def test_requests_without_limits_are_translated_with_a_warning():
    result, patched = migrate(pod(ctr(requests={"nvidia.com/gpu": 1})))
    assert result.claims and any("without limits" in n.message for n in result.warnings)
    assert "requests" not in patched["spec"]["containers"][0]["resources"]


def test_the_obsolete_alpha_resource_is_read_as_nvidia_gpu():
    result, _ = migrate(pod(ctr(limits={"alpha.kubernetes.io/nvidia-gpu": 2})))
    assert request_of(result.claims[0])["count"] == 2
    assert any("obsolete" in n.message for n in result.warnings)


# --- vcuda (gpu-manager) --------------------------------------------------------------------------

def test_vcuda_below_100_is_a_share_with_memory_in_mib_for_the_nvidia_domain():
    result, patched = migrate(pod(ctr(limits={"nvidia.com/vcuda-core": 50, "nvidia.com/vcuda-memory": 1024})))
    assert request_of(result.claims[0])["capacity"] == {"requests": {"memory": "1Gi"}}
    assert_valid(patched)


def test_upstream_tencent_vcuda_memory_counts_256_mib_blocks():
    result, _ = migrate(pod(ctr(limits={"tencent.com/vcuda-core": 50, "tencent.com/vcuda-memory": 30})))
    assert request_of(result.claims[0])["capacity"] == {"requests": {"memory": "7680Mi"}}


def test_vcuda_multiples_of_100_are_whole_gpus():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/vcuda-core": 200, "nvidia.com/vcuda-memory": 4096})))
    assert request_of(result.claims[0]) == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
                                            "count": 2}


def test_vcuda_150_is_rejected_with_the_valid_values():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/vcuda-core": 150})))
    assert result.patch == ()
    message = result.errors[0].message
    assert "150" in message and "below 100" in message and "multiple of 100" in message


def test_the_vcuda_core_limit_annotation_sets_the_mps_thread_limit_and_is_quoted():
    original = pod(ctr(limits={"tencent.com/vcuda-core": 50, "tencent.com/vcuda-memory": 4}),
                   annotations={"tencent.com/vcuda-core-limit": 40})
    result, patched = migrate(original, sharing=Sharing.MPS, sharing_group="Deployment/x")
    mps = result.claims[0].claim_spec["devices"]["config"][0]["opaque"]["parameters"]["sharing"]["mpsConfig"]
    assert mps["defaultActiveThreadPercentage"] == 40
    assert patched["metadata"]["annotations"]["tencent.com/vcuda-core-limit"] == "40"
    assert_valid(patched)


# --- MIG, HAMi, ACK, vgpu-manager, TPU -------------------------------------------------------------

def test_mig_resources_select_the_profile_on_the_mig_class():
    result, patched = migrate(pod(ctr(limits={"nvidia.com/mig-1g.10gb": 2})))
    req = request_of(result.claims[0])
    assert req["deviceClassName"] == "mig.nvidia.com" and req["count"] == 2
    assert req["selectors"][0]["cel"]["expression"].endswith('.profile == "1g.10gb")')
    assert_valid(patched)


def test_a_mig_single_strategy_product_label_turns_whole_gpus_into_mig_devices():
    original = pod(ctr(limits={"nvidia.com/gpu": 1}),
                   node_selector={"nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb"})
    result, patched = migrate(original)
    req = request_of(result.claims[0])
    assert req["deviceClassName"] == "mig.nvidia.com"
    assert any('profile == "1g.5gb"' in s["cel"]["expression"] for s in req["selectors"])
    assert "nodeSelector" not in patched["spec"]


def test_hami_memory_and_cores_become_a_memory_share_per_vgpu():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": 2, "nvidia.com/gpumem": 3000, "nvidia.com/gpucores": 30})))
    req = request_of(result.claims[0])
    assert req["count"] == 2 and req["capacity"] == {"requests": {"memory": "3000Mi"}}
    assert any("30%" in n.message and "not enforced" in n.message for n in result.warnings)


def test_hami_memory_percentage_needs_the_gpu_memory():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 25})),
                        gpu_memory="40Gi")
    assert request_of(result.claims[0])["capacity"] == {"requests": {"memory": "10Gi"}}


def test_ack_gpu_memory_is_in_gib_and_an_implausible_figure_says_how_to_fix_it():
    result, _ = migrate(pod(ctr(limits={"aliyun.com/gpu-mem": 4})))
    assert request_of(result.claims[0])["capacity"] == {"requests": {"memory": "4Gi"}}
    bad, _ = migrate(pod(ctr(limits={"aliyun.com/gpu-mem": 16276})))
    assert bad.patch == () and "--aliyun-memory-unit MiB" in bad.errors[0].message
    mib, _ = migrate(pod(ctr(limits={"aliyun.com/gpu-mem": 16276})), aliyun_memory_unit="MiB")
    assert request_of(mib.claims[0])["capacity"] == {"requests": {"memory": "16276Mi"}}


def test_vgpu_manager_resources_are_understood():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/vgpu-number": 1, "nvidia.com/vgpu-memory": 1024})))
    assert request_of(result.claims[0])["capacity"] == {"requests": {"memory": "1Gi"}}


def test_tpus_move_to_the_tpu_class_and_keep_their_topology_node_selector():
    original = pod(ctr(limits={"google.com/tpu": 4}),
                   node_selector={"cloud.google.com/gke-tpu-topology": "2x2x1"})
    result, patched = migrate(original)
    assert request_of(result.claims[0])["deviceClassName"] == "tpu.google.com"
    assert patched["spec"]["nodeSelector"] == {"cloud.google.com/gke-tpu-topology": "2x2x1"}


def test_resources_of_two_gpu_device_plugins_in_one_container_are_an_error():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/vcuda-core": 50, "aliyun.com/gpu-mem": 2})))
    assert result.patch == () and "different GPU device plugins" in result.errors[0].message


# --- node constraints -----------------------------------------------------------------------------

def selectors_of(result):
    return [s["cel"]["expression"] for s in request_of(result.claims[0]).get("selectors", [])]


def test_gfd_product_node_selector_moves_into_a_guarded_device_selector():
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}),
                                  node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
                                                 "pool": "gpu"}))
    (expr,) = selectors_of(result)
    assert '"productName" in device.attributes["gpu.nvidia.com"] &&' in expr
    assert '== "A100-SXM4-40GB"' in expr
    assert patched["spec"]["nodeSelector"] == {"pool": "gpu"}
    record = json.loads(patched["metadata"]["annotations"][ORIGINAL_RESOURCES_ANNOTATION])
    assert record["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}


def test_required_affinity_on_family_and_memory_becomes_selectors_and_is_removed():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.family", "operator": "In", "values": ["ampere"]},
                              {"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["40000"]}]}]}}}
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}), affinity=affinity))
    exprs = selectors_of(result)
    assert any('architecture == "Ampere"' in e for e in exprs)  # GFD 'ampere' is the driver's 'Ampere'
    assert any('memory.compareTo(quantity("40000Mi")) > 0' in e for e in exprs)
    assert "affinity" not in patched["spec"]
    assert_valid(patched)


def test_affinity_terms_mixing_gpu_and_other_labels_are_kept_with_a_warning():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}), affinity=affinity))
    assert patched["spec"]["affinity"] == affinity
    assert any("kept as is" in n.message for n in result.warnings)


def test_gke_accelerator_stays_on_the_node_and_also_selects_the_device():
    result, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}),
                                  node_selector={"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}))
    assert patched["spec"]["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    assert any('contains("H100")' in e for e in selectors_of(result))


def test_selectors_never_name_attributes_the_driver_removed():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]}]}]}}}
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}), affinity=affinity,
                            node_selector={"nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "16384"}))
    for expr in selectors_of(result):
        assert ".index" not in expr and ".minor" not in expr


def test_hami_card_type_annotation_becomes_a_product_selector():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}), annotations={"nvidia.com/use-gputype": "A100,V100"}))
    (expr,) = selectors_of(result)
    assert 'contains("A100")' in expr and 'contains("V100")' in expr


# --- containers, DRA neighbours, API versions -----------------------------------------------------

def test_an_init_container_reuses_the_main_containers_claim_of_the_same_shape():
    _, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}), init=[ctr("warmup", limits={"nvidia.com/gpu": 1})]))
    assert patched["spec"]["initContainers"][0]["resources"]["claims"] == [{"name": "main-gpu"}]
    assert len(patched["spec"]["resourceClaims"]) == 1


def test_a_sidecar_gets_its_own_claim_because_it_runs_beside_the_main_container():
    sidecar = ctr("side", limits={"nvidia.com/gpu": 1}, restartPolicy="Always")
    _, patched = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}), init=[sidecar]))
    assert len(patched["spec"]["resourceClaims"]) == 2


def test_existing_dra_claims_are_kept_and_new_ones_are_appended():
    existing = [{"name": "imex", "resourceClaimTemplateName": "imex-channel"}]
    c = ctr(limits={"nvidia.com/gpu": 4})
    c["resources"]["claims"] = [{"name": "imex"}]
    _, patched = migrate(pod(c, claims=existing))
    assert patched["spec"]["resourceClaims"][0] == existing[0]
    assert patched["spec"]["containers"][0]["resources"]["claims"] == [{"name": "imex"}, {"name": "main-gpu"}]


def test_a_pod_already_on_dra_is_left_alone():
    c = ctr()
    c["resources"] = {"claims": [{"name": "gpu"}]}
    result = translate_pod_template(pod(c, claims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]))
    assert result.patch == () and result.claims == ()


@pytest.mark.parametrize("api, version", [(ApiVersion.V1, "1.34"), (ApiVersion.V1, "1.35"),
                                          (ApiVersion.V1BETA2, "1.33"), (ApiVersion.V1BETA1, "1.32")])
def test_claims_validate_strictly_for_their_kubernetes_version(api, version):
    original = pod(ctr(limits={"nvidia.com/mig-1g.10gb": 1}), ctr("b", limits={"nvidia.com/gpu": 2}),
                   node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    result, patched = migrate(original, api_version=api)
    for claim in result.claims:
        manifest = claim.manifest("ml")
        assert manifest["apiVersion"] == api.value
        assert_valid(manifest, version)
    assert_valid(patched, version)


def test_v1beta1_puts_request_fields_flat_and_cannot_share_by_capacity():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": "500m"})), api_version=ApiVersion.V1BETA1,
                        gpu_memory="80Gi")
    req = result.claims[0].claim_spec["devices"]["requests"][0]
    assert "exactly" not in req and req["deviceClassName"] == "gpu.nvidia.com"
    assert any("resource.k8s.io/v1" in n.message for n in result.warnings)


def test_extended_resource_mode_leaves_plain_integer_gpus_to_the_scheduler():
    result = translate_pod_template(pod(ctr(limits={"nvidia.com/gpu": 1})),
                                    TranslateOptions(integer_gpus=IntegerGpuMode.EXTENDED_RESOURCE))
    assert result.patch == () and any("KEP-5004" in n.message for n in result.notes)


def test_extended_resource_mode_still_rewrites_what_it_cannot_express():
    options = dict(integer_gpus=IntegerGpuMode.EXTENDED_RESOURCE)
    fractional, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": "500m"})), **options)
    selected, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": 1}),
                              node_selector={"nvidia.com/gpu.product": "Tesla-T4"}), **options)
    mig, _ = migrate(pod(ctr(limits={"nvidia.com/mig-1g.10gb": 1})), **options)
    assert fractional.claims and selected.claims and mig.claims


def test_gpus_asked_for_only_by_annotation_get_a_warning_not_a_rewrite():
    result = translate_pod_template(pod(ctr(), annotations={"gpu-fraction": "0.5"}))
    assert result.patch == () and "only by annotation" in result.warnings[0].message


def test_unsupported_accelerators_are_reported_and_left_alone():
    result = translate_pod_template(pod(ctr(limits={"cloud-tpus.google.com/v2": 8})))
    assert result.patch == () and "no DRA driver" in result.warnings[0].message


def test_hami_full_compute_means_whole_gpus():
    result, _ = migrate(pod(ctr(limits={"nvidia.com/gpu": 2, "nvidia.com/gpumem": 3000, "nvidia.com/gpucores": 100})))
    assert request_of(result.claims[0]) == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
                                            "count": 2}


def test_ack_gpu_count_alone_is_whole_gpus_and_with_memory_spreads_it():
    whole, _ = migrate(pod(ctr(limits={"aliyun.com/gpu-count": 2})))
    assert request_of(whole.claims[0])["count"] == 2 and "capacity" not in request_of(whole.claims[0])
    spread, _ = migrate(pod(ctr(limits={"aliyun.com/gpu-count": 2, "aliyun.com/gpu-mem": 8})))
    assert request_of(spread.claims[0])["capacity"] == {"requests": {"memory": "4Gi"}}
