"""Keep legacy GPU requests and the DRA driver from handing out the same GPU twice.

Nodes that match a DRA node selector (by default ``ack.node.gpu.schedule=disabled``) run
the NVIDIA DRA driver.  If a device plugin there still advertises ``nvidia.com/gpu``, the
scheduler counts each GPU twice: once as an extended resource, once as a DRA device, and
two pods can be given one GPU.  These pure functions decide what to patch or deny; the
webhook server does the I/O (fetching node labels, sending patches).

Which resource names are legacy GPU requests comes from ``kubectl_gpu.core.families``
(the single table shared with ``migrate``); TPUs are not GPUs and are ignored here.  A legacy GPU
beside a GPU claim in one container is the core's verdict (``kubectl_gpu.core.gpus_asked_twice``),
so ``migrate`` refuses the same pod with the same words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_gpu.core import LegacyRequest, escape_pointer, family_of, legacy_requests
from kubectl_gpu.dra.quantity import QuantityError, parse_quantity
from kubectl_gpu.core.constants import TPU
from kubectl_gpu.dra.facts import DEFAULT_DRA_NODE_MARKERS, DraNodeMarker
from kubectl_gpu.dra.gpu_drivers import GPU_DRA_DRIVERS

__all__ = [
    "DraNodeSelector",
    "DEFAULT_DRA_NODE_SELECTORS",
    "is_dra_node",
    "is_legacy_gpu_resource",
    "legacy_gpu_resources",
    "fence_legacy_pod",
    "fence_driver_nodes",
    "pinned_to_dra_node",
    "pinned_node_names",
    "unfenced",
    "strip_legacy_capacity",
    "escape_pointer",
]

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
HOSTNAME_LABEL = "kubernetes.io/hostname"
_AFFINITY_PATH = "/spec/affinity"
_NODE_AFFINITY_PATH = f"{_AFFINITY_PATH}/nodeAffinity"
_REQUIRED_PATH = f"{_NODE_AFFINITY_PATH}/{_REQUIRED}"
_TERMS_PATH = f"{_REQUIRED_PATH}/nodeSelectorTerms"

# A node label that marks a DRA node (key=value, or key alone): one type, shared with describe/doctor.
DraNodeSelector = DraNodeMarker

DEFAULT_DRA_NODE_SELECTORS = DEFAULT_DRA_NODE_MARKERS

# What draNodeSelectors in the configuration reads into (webhook.config validates it).
Selectors = Sequence[DraNodeSelector]
# How a node without a DRA label is known to run a GPU DRA driver (GPU Operator installs and HAMi's
# chart label nothing).
DRIVER_NODE = f"it publishes ResourceSlices of a GPU DRA driver ({' or '.join(GPU_DRA_DRIVERS)})"
_NODE_NAME_FIELD = "metadata.name"
# extraLegacyResources: names a device plugin advertises that kubectl-gpu does not know as GPUs.
Extra = frozenset[str]
NO_EXTRA: Extra = frozenset()


def is_dra_node(labels: Mapping[str, str] | None, selectors: Selectors) -> bool:
    return bool(labels) and any(s.matches(labels) for s in selectors)


# --- legacy GPU requests --------------------------------------------------------------------


def is_legacy_gpu_resource(resource: str, extra: Extra = NO_EXTRA) -> bool:
    """True for device-plugin GPU resources (nvidia.com/gpu, vcuda, MIG, HAMi, ACK gpushare,
    vgpu-manager, and the ``extra`` names); false for TPUs and everything else."""
    family = family_of(resource)
    return (family is not None and family != TPU) or resource in extra


def _device_plugin_gpu_requests(pod: Mapping[str, Any]) -> list[LegacyRequest]:
    """The pod's legacy requests a GPU device plugin serves: non-zero, and not TPUs."""
    return [r for r in legacy_requests(pod) if r.family != TPU and r.amount > 0]


def legacy_gpu_resources(pod: Mapping[str, Any], extra: Extra = NO_EXTRA) -> list[str]:
    """The legacy GPU resources (and ``extra`` names) the pod asks for with a non-zero amount, sorted."""
    return sorted({r.name for r in _device_plugin_gpu_requests(pod)} | set(extra_requests(pod, extra)))


