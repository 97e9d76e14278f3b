"""Specification: pods that keep legacy GPU requests never share GPUs with the DRA driver.

Nodes labelled ``ack.node.gpu.schedule=disabled`` (configurable) run the NVIDIA DRA driver.
A pod with legacy GPU requests is fenced off them with required node affinity, denied when it
is pinned to one, and denied when one container asks for GPUs both ways.  The optional node
status guard strips legacy GPU capacity from DRA nodes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonpatch
import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubectl_gpu.manifests.locate import find_pod_sites
from kubectl_gpu.manifests.tree_patch import resolve
from tests.corpus import corpus_files, corpus_params, requires_corpus
from webhook.config import ConfigError, load_config
from webhook.fencing import (
    DEFAULT_DRA_NODE_SELECTORS,
    DraNodeSelector,
    escape_pointer,
    fence_legacy_pod,
    is_dra_node,
    legacy_gpu_resources,
    pinned_to_dra_node,
    strip_legacy_capacity,
)

DRA_KEY, DRA_VALUE = "ack.node.gpu.schedule", "disabled"
ACK = (DraNodeSelector(DRA_KEY, DRA_VALUE),)
DRA_LABELS = {DRA_KEY: DRA_VALUE}
DATA = Path(__file__).parent / "data" / "manifests"
A4X_JOBSET = DATA / "gpu-beside-dra-claims-jobset.yaml"
MIG_NODE = DATA / "mig-node.yaml"


# --- helpers: corpus pods and Kubernetes' node-affinity semantics ---------------------------


def _documents(path: Path) -> Iterator[Mapping[str, Any]]:
    # Split by hand: a few upstream files have one unparsable document among good ones.
    for chunk in re.split(r"(?m)^---\s*$", path.read_text()):
        try:
            document = yaml.safe_load(chunk)
        except yaml.YAMLError:
            continue
        if isinstance(document, Mapping):
            yield document


def _pod_specs(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every pod spec in a manifest (Pods, workload templates, CRDs embedding templates), found as
    `kubectl gpu migrate` finds them."""
    for site in find_pod_sites(node):
        yield resolve(node, site.spec_pointer)


def _pod(spec: Mapping[str, Any], name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": copy.deepcopy(spec)}


def _corpus_gpu_pods() -> list[Any]:
    pods = []
    for path in corpus_files("legacy"):
        for doc_index, document in enumerate(_documents(path)):
            for spec_index, spec in enumerate(_pod_specs(document)):
                pod = _pod(spec)
                if legacy_gpu_resources(pod):
                    pods.append(pytest.param(pod, id=f"{path.stem[:60]}-{doc_index}-{spec_index}"))
    return pods


CORPUS_GPU_PODS = _corpus_gpu_pods()


def _strict_errors(pod: Mapping[str, Any]) -> str | None:
    try:
        kubernetes_validate.validate(pod, "1.34", strict=True)
    except kubernetes_validate.ValidationError as error:
        return str(error).split("\n", 1)[0]
    return None


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError):
            return False
        return have > want if operator == "Gt" else have < want
    raise AssertionError(f"unknown operator {operator}")


def schedulable_on(pod: Mapping[str, Any], labels: Mapping[str, str], name: str = "node-1") -> bool:
    """Kubernetes' NodeAffinity filter: nodeSelector AND (any required term)."""
    spec = pod["spec"]
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    for term in required.get("nodeSelectorTerms") or []:
        if not term or not (term.get("matchExpressions") or term.get("matchFields")):
            continue  # an empty term matches no node
        fields_ok = all(
            _expression_matches({**f, "key": "name"}, {"name": name}) for f in term.get("matchFields") or [])
        if fields_ok and all(_expression_matches(e, labels) for e in term.get("matchExpressions") or []):
            return True
    return False


