"""Properties the translation core keeps for any pod template, legacy or not."""

from __future__ import annotations

import copy

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.core import (IntegerGpuMode, Sharing, TargetDriver, TranslateOptions, has_legacy_gpu_request,
                              is_plain_integer_gpu, legacy_requests, translate_pod_template)

LEGACY = {
    "nvidia.com/gpu": st.sampled_from([0, 1, 2, 8, "1", "500m", 0.5, "0.25", "1.5", "abc"]),
    "nvidia.com/vcuda-core": st.sampled_from([0, 25, 50, 100, 150, 200]),
    "nvidia.com/vcuda-memory": st.sampled_from([256, 1024, 4096]),
    "tencent.com/vcuda-core": st.sampled_from([50, 100]),
    "tencent.com/vcuda-memory": st.sampled_from([4, 30]),
    "nvidia.com/mig-1g.10gb": st.sampled_from([1, 2]),
    "nvidia.com/mig-3g.40gb": st.sampled_from([1]),
    "nvidia.com/gpumem": st.sampled_from([1000, 3000]),
    "nvidia.com/gpucores": st.sampled_from([30, 100, 120]),
    "aliyun.com/gpu-mem": st.sampled_from([2, 16, 16276]),
    "google.com/tpu": st.sampled_from([4, 8]),
    "cpu": st.sampled_from(["1", "500m"]),
    "memory": st.sampled_from(["1Gi"]),
}

resource_maps = st.dictionaries(st.sampled_from(sorted(LEGACY)), st.none(), max_size=4).flatmap(
    lambda keys: st.fixed_dictionaries({k: LEGACY[k] for k in keys}))


@st.composite
def containers(draw, prefix):
    limits = draw(resource_maps)
    requests = draw(st.one_of(st.none(), st.just(dict(limits)), resource_maps))
    container = {"name": f"{prefix}{draw(st.integers(0, 3))}", "image": "x"}
    resources = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    if resources:
        container["resources"] = resources
    if prefix == "init" and draw(st.booleans()):
        container["restartPolicy"] = "Always"
    return container


@st.composite
def pod_templates(draw):
    main = draw(st.lists(containers("c"), min_size=1, max_size=3, unique_by=lambda c: c["name"]))
    init = draw(st.lists(containers("init"), max_size=2, unique_by=lambda c: c["name"]))
    spec = {"containers": main}
    if init:
        spec["initContainers"] = init
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(st.dictionaries(
            st.sampled_from(["nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.family",
                             "cloud.google.com/gke-accelerator", "pool"]),
            st.sampled_from(["NVIDIA-A100-SXM4-40GB", "40960", "ampere", "nvidia-l4", "gpu",
                             "A100-SXM4-40GB-MIG-1g.5gb"]), max_size=3))
    template = {"spec": spec}
    if draw(st.booleans()):
        template["metadata"] = {"annotations": draw(st.dictionaries(
            st.sampled_from(["a", "nvidia.com/use-gputype", "tencent.com/vcuda-core-limit"]),
            st.sampled_from(["A100", "50", "x"]), max_size=2))}
    return template


options = st.builds(TranslateOptions, sharing=st.sampled_from(list(Sharing)),
                    gpu_memory=st.sampled_from([None, "80Gi"]),
                    sharing_group=st.sampled_from([None, "Deployment/web"]),
                    integer_gpus=st.sampled_from(list(IntegerGpuMode)),
                    pass_through_families=st.sampled_from([frozenset(), frozenset({"tpu"})]),
                    target_driver=st.sampled_from(list(TargetDriver)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_templates(), options)
def test_translation_is_idempotent_pure_and_leaves_no_legacy_gpu_behind(template, opts):
    snapshot = copy.deepcopy(template)
    result = translate_pod_template(template, opts)
    assert template == snapshot, "the input is never modified"
    assert translate_pod_template(template, opts) == result, "same input, same answer"
    assert result.legacy == tuple(legacy_requests(template)), "it reports every legacy request it read"
    if result.errors:
        assert result.patch == () and result.claims == ()
        assert result.remaining == result.legacy
        return
    patched = jsonpatch.apply_patch(template, list(result.patch))
    assert result.remaining == tuple(legacy_requests(patched)), "it knows what it left behind"
    assert translate_pod_template(patched, opts).patch == (), "translating the result changes nothing"
    if result.patch and not opts.pass_through_families and opts.integer_gpus is IntegerGpuMode.REWRITE:
        assert not has_legacy_gpu_request(patched)
    for left in result.remaining if result.patch else ():
        assert left.family in opts.pass_through_families or (
            opts.integer_gpus is IntegerGpuMode.EXTENDED_RESOURCE and is_plain_integer_gpu(left)), left
    referenced = {e.get("resourceClaimTemplateName") or e.get("resourceClaimName")
                  for e in patched["spec"].get("resourceClaims", [])}
    assert referenced == {claim.name for claim in result.claims}, "every reference has its object"
    declared = {e["name"] for e in patched["spec"].get("resourceClaims", [])}
    for field in ("containers", "initContainers"):
        for c in patched["spec"].get(field, []):
            for ref in c.get("resources", {}).get("claims", []):
                assert ref["name"] in declared