def extra_requests(pod: Mapping[str, Any], extra: Extra) -> list[str]:
    """The ``extra`` names a container or init container of the pod asks for with a non-zero amount
    (the limit wins over the request, as for every extended resource)."""
    spec = pod.get("spec")
    if not extra or not isinstance(spec, Mapping):
        return []
    found = []
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or ():
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if not isinstance(resources, Mapping):
                continue
            limits, requests = (r if isinstance(r, Mapping) else {} for r in
                                (resources.get("limits"), resources.get("requests")))
            for name in extra:
                amount = limits.get(name, requests.get(name))
                if amount is not None and _positive(amount):
                    found.append(name)
    return found


def _positive(amount: Any) -> bool:
    try:
        return parse_quantity(str(amount)) > 0
    except QuantityError:
        return True  # the API server refuses it; until then, treat it as asking for GPUs


# --- fencing: required node affinity that keeps a pod off DRA nodes ------------------------


def fence_legacy_pod(pod: Mapping[str, Any], selectors: Selectors, extra: Extra = NO_EXTRA) -> list[dict[str, Any]]:
    """JSON Patch ops (relative to the pod) that keep a pod with legacy GPU requests off
    DRA nodes.  Empty when the pod has none, or is already kept off.

    Required node affinity terms are ORed, so the exclusion is added to every term;
    applying the result and calling again yields no ops.  Call it on the pod as it will be
    admitted (after any rewrite).
    """
    wanted = tuple(selectors)
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or not legacy_gpu_resources(pod, extra):
        return []
    node_selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), Mapping) else {}
    # A nodeSelector that names another value of a DRA label already keeps the pod away.
    wanted = tuple(s for s in wanted if not _node_selector_excludes(node_selector, s))
    if not wanted:
        return []

    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return [_add(_AFFINITY_PATH, {"nodeAffinity": {_REQUIRED: _fresh_required(wanted)}})]
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, Mapping):
        return [_add(_NODE_AFFINITY_PATH, {_REQUIRED: _fresh_required(wanted)})]
    required = node_affinity.get(_REQUIRED)
    if not isinstance(required, Mapping):
        return [_add(_REQUIRED_PATH, _fresh_required(wanted))]
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return [_add(_TERMS_PATH, [{"matchExpressions": _exclusions(wanted)}])]

    ops: list[dict[str, Any]] = []
    for index, term in enumerate(terms):
        if not _term_selects_anything(term):
            continue  # an empty term matches no node; adding to it would widen it
        missing = tuple(s for s in wanted if not _term_excludes(term, s))
        if not missing:
            continue
        expressions = term.get("matchExpressions")
        term_path = f"{_TERMS_PATH}/{index}"
        if isinstance(expressions, list):
            ops.extend(_add(f"{term_path}/matchExpressions/-", e) for e in _exclusions(missing))
        else:
            ops.append(_add(f"{term_path}/matchExpressions", _exclusions(missing)))
    return ops


def fence_driver_nodes(pod: Mapping[str, Any], names: frozenset[str]) -> list[dict[str, Any]]:
    """JSON Patch ops keeping a pod with legacy GPU requests off the nodes named (nodes that publish
    the NVIDIA driver's ResourceSlices without a DRA label): ``metadata.name NotIn`` in every required
    term.  Empty when the pod has none, names are empty, or every term already keeps it off them."""
    spec = pod.get("spec")
    if not names or not isinstance(spec, Mapping) or not legacy_gpu_resources(pod):
        return []
    if isinstance(spec.get("nodeName"), str) and spec["nodeName"] not in names:
        return []  # placed elsewhere already: the scheduler is not involved
    exclusion = {"key": _NODE_NAME_FIELD, "operator": "NotIn", "values": sorted(names)}
    terms = _required_terms(spec)
    if not terms:
        required = {"nodeSelectorTerms": [{"matchFields": [exclusion]}]}
        affinity = spec.get("affinity")
        if not isinstance(affinity, Mapping):
            return [_add(_AFFINITY_PATH, {"nodeAffinity": {_REQUIRED: required}})]
        if not isinstance(affinity.get("nodeAffinity"), Mapping):
            return [_add(_NODE_AFFINITY_PATH, {_REQUIRED: required})]
        if not isinstance(affinity["nodeAffinity"].get(_REQUIRED), Mapping):
            return [_add(_REQUIRED_PATH, required)]
        return [_add(_TERMS_PATH, required["nodeSelectorTerms"])]
    ops = []
    for index, term in enumerate(terms):
        if not _term_selects_anything(term) or _term_excludes_names(term, names):
            continue
        fields = term.get("matchFields")
        path = f"{_TERMS_PATH}/{index}/matchFields"
        ops.append(_add(f"{path}/-", exclusion) if isinstance(fields, list) else _add(path, [exclusion]))
    return ops