def _labels_satisfying(pod: Mapping[str, Any]) -> list[dict[str, str]]:
    """Node label sets that the pod's own constraints accept, one per affinity term."""
    spec = pod["spec"]
    base = {k: str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution")) or {}
    candidates = [dict(base)]
    for term in required.get("nodeSelectorTerms") or []:
        labels = dict(base)
        for expression in (term or {}).get("matchExpressions") or []:
            key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
            if operator == "In":
                labels[key] = values[0]
            elif operator == "Exists":
                labels[key] = "yes"
            elif operator == "Gt":
                labels[key] = str(int(values[0]) + 1)
            elif operator == "Lt":
                labels[key] = str(int(values[0]) - 1)
        candidates.append(labels)
    return candidates


def _gpu_pod(**spec: Any) -> dict[str, Any]:
    container = {"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return _pod({"containers": [container], **spec})


# --- fencing -------------------------------------------------------------------------------


@requires_corpus
def test_the_corpus_has_real_gpu_pods_to_fence() -> None:
    assert len(CORPUS_GPU_PODS) >= 50


@pytest.mark.parametrize("pod", corpus_params(CORPUS_GPU_PODS))
def test_every_corpus_gpu_pod_is_fenced_off_dra_nodes_and_stays_a_valid_pod(pod: dict[str, Any]) -> None:
    ops = fence_legacy_pod(pod, ACK)
    assert ops, "a pod with legacy GPU requests must be fenced"
    patched = jsonpatch.apply_patch(pod, ops)

    if _strict_errors(pod) is None:
        assert _strict_errors(patched) is None
    assert fence_legacy_pod(patched, ACK) == []  # idempotent: a re-invoked webhook adds nothing
    assert pinned_to_dra_node(patched, ACK) == []
    for labels in _labels_satisfying(pod):
        non_dra = {k: v for k, v in labels.items() if k != DRA_KEY}
        assert not schedulable_on(patched, {**non_dra, **DRA_LABELS}), "still schedulable on a DRA node"
        assert schedulable_on(patched, non_dra) == schedulable_on(pod, non_dra), "fence changed non-DRA placement"


def test_fence_creates_the_whole_affinity_when_the_pod_has_none() -> None:
    ops = fence_legacy_pod(_gpu_pod(), ACK)
    assert ops == [{
        "op": "add", "path": "/spec/affinity",
        "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": DRA_KEY, "operator": "NotIn", "values": [DRA_VALUE]}]}]}}},
    }]


def test_fence_keeps_pod_affinity_and_adds_only_node_affinity() -> None:
    pod_affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    pod = _gpu_pod(affinity=copy.deepcopy(pod_affinity))
    patched = jsonpatch.apply_patch(pod, fence_legacy_pod(pod, ACK))
    assert patched["spec"]["affinity"]["podAntiAffinity"] == pod_affinity["podAntiAffinity"]
    assert not schedulable_on(patched, DRA_LABELS)
    assert schedulable_on(patched, {})


def test_fence_adds_the_exclusion_to_every_ored_term() -> None:
    terms = [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]},
    ]
    pod = _gpu_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}})
    patched = jsonpatch.apply_patch(pod, fence_legacy_pod(pod, ACK))
    assert _strict_errors(patched) is None
    assert not schedulable_on(patched, {"gpu": "a100", **DRA_LABELS})
    assert not schedulable_on(patched, DRA_LABELS, name="node-1")
    assert schedulable_on(patched, {"gpu": "a100"})
    assert schedulable_on(patched, {}, name="node-1")


def test_fence_leaves_an_empty_term_alone_because_it_matches_no_node() -> None:
    pod = _gpu_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{}, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}})
    patched = jsonpatch.apply_patch(pod, fence_legacy_pod(pod, ACK))
    required = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms = required["nodeSelectorTerms"]
    assert terms[0] == {}
    assert {"key": DRA_KEY, "operator": "NotIn", "values": [DRA_VALUE]} in terms[1]["matchExpressions"]


def test_a_term_that_requires_the_dra_label_is_fenced_too() -> None:
    """Such a pod is also denied as pinned; if the deny is in audit mode, it must still stay off."""
    pod = _gpu_pod(affinity=copy.deepcopy(_REQUIRES_DRA))
    patched = jsonpatch.apply_patch(pod, fence_legacy_pod(pod, ACK))
    assert not schedulable_on(patched, DRA_LABELS)


