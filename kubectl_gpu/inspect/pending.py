"""Why a Pending pod asking for device-plugin GPUs has no node, from the scheduler's own reason
and the nodes: which nodes offer the resource at all, which of them the pod's node selector,
required node affinity and tolerations admit, and how much of it they have free.

The scheduler writes its reason to the pod's PodScheduled condition (the same text as its
FailedScheduling event: "0/5 nodes are available: 3 Insufficient nvidia.com/gpu, ..."); this
module says which of those nodes and labels it means, and what to change."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

from kubectl_gpu.allocator import Toleration
from kubectl_gpu.dra.devices import Taint
from kubectl_gpu.dra.quantity import QuantityError, parse_kubernetes_quantity
from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS, NodeLabel, is_dra_node
from kubectl_gpu.inspect.legacy import legacy_pod

NAMED = 5  # nodes or pods named in a sentence before "and N more"


@dataclass(frozen=True)
class _Node:
    name: str
    labels: Mapping[str, str]
    offered: Fraction  # allocatable of the resource
    free: Fraction
    holders: tuple[str, ...]  # namespace/name of the pods holding some of it
    unschedulable: bool
    blocking_taints: tuple[str, ...]


def legacy_pending_step(pod: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
                        dra_labels: Sequence[NodeLabel] = DEFAULT_DRA_NODE_LABELS) -> str | None:
    """What to do about a Pending pod that asks for device-plugin GPUs, or None for any other pod."""
    legacy = legacy_pod(pod)
    if legacy is None or (pod.get("spec") or {}).get("nodeName"):
        return None
    wanted: dict[str, Fraction] = {}
    for row in legacy.requests:
        wanted[row.resource] = wanted.get(row.resource, Fraction(0)) + _amount(row.amount)
    node_list = list(nodes)
    resource, amount = max(wanted.items(), key=lambda kv: kv[1])  # the scarcest ask speaks for the pod
    spec = pod.get("spec") or {}
    holders = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
    views = [_view(n, resource, holders, spec.get("tolerations") or ()) for n in node_list]
    offering = [v for v in views if v.offered > 0]
    if not offering:
        dra = sorted(str((n.get("metadata") or {}).get("name")) for n in node_list
                     if is_dra_node(((n.get("metadata") or {}).get("labels") or {}), dra_labels))
        text = f"no node offers {resource} (no device plugin advertises it on any node)"
        if dra:
            text += (f"; {len(dra)} node(s) serve GPUs through the DRA driver ({_names(dra)}), which pods reach "
                     "only through ResourceClaims: convert the workload with kubectl gpu migrate FILE, or let the "
                     "kubectl-gpu admission webhook convert new pods")
        return text + "."
    mismatched = [(v, _selector_mismatch(spec, v.labels)) for v in offering]
    admitted = [v for v, why in mismatched if why is None]
    if not admitted:
        reasons = sorted({why for _, why in mismatched if why})
        products = sorted({v.labels.get("nvidia.com/gpu.product", "") for v in offering} - {""})
        have = f" (they are: {', '.join(products)})" if products else ""
        return (f"{len(offering)} node(s) offer {resource}{have}, but the pod's {'; '.join(reasons)}: change the "
                f"pod's nodeSelector/affinity to a value those nodes carry, or add nodes that have it.")
    open_ = [v for v in admitted if not v.unschedulable and not v.blocking_taints]
    if not open_:
        parts = [f"{v.name} is cordoned" if v.unschedulable else
                 f"{v.name} has the taint {', '.join(v.blocking_taints)} the pod does not tolerate" for v in admitted]
        return (f"the node(s) that offer {resource} and match the pod cannot take it: {'; '.join(parts[:NAMED])}"
                f"{_more(parts)}. Uncordon them (kubectl uncordon), or add a toleration.")
    roomy = [v for v in open_ if v.free >= amount]
    if not roomy:
        full = [f"{v.name} ({_plain(v.free)} of {_plain(v.offered)} free; held by {_names(v.holders) or 'nobody'})"
                for v in open_]
        return (f"it needs {_plain(amount)} {resource}, and the node(s) it may use have less free: "
                f"{'; '.join(full[:NAMED])}{_more(full)}. It starts when those pods end; or add nodes.")
    return (f"{_names([v.name for v in roomy])} offer(s) {resource} free and match the pod: the scheduler's reason "
            "above says what else keeps it off them (memory, CPU, ports, volumes, pod affinity).")


def _view(node: Mapping[str, Any], resource: str, pods: Sequence[Mapping[str, Any]],
          tolerations: Sequence[Mapping[str, Any]]) -> _Node:
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    offered = _amount(((node.get("status") or {}).get("allocatable") or {}).get(resource, 0))
    used, holders = Fraction(0), []
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") != name or (pod.get("status") or {}).get("phase") in (
                "Succeeded", "Failed"):
            continue
        held = legacy_pod(pod)
        amount = sum((_amount(r.amount) for r in held.requests if r.resource == resource), Fraction(0)) if held else 0
        if amount:
            used += amount
            holders.append(f"{(pod.get('metadata') or {}).get('namespace')}/{(pod.get('metadata') or {}).get('name')}")
    spec = node.get("spec") or {}
    blocking = tuple(_taint_text(t) for t in spec.get("taints") or ()
                     if t.get("effect") in ("NoSchedule", "NoExecute") and not any(_tolerates(o, t) for o in tolerations))
    return _Node(name, meta.get("labels") or {}, offered, max(offered - used, Fraction(0)), tuple(holders),
                 bool(spec.get("unschedulable")), blocking)


def _selector_mismatch(spec: Mapping[str, Any], labels: Mapping[str, str]) -> str | None:
    """Why the pod's nodeSelector or required node affinity refuses a node with these labels."""
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return f"nodeSelector asks for {key}={value}"
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return None
    failures = []
    for term in terms:  # the terms are ORed, each term's expressions ANDed
        why = next((w for w in (_expression_mismatch(e, labels) for e in term.get("matchExpressions") or ()) if w),
                   None)
        if why is None:
            return None
        failures.append(why)
    return "required node affinity asks for " + " or ".join(failures)