def _term_excludes_names(term: Mapping[str, Any], names: frozenset[str]) -> bool:
    for field in term.get("matchFields") or []:
        if not isinstance(field, Mapping) or field.get("key") != _NODE_NAME_FIELD:
            continue
        values = set(field.get("values") or ())
        if field.get("operator") == "NotIn" and names <= values:
            return True
        if field.get("operator") == "In" and not values & names:
            return True
    return False


def _fresh_required(selectors: tuple[DraNodeSelector, ...]) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": _exclusions(selectors)}]}


def _exclusions(selectors: tuple[DraNodeSelector, ...]) -> list[dict[str, Any]]:
    """One expression per label key: DoesNotExist when any value marks a DRA node, else
    NotIn the DRA values (NotIn also matches nodes without the label)."""
    by_key: dict[str, list[str] | None] = {}
    for selector in selectors:
        if selector.value is None or by_key.get(selector.key, []) is None:
            by_key[selector.key] = None
        else:
            by_key.setdefault(selector.key, []).append(selector.value)  # type: ignore[union-attr]
    expressions = []
    for key, values in by_key.items():
        if values is None:
            expressions.append({"key": key, "operator": "DoesNotExist"})
        else:
            expressions.append({"key": key, "operator": "NotIn", "values": sorted(set(values))})
    return expressions


def _term_selects_anything(term: Any) -> bool:
    return isinstance(term, Mapping) and bool(term.get("matchExpressions") or term.get("matchFields"))


def _term_excludes(term: Mapping[str, Any], selector: DraNodeSelector) -> bool:
    """True when no node matching ``selector`` can satisfy this term."""
    for expression in term.get("matchExpressions") or []:
        if not isinstance(expression, Mapping) or expression.get("key") != selector.key:
            continue
        operator = expression.get("operator")
        values = expression.get("values") or []
        if operator == "DoesNotExist":
            return True
        if selector.value is not None:
            if operator == "NotIn" and selector.value in values:
                return True
            if operator == "In" and selector.value not in values:
                return True
    return False


def _node_selector_excludes(node_selector: Mapping[str, Any], selector: DraNodeSelector) -> bool:
    return (selector.value is not None and selector.key in node_selector
            and node_selector[selector.key] != selector.value)


# --- denials -----------------------------------------------------------------------------