def test_fence_does_nothing_when_the_pod_already_avoids_dra_nodes() -> None:
    by_selector = _gpu_pod(nodeSelector={DRA_KEY: "enabled"})
    by_affinity = _gpu_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": DRA_KEY, "operator": "DoesNotExist"}]}]}}})
    assert fence_legacy_pod(by_selector, ACK) == []
    assert fence_legacy_pod(by_affinity, ACK) == []


def test_pods_without_a_legacy_gpu_request_are_not_fenced() -> None:
    cpu_only = _pod({"containers": [{"name": "c", "image": "busybox"}]})
    zero_gpu = _pod({"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"limits": {"nvidia.com/gpu": "0"}}}]})
    tpu = _pod({"containers": [{"name": "c", "image": "busybox",
                                "resources": {"limits": {"google.com/tpu": "4"}}}]})
    dra = _pod({"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]})
    for pod in (cpu_only, zero_gpu, tpu, dra):
        assert fence_legacy_pod(pod, ACK) == []


@pytest.mark.parametrize("resource", [
    "nvidia.com/gpu", "alpha.kubernetes.io/nvidia-gpu", "nvidia.com/vcuda-core", "nvidia.com/vcuda-memory",
    "tencent.com/vcuda-core", "tencent.com/vcuda-memory", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.40gb",
    "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores", "nvidia.com/vgpu-number",
    "nvidia.com/vgpu-cores", "nvidia.com/vgpu-memory", "aliyun.com/gpu-mem", "aliyun.com/gpu-count",
    "aliyun.com/gpu-core.percentage", "volcano.sh/vgpu-number", "volcano.sh/gpu-memory", "volcano.sh/gpu-number",
    "koordinator.sh/gpu", "koordinator.sh/gpu.shared", "koordinator.sh/gpu-core", "koordinator.sh/gpu-memory",
    "koordinator.sh/gpu-memory-ratio",
])
def test_every_legacy_gpu_family_gets_fenced(resource: str) -> None:
    pod = _pod({"initContainers": [{"name": "warmup", "image": "busybox",
                                    "resources": {"limits": {resource: "2"}}}],
                "containers": [{"name": "c", "image": "busybox"}]})
    assert fence_legacy_pod(pod, ACK)


def test_fence_honours_several_configured_selectors_including_key_only_ones() -> None:
    selectors = (DraNodeSelector(DRA_KEY, DRA_VALUE), DraNodeSelector("nvidia.com/dra.enabled"),
                 DraNodeSelector("pool", "dra-a"), DraNodeSelector("pool", "dra-b"))
    patched = jsonpatch.apply_patch(_gpu_pod(), fence_legacy_pod(_gpu_pod(), selectors))
    assert _strict_errors(patched) is None
    for dra_node in (DRA_LABELS, {"nvidia.com/dra.enabled": "false"}, {"pool": "dra-a"}, {"pool": "dra-b"}):
        assert not schedulable_on(patched, dra_node)
    assert schedulable_on(patched, {"pool": "legacy", DRA_KEY: "enabled"})


# hypothesis: random affinities, random nodes -------------------------------------------------

_KEYS = [DRA_KEY, "zone", "gpu"]
_VALUES = [DRA_VALUE, "enabled", "a", "b"]
_expressions = st.builds(
    lambda key, operator, values: {"key": key, "operator": operator,
                                   **({"values": values} if operator in ("In", "NotIn") else {})},
    st.sampled_from(_KEYS), st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
    st.lists(st.sampled_from(_VALUES), min_size=1, max_size=3, unique=True),
)
_terms = st.one_of(
    st.just({}),
    st.builds(lambda e: {"matchExpressions": e}, st.lists(_expressions, max_size=3)),
    st.builds(lambda e: {"matchExpressions": e, "matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}, st.lists(_expressions, max_size=2)),
)
_affinities = st.one_of(
    st.none(),
    st.just({}),
    st.just({"nodeAffinity": None}),
    st.just({"nodeAffinity": {}}),
    st.builds(lambda t: {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": t}}},
              st.lists(_terms, min_size=1, max_size=3)),
)
_labels = st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=3)


_REQUIRES_DRA = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": DRA_KEY, "operator": "In", "values": [DRA_VALUE]}]}]}}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(affinity=_affinities, node=_labels, node_selector=st.one_of(st.none(), _labels))
@example(affinity=_REQUIRES_DRA, node=DRA_LABELS, node_selector=None)
def test_fencing_any_affinity_excludes_dra_nodes_keeps_other_nodes_and_is_idempotent(
        affinity: Any, node: dict[str, str], node_selector: dict[str, str] | None) -> None:
    spec: dict[str, Any] = {}
    if affinity is not None:
        spec["affinity"] = affinity
    if node_selector:
        spec["nodeSelector"] = node_selector
    pod = _gpu_pod(**spec)
    patched = jsonpatch.apply_patch(pod, fence_legacy_pod(pod, ACK))

    assert fence_legacy_pod(patched, ACK) == []
    if is_dra_node(node, ACK):
        assert not schedulable_on(patched, node)
    else:
        assert schedulable_on(patched, node) == schedulable_on(pod, node)


# --- denials: pinned to a DRA node ------------------------------------------------------------


def test_node_name_of_a_dra_node_is_denied_when_its_labels_are_known() -> None:
    pod = _gpu_pod(nodeName="gpu-node-7")
    nodes = {"gpu-node-7": {DRA_KEY: DRA_VALUE, "kubernetes.io/hostname": "gpu-node-7"}}
    [reason] = pinned_to_dra_node(pod, ACK, nodes)
    assert "spec.nodeName 'gpu-node-7'" in reason and "nvidia.com/gpu" in reason
    assert pinned_to_dra_node(pod, ACK, {"gpu-node-7": {DRA_KEY: "enabled"}}) == []
    assert pinned_to_dra_node(pod, ACK, None) == []  # not judged without the node's labels


def test_node_selector_on_the_dra_label_is_denied() -> None:
    [reason] = pinned_to_dra_node(_gpu_pod(nodeSelector={DRA_KEY: DRA_VALUE}), ACK)
    assert "spec.nodeSelector" in reason and "ResourceClaim" in reason


def test_required_affinity_is_denied_only_when_every_term_leads_to_dra_nodes() -> None:
    dra_term = {"matchExpressions": [{"key": DRA_KEY, "operator": "In", "values": [DRA_VALUE]}]}
    other_term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}

    def with_terms(*terms: Any) -> dict[str, Any]:
        return _gpu_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": list(terms)}}})

    [reason] = pinned_to_dra_node(with_terms(dra_term), ACK)
    assert "required node affinity" in reason
    assert pinned_to_dra_node(with_terms(dra_term, other_term), ACK) == []  # terms are ORed
    mixed_values = {"matchExpressions": [{"key": DRA_KEY, "operator": "In", "values": [DRA_VALUE, "enabled"]}]}
    assert pinned_to_dra_node(with_terms(mixed_values), ACK) == []


def test_exists_pins_to_dra_nodes_when_the_selector_matches_any_value() -> None:
    pod = _gpu_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/dra", "operator": "Exists"}]}]}}})
    assert pinned_to_dra_node(pod, [DraNodeSelector("nvidia.com/dra")])
    assert pinned_to_dra_node(pod, [DraNodeSelector("nvidia.com/dra", "true")]) == []


def test_match_fields_naming_only_dra_nodes_pins_the_pod() -> None:
    pod = _gpu_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}]}}})
    assert pinned_to_dra_node(pod, ACK, {"n1": DRA_LABELS, "n2": DRA_LABELS})
    assert pinned_to_dra_node(pod, ACK, {"n1": DRA_LABELS, "n2": {}}) == []