def _expression_mismatch(expr: Mapping[str, Any], labels: Mapping[str, str]) -> str | None:
    key, op, values = str(expr.get("key")), expr.get("operator"), [str(v) for v in expr.get("values") or ()]
    present, value = key in labels, labels.get(key)
    ok = {"In": present and value in values, "NotIn": not present or value not in values,
          "Exists": present, "DoesNotExist": not present}.get(str(op))
    if op in ("Gt", "Lt"):
        try:
            ok = present and (int(str(value)) > int(values[0]) if op == "Gt" else int(str(value)) < int(values[0]))
        except (ValueError, IndexError):
            ok = False
    if ok:
        return None
    return f"{key} {op} {','.join(values)}" if values else f"{key} {op}"


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """v1's ToleratesTaint, which device tolerations share: the allocator's rule."""
    return Toleration(str(toleration.get("key") or ""), str(toleration.get("operator") or "Equal"),
                      str(toleration.get("value") or ""), str(toleration.get("effect") or "")).tolerates(
        Taint(str(taint.get("key") or ""), str(taint.get("value") or ""), str(taint.get("effect") or "")))


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def _amount(value: Any) -> Fraction:
    try:
        return Fraction(parse_kubernetes_quantity(str(value)))
    except (QuantityError, ValueError, TypeError):
        return Fraction(0)


def _plain(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _names(names: Sequence[str]) -> str:
    return ", ".join(names[:NAMED]) + _more(names)


def _more(items: Sequence[Any]) -> str:
    return f" and {len(items) - NAMED} more" if len(items) > NAMED else ""