def pinned_to_dra_node(
    pod: Mapping[str, Any],
    selectors: Selectors,
    node_labels_by_name: Mapping[str, Mapping[str, str]] | None = None,
    driver_nodes: frozenset[str] = frozenset(),
    extra: Extra = NO_EXTRA,
) -> list[str]:
    """Why a pod with legacy GPU requests can only run on a DRA node (empty: it is not).

    Looks at spec.nodeName and the other names of :func:`pinned_node_names` (needs those nodes'
    labels in ``node_labels_by_name``; without them names are not judged), spec.nodeSelector,
    and required node affinity (pinned only when every term can match DRA nodes alone, since
    terms are ORed).
    """
    wanted = tuple(selectors)
    spec = pod.get("spec")
    resources = legacy_gpu_resources(pod, extra)
    if not isinstance(spec, Mapping) or not resources:
        return []
    asked = ", ".join(resources)
    consequence = (f"{asked} is served by a device plugin there while the DRA driver owns the same "
                   "GPUs, so one GPU can go to two pods")
    fix = "move the GPU request to a ResourceClaim (kubectl gpu migrate) or target a non-DRA node"
    reasons = []

    node_name = spec.get("nodeName")
    if isinstance(node_name, str) and node_name and (node_labels_by_name is not None or node_name in driver_nodes):
        labels = (node_labels_by_name or {}).get(node_name)
        matched = _matching(labels, wanted) or (DRIVER_NODE if node_name in driver_nodes else None)
        if matched:
            reasons.append(
                f"spec.nodeName {node_name!r} is a DRA node ({matched}): {consequence}; a pod that names its "
                "node bypasses the scheduler, which is what allocates ResourceClaims, so it cannot be moved to "
                "DRA as it is: target a non-DRA node, or drop spec.nodeName (select the node with nodeSelector "
                "kubernetes.io/hostname) and move the GPU request to a ResourceClaim (kubectl gpu migrate)")

    node_selector = spec.get("nodeSelector")
    hostname = node_selector.get(HOSTNAME_LABEL) if isinstance(node_selector, Mapping) else None
    if isinstance(hostname, str) and (node_labels_by_name is not None or hostname in driver_nodes):
        matched = (_matching(_host_labels(hostname, node_labels_by_name or {}), wanted)
                   or (DRIVER_NODE if hostname in driver_nodes else None))
        if matched:
            reasons.append(f"spec.nodeSelector {HOSTNAME_LABEL}={hostname} selects a DRA node ({matched}): "
                           f"{consequence}; {fix}")
    if isinstance(node_selector, Mapping):
        for selector in wanted:
            if selector.key in node_selector and (
                    selector.value is None or node_selector[selector.key] == selector.value):
                reasons.append(
                    f"spec.nodeSelector {selector.key}={node_selector[selector.key]} selects only DRA "
                    f"nodes: {consequence}; {fix}")
                break

    terms = _required_terms(spec)
    live_terms = [t for t in terms if _term_selects_anything(t)]
    if live_terms and all(_term_only_dra(t, wanted, node_labels_by_name) for t in live_terms):
        named = [n for n, labels in (node_labels_by_name or {}).items() if _matching(labels, wanted)]
        which = f"DRA nodes {', '.join(repr(n) for n in named)}" if named else "DRA nodes"
        reasons.append(
            f"required node affinity matches only {which} ({', '.join(s.render() for s in wanted)}): "
            f"{consequence}; {fix}")
    return reasons


def unfenced(pod: Mapping[str, Any], selectors: Selectors, extra: Extra = NO_EXTRA) -> list[str]:
    """Why a pod with legacy GPU requests may land on a DRA node although it names no node (empty:
    it is kept off them).  /mutate fences every such pod; one that arrives unfenced skipped it
    (failurePolicy Ignore during an outage) or a later webhook changed its affinity."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or spec.get("nodeName"):
        return []  # a pod that names its node is judged by pinned_to_dra_node
    missing = fence_legacy_pod(pod, selectors, extra)
    if not missing:
        return []
    wanted = tuple(selectors)
    expressions = json.dumps(_exclusions(wanted), separators=(", ", ": "))
    return [
        f"nothing keeps this pod off DRA nodes ({', '.join(s.render() for s in wanted)}) although it asks the "
        f"device plugin for {', '.join(legacy_gpu_resources(pod, extra))}, and the DRA driver owns the same GPUs there: add "
        f"{expressions} to the matchExpressions of every term of spec.affinity.nodeAffinity.{_REQUIRED}"
        ".nodeSelectorTerms (kubectl-gpu's mutating webhook adds them; it was skipped, or a later webhook "
        "changed the affinity), or move the GPU request to a ResourceClaim (kubectl gpu migrate)"]


def pinned_node_names(pod: Mapping[str, Any], limit: int = 16) -> list[str]:
    """The nodes a pod names (spec.nodeName, nodeSelector kubernetes.io/hostname, required affinity
    on ``metadata.name`` as the DaemonSet controller pins its pods, or on the hostname label):
    whose labels :func:`pinned_to_dra_node` needs.  At most ``limit``: each is an API read."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return []
    names: list[Any] = [spec.get("nodeName")]
    node_selector = spec.get("nodeSelector")
    if isinstance(node_selector, Mapping):
        names.append(node_selector.get(HOSTNAME_LABEL))
    for term in _required_terms(spec):
        if not isinstance(term, Mapping):
            continue
        for part, key in (("matchFields", "metadata.name"), ("matchExpressions", HOSTNAME_LABEL)):
            for requirement in term.get(part) or []:
                if (isinstance(requirement, Mapping) and requirement.get("key") == key
                        and requirement.get("operator") == "In" and isinstance(requirement.get("values"), list)):
                    names.extend(requirement["values"])
    found = [n for n in dict.fromkeys(n for n in names if isinstance(n, str) and n)]
    return found[:limit]