def test_pods_without_legacy_gpus_are_never_reported_as_pinned() -> None:
    pod = _pod({"nodeSelector": {DRA_KEY: DRA_VALUE}, "containers": [
        {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 0}}}]})
    assert pinned_to_dra_node(pod, ACK) == []


# --- denials: the same GPUs asked for twice: the core's rule (tests/test_core_existing_claims.py) ---------


# --- node status guard ---------------------------------------------------------------------


def _mig_node(labels: Mapping[str, str]) -> dict[str, Any]:
    [node] = [d for d in _documents(MIG_NODE) if d.get("kind") == "Node"]
    node = copy.deepcopy(dict(node))
    node["metadata"]["labels"] = {**node["metadata"].get("labels", {}), **labels}
    return node


def test_legacy_gpu_capacity_is_stripped_from_a_dra_node_status() -> None:
    node = _mig_node(DRA_LABELS)
    ops = strip_legacy_capacity(node, ACK)
    assert {"op": "remove", "path": "/status/capacity/nvidia.com~1gpu"} in ops
    patched = jsonpatch.apply_patch(node, ops)

    for field in ("capacity", "allocatable"):
        remaining = patched["status"][field]
        assert not [r for r in remaining if r.startswith("nvidia.com/")]
        assert remaining["cpu"] == node["status"][field]["cpu"]
        assert remaining["memory"] == node["status"][field]["memory"]
    assert strip_legacy_capacity(patched, ACK) == []


