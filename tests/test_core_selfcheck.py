"""The core never hands out a device selector that Kubernetes cannot compile.

Kubernetes compiles every `selectors[].cel.expression` of a claim (template) when it is created
(k8s.io/dynamic-resource-allocation/cel, used by the API server's validation): one that does not
type-check makes the object invalid, so the webhook's pod would be denied and migrate's manifest
would never apply.  The core type-checks what it wrote with the project's DRA CEL environment and
turns a failure into an ERROR note with the template left unchanged.
"""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.cel import compile_selector
from kubectl_gpu.core import ApiVersion, Severity, Sharing, TranslateOptions, translate_pod_template
from kubectl_gpu.core import node_constraints
from kubectl_gpu.core.families import LEGACY_RESOURCE_NAMES
from kubectl_gpu.core.selfcheck import selectors_of

# The historical bug (issue 9): `!` binds tighter than `==`, so this compares a bool with a string.
BROKEN = '!device.attributes["gpu.nvidia.com"].uuid == "GPU-1"'


def gpu_pod(node_selector=None, annotations=None, limits=None):
    return {"metadata": {"annotations": annotations or {}},
            "spec": {"nodeSelector": node_selector or {},
                     "containers": [{"name": "c", "resources": {"limits": limits or {"nvidia.com/gpu": 1}}}]}}


def test_a_selector_that_does_not_compile_is_an_error_and_the_template_is_left_alone(monkeypatch):
    monkeypatch.setattr(node_constraints, "_product_condition", lambda value: BROKEN)
    result = translate_pod_template(gpu_pod({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}))
    assert not result.patch and not result.claims
    (error,) = result.errors
    assert "does not compile" in error.message and BROKEN in error.message and "bug" in error.message


def test_without_a_bug_the_same_pod_is_rewritten():
    result = translate_pod_template(gpu_pod({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}))
    assert result.patch and not result.errors


# --- property: whatever the legacy pod and its node constraints, every selector compiles ---------

# Label and annotation values as people (and templating tools) write them: quotes, backslashes,
# CEL operators and non-ASCII text must all end up inside string literals.
text = st.one_of(
    st.sampled_from(["NVIDIA-A100-SXM4-40GB", "A100-SXM4-40GB-MIG-1g.5gb", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gbme",
                     "Tesla-T4-SHARED", "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "81559", "40960", "ada-lovelace",
                     "hopper", "rubin", "nvidia-h100-80gb", "nvidia-l4", "GPU-0d1b", "A100,H100", ",", "",
                     'a"b', "a\\b", "x' || true || '", "${GPU}", "{{ .gpu }}", "GPU-ü", "1g.10gb+me.all"]),
    st.text(alphabet=string.printable + "üé中", max_size=20),
)
quantities = st.one_of(st.integers(-1, 1000), st.sampled_from(["500m", "0.5", "1.5", "2", "1Gi", "abc", ""]))
mig_names = st.sampled_from(["1g.5gb", "1g.10gb.me", "1g.10gb.me.all", "1g.20gb.gfx", "1g.10gb-me", "1c.2g.20gb",
                             "3g.40gb", "7g.80gb", "huge", "1g.10gb.xx"]).map(lambda p: f"nvidia.com/mig-{p}")
resource_names = st.one_of(st.sampled_from(sorted(LEGACY_RESOURCE_NAMES)), mig_names,
                           st.sampled_from(["hygon.com/dcunum", "huawei.com/Ascend910", "amd.com/gpu", "cpu"]))
node_label_keys = st.sampled_from(["nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.family",
                                   "cloud.google.com/gke-accelerator", "nvidia.com/gpu.count", "zone"])
hami_keys = st.sampled_from(["nvidia.com/use-gputype", "nvidia.com/nouse-gputype", "nvidia.com/use-gpuuuid",
                             "nvidia.com/nouse-gpuuuid", "nvidia.com/vcuda-core-limit"])


@st.composite
def affinities(draw):
    terms = draw(st.lists(st.fixed_dictionaries({"matchExpressions": st.lists(st.fixed_dictionaries({
        "key": node_label_keys,
        "operator": st.sampled_from(["In", "NotIn", "Exists", "Gt", "Lt", "DoesNotExist"]),
        "values": st.lists(text, max_size=3)}), min_size=1, max_size=3)}), min_size=1, max_size=3))
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


@st.composite
def legacy_pods(draw):
    containers = []
    for index in range(draw(st.integers(1, 3))):
        limits = draw(st.dictionaries(resource_names, quantities, min_size=1, max_size=3))
        containers.append({"name": f"c{index}", "resources": {"limits": limits}})
    spec = {"containers": containers, "nodeSelector": draw(st.dictionaries(node_label_keys, text, max_size=3))}
    if draw(st.booleans()):
        spec["affinity"] = draw(affinities())
    annotations = draw(st.dictionaries(hami_keys, text, max_size=3))
    return {"metadata": {"annotations": annotations}, "spec": spec}


options = st.builds(TranslateOptions, api_version=st.sampled_from(list(ApiVersion)),
                    sharing=st.sampled_from(list(Sharing)), gpu_memory=st.sampled_from([None, "80Gi"]),
                    sharing_group=st.sampled_from([None, "Deployment/web"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(legacy_pods(), options)
def test_every_selector_the_core_emits_compiles_in_the_dra_cel_environment(pod, opts):
    result = translate_pod_template(pod, opts)
    for claim in result.claims:
        for expression in selectors_of(claim):
            compile_selector(expression)  # raises CelCompileError on a broken selector
    assert not any("does not compile" in n.message for n in result.notes if n.severity is Severity.ERROR)