def _host_labels(hostname: str, node_labels_by_name: Mapping[str, Mapping[str, str]]) -> Mapping[str, str] | None:
    """The labels of the node whose kubernetes.io/hostname is ``hostname``: the node of that name,
    which is how the kubelet sets the label unless --hostname-override differs from the node name."""
    labels = node_labels_by_name.get(hostname)
    if labels and labels.get(HOSTNAME_LABEL, hostname) == hostname:
        return labels
    return None


def _matching(labels: Mapping[str, str] | None, selectors: tuple[DraNodeSelector, ...]) -> str | None:
    for selector in selectors:
        if labels and selector.matches(labels):
            return selector.render()
    return None


def _required_terms(spec: Mapping[str, Any]) -> list[Any]:
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get(_REQUIRED) if isinstance(node_affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return terms if isinstance(terms, list) else []


def _term_only_dra(term: Mapping[str, Any], selectors: tuple[DraNodeSelector, ...],
                   node_labels_by_name: Mapping[str, Mapping[str, str]] | None) -> bool:
    """True when every node satisfying the term matches some DRA selector."""
    any_value_keys = {s.key for s in selectors if s.value is None}
    dra_values: dict[str, set[str]] = {}
    for s in selectors:
        if s.value is not None:
            dra_values.setdefault(s.key, set()).add(s.value)
    for expression in term.get("matchExpressions") or []:
        if not isinstance(expression, Mapping):
            continue
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        if key in any_value_keys and operator in ("In", "Exists", "Gt", "Lt"):
            return True  # each of these requires the label to be present
        if operator == "In" and values and all(v in dra_values.get(key, ()) for v in values):
            return True
        if (key == HOSTNAME_LABEL and operator == "In" and values and node_labels_by_name is not None
                and all(_matching(_host_labels(str(v), node_labels_by_name), selectors) for v in values)):
            return True
    if node_labels_by_name is not None:
        for field in term.get("matchFields") or []:
            if (isinstance(field, Mapping) and field.get("key") == "metadata.name"
                    and field.get("operator") == "In" and field.get("values")
                    and all(_matching(node_labels_by_name.get(n), selectors) for n in field["values"])):
                return True
    return False


# --- node status guard -----------------------------------------------------------------------


def strip_legacy_capacity(node: Mapping[str, Any], selectors: Selectors,
                          driver_nodes: frozenset[str] = frozenset(), extra: Extra = NO_EXTRA) -> list[dict[str, Any]]:
    """JSON Patch ops (relative to the Node) removing legacy GPU extended resources from
    status.capacity and status.allocatable of a DRA node (labelled, or among ``driver_nodes``);
    empty for any other node."""
    metadata = node.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not (is_dra_node(labels, selectors) or name in driver_nodes):
        return []
    status = node.get("status")
    if not isinstance(status, Mapping):
        return []
    ops = []
    for field in ("capacity", "allocatable"):
        resources = status.get(field)
        if not isinstance(resources, Mapping):
            continue
        for name in resources:
            if is_legacy_gpu_resource(str(name), extra):
                ops.append({"op": "remove", "path": f"/status/{field}/{escape_pointer(str(name))}"})
    return ops




def _add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}