def test_sharing_schedulers_gpu_capacity_is_stripped_from_a_dra_node_status_too() -> None:
    """Volcano's GPU share and Koordinator's device share advertise the same GPUs the DRA driver publishes."""
    shared = {"volcano.sh/gpu-memory": "89424", "volcano.sh/gpu-number": "8", "koordinator.sh/gpu-core": "800",
              "koordinator.sh/gpu-memory-ratio": "800", "koordinator.sh/gpu.shared": "800"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": DRA_LABELS},
            "status": {"capacity": {"cpu": "8", **shared}, "allocatable": {"cpu": "8", **shared}}}
    patched = jsonpatch.apply_patch(node, strip_legacy_capacity(node, ACK))
    assert patched["status"]["capacity"] == {"cpu": "8"} and patched["status"]["allocatable"] == {"cpu": "8"}


def test_other_nodes_keep_their_status() -> None:
    assert strip_legacy_capacity(_mig_node({}), ACK) == []
    assert strip_legacy_capacity(_mig_node({DRA_KEY: "enabled"}), ACK) == []


def test_json_pointer_tokens_escape_tilde_before_slash() -> None:
    assert escape_pointer("nvidia.com/gpu") == "nvidia.com~1gpu"
    assert escape_pointer("a~/b") == "a~0~1b"
    document = {"status": {"capacity": {"a~/b": "1", "a~1b": "2"}}}
    patched = jsonpatch.apply_patch(document, [{"op": "remove", "path": f"/status/capacity/{escape_pointer('a~/b')}"}])
    assert patched == {"status": {"capacity": {"a~1b": "2"}}}


# --- configuration ------------------------------------------------------------------------------


def _configured_selectors(tmp_path: Path, entries: Any) -> tuple[DraNodeSelector, ...]:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"draNodeSelectors": entries}))
    return load_config(str(path), {}, {}).dra_node_selectors


def test_selectors_come_from_configuration_and_bad_ones_say_what_to_fix(tmp_path: Path) -> None:
    assert load_config(None, {}, {}).dra_node_selectors == DEFAULT_DRA_NODE_SELECTORS == ACK
    assert _configured_selectors(tmp_path, [{"key": "pool"}, {"key": "pool"}]) == (DraNodeSelector("pool", None),)
    assert _configured_selectors(tmp_path, []) == ()  # no DRA nodes: nothing to fence or deny
    for bad, expected in [
        ([{"value": "x"}], "draNodeSelectors[0].key"),
        ([{"key": "k", "value": True}], "quote it"),
        ([{"key": "k", "value": 1}], "quote it"),
        ([{"key": "k", "values": ["x"]}], "unknown field(s) values"),
        ([{"key": "bad key!"}], "draNodeSelectors[0].key"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(expected)):
            _configured_selectors(tmp_path, bad)
