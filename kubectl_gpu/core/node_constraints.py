"""Node labels that chose a GPU model -> CEL selectors on the devices themselves.

With device plugins a pod picked its GPU through node labels from GPU Feature Discovery
(`nvidia.com/gpu.product`, `.memory`, `.family`) or GKE (`cloud.google.com/gke-accelerator`).
With DRA the device is chosen by the claim, and DRA nodes need not carry GFD labels at all,
so GFD constraints move into the claim's selectors (the original is kept in an annotation).
GKE's label is set by GKE on the node pool and drives autoscaling, so it stays and the
selector is added beside it.

Every expression guards the attribute it reads: in Kubernetes a missing attribute is an
evaluation ERROR that aborts scheduling of the pod, not a non-match.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_gpu.dra.facts import GFD_FAMILY_LABEL, GFD_MEMORY_LABEL, GFD_PRODUCT_LABEL
from kubectl_gpu.dra.facts import architecture_of_gfd_family, attr, cap, driver_mig_profile, guarded_attr
from kubectl_gpu.dra.facts import guarded_cap, literal
from .notes import Note, Severity
from .json_patch import escape

PRODUCT, MEMORY, FAMILY = GFD_PRODUCT_LABEL, GFD_MEMORY_LABEL, GFD_FAMILY_LABEL
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
MOVED_KEYS = (PRODUCT, MEMORY, FAMILY)
# GFD labels that describe GPUs but have no attribute to move to.
_GFD_PREFIXES = ("nvidia.com/gpu.", "nvidia.com/mig.", "nvidia.com/cuda.", "nvidia.com/mig-")
_KEPT_SILENTLY = ("nvidia.com/gpu.present", "nvidia.com/gpu.deploy.")
# GFD's product label with the MIG "single" strategy: "<model>-MIG-<profile with '+' dropped>", or
# "<model>-MIG-INVALID" when the GPUs' profiles differ (k8s-device-plugin internal/lm/mig-strategy.go).
_MIG_SUFFIX = re.compile(r"^(?P<product>.+)-MIG-(?P<profile>.+)$")
_PLACEHOLDER = re.compile(r"\$\{|\{\{|<[^>]+>")

# NVML says "NVIDIA A100-SXM4-40GB"; GFD says "NVIDIA-A100-SXM4-40GB", older GFD "A100-SXM4-40GB".
_PRODUCT_KEY = f'{attr("productName")}.replace(" ", "-").replace("NVIDIA-", "")'
# A GFD memory label (NVML's total, floored to MiB) against what the driver publishes: the exact
# bytes (up to 1 MiB more), the largest MIG profile's memory under DynamicMIG (97-99% of the GPU on
# A100/H100), or whole MiB rounded down with consumable shares.  So: a window from 95% of the label
# to just under label + 1 MiB.  GPU sizes sold side by side differ by far more (40/48/80/94/141 GB).
MEMORY_TOLERANCE_PERCENT = 5

# GKE accelerator names -> NVML product names (words that must / must not appear).
_GKE_PRODUCTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "nvidia-tesla-k80": (("K80",), ()),
    "nvidia-tesla-p4": (("Tesla P4",), ("P40",)),
    "nvidia-tesla-p100": (("P100",), ()),
    "nvidia-tesla-v100": (("V100",), ()),
    "nvidia-tesla-t4": (("T4",), ()),
    "nvidia-l4": (("L4",), ("L40",)),
    "nvidia-tesla-a100": (("A100", "40GB"), ()),
    "nvidia-a100-80gb": (("A100", "80GB"), ()),
    "nvidia-h100-80gb": (("H100", "80GB"), ()),
    "nvidia-h100-mega-80gb": (("H100", "80GB"), ()),
    "nvidia-h200-141gb": (("H200",), ()),
    "nvidia-b200": (("B200",), ("GB200",)),
    "nvidia-gb200": (("GB200",), ()),
    "nvidia-b300": (("B300",), ("GB300",)),
    "nvidia-gb300": (("GB300",), ()),
    "nvidia-rtx-pro-6000": (("RTX PRO 6000",), ()),
}


def _product_condition(value: str) -> str:
    normalized = value[len("NVIDIA-"):] if value.startswith("NVIDIA-") else value
    return guarded_attr("productName", f"{_PRODUCT_KEY} == {literal(normalized)}")


def _memory_condition(mib: str, op: str) -> str:
    return guarded_cap("memory", f'{cap("memory")}.compareTo(quantity({literal(mib + "Mi")})) {op} 0')


def _memory_about(mib: str) -> str:
    """The GPU whose memory GFD labelled `mib` (see MEMORY_TOLERANCE_PERCENT), never exact equality."""
    low = int(mib) * (100 - MEMORY_TOLERANCE_PERCENT) // 100
    memory = cap("memory")
    return guarded_cap("memory", f'{memory}.compareTo(quantity({literal(f"{low}Mi")})) >= 0 && '
                                 f'{memory}.compareTo(quantity({literal(f"{int(mib) + 1}Mi")})) < 0')


def _family_condition(value: str) -> str | None:
    architecture = architecture_of_gfd_family(value)
    if architecture is None:
        return None
    return guarded_attr("architecture", f"{attr('architecture')} == {literal(architecture)}")


def _gke_condition(value: str) -> str | None:
    words = _GKE_PRODUCTS.get(value)
    if words is None:
        return None
    must, must_not = words
    product = attr("productName")
    parts = [f"{product}.contains({literal(w)})" for w in must]
    parts += [f"!{product}.contains({literal(w)})" for w in must_not]
    return guarded_attr("productName", " && ".join(parts))


@dataclass
class _Translation:
    condition: str | None  # None: nothing to add (e.g. Exists)
    mig_profile: str | None = None
    note: Note | None = None


def _any_of(conditions: Sequence[str]) -> str:
    return conditions[0] if len(conditions) == 1 else "(" + " || ".join(conditions) + ")"


def _translate_value(key: str, value: str) -> _Translation | Note:
    if _PLACEHOLDER.search(value):
        return Note(Severity.WARNING, f"node label {key}={value} is a template placeholder; fill it in and "
                                      "migrate again to get a device selector")
    if key == PRODUCT:
        note = None
        if value.endswith("-SHARED"):
            value = value[: -len("-SHARED")]
            note = Note(Severity.WARNING, f"{PRODUCT}={value}-SHARED marks device-plugin time-slicing: there "
                                          "nvidia.com/gpu: 1 was a time-sliced replica, with DRA it is a whole "
                                          "GPU unless you choose a --sharing strategy for it")
        mig = _MIG_SUFFIX.match(value)
        if mig:
            profile = driver_mig_profile(mig["profile"])
            if profile is None:
                return Note(Severity.WARNING,
                            f"{PRODUCT}={value} names MIG devices of no profile the NVIDIA driver publishes "
                            "(MIG-INVALID: the node's GPUs had different profiles); constraint kept on the node "
                            "and no device selector made: request nvidia.com/mig-<profile> instead")
            return _Translation(_product_condition(mig["product"]), profile, note)
        return _Translation(_product_condition(value), None, note)
    if key == MEMORY:
        if not value.isdigit():
            return Note(Severity.WARNING, f"{MEMORY}={value} is not a MiB figure; constraint kept on the node")
        return _Translation(_memory_about(value))
    if key == FAMILY:
        condition = _family_condition(value)
        if condition is None:
            return Note(Severity.WARNING, f"{FAMILY}={value} is no architecture the NVIDIA DRA driver publishes; "
                                          "constraint kept on the node")
        return _Translation(condition)
    if key == GKE_ACCELERATOR:
        condition = _gke_condition(value)
        if condition is None:
            return Note(Severity.INFO, f"{GKE_ACCELERATOR}={value} has no known GPU product; "
                                       "the node label still picks the node pool")
        return _Translation(condition)
    raise AssertionError(key)


def _translate_expression(expr: Mapping[str, Any]) -> _Translation | Note:
    key = str(expr.get("key", ""))
    operator = expr.get("operator")
    values = [str(v) for v in (expr.get("values") or [])]
    if operator == "Exists":
        return _Translation(None)
    if operator in ("Gt", "Lt") and key == MEMORY and len(values) == 1 and values[0].isdigit():
        return _Translation(_memory_condition(values[0], ">" if operator == "Gt" else "<"))
    if operator not in ("In", "NotIn") or not values:
        return Note(Severity.WARNING, f"node affinity {key} {operator} cannot be expressed on devices; kept")
    parts: list[str] = []
    mig_profiles: set[str | None] = set()
    note = None
    for value in values:
        result = _translate_value(key, value)
        if isinstance(result, Note):
            return result
        parts.append(result.condition or "true")
        mig_profiles.add(result.mig_profile)
        note = note or result.note
    if len(mig_profiles) > 1 or (operator == "NotIn" and mig_profiles != {None}):
        return Note(Severity.WARNING, f"node affinity on {key} mixes MIG and whole-GPU products; kept")
    condition = _any_of(parts)
    if operator == "NotIn":
        condition = f"!{condition}"
    return _Translation(condition, mig_profiles.pop(), note)


@dataclass
class NodeConstraints:
    """The outcome for one pod template's node constraints."""

    selectors: list[str] = field(default_factory=list)
    mig_profile: str | None = None  # a MIG "single strategy" product label picked MIG devices
    patch: list[dict[str, Any]] = field(default_factory=list)
    original: dict[str, Any] = field(default_factory=dict)  # what was removed, for the annotation
    notes: list[Note] = field(default_factory=list)


def translate_node_constraints(spec: Mapping[str, Any]) -> NodeConstraints:
    out = NodeConstraints()
    _node_selector(spec, out)
    _node_affinity(spec, out)
    return out


def _is_gpu_label(key: str) -> bool:
    return key in MOVED_KEYS or key == GKE_ACCELERATOR or key.startswith(_GFD_PREFIXES)


def _node_selector(spec: Mapping[str, Any], out: NodeConstraints) -> None:
    selector = spec.get("nodeSelector")
    if not isinstance(selector, Mapping):
        return
    removed: dict[str, Any] = {}
    for key, raw in selector.items():
        key = str(key)
        if not _is_gpu_label(key) or key.startswith(_KEPT_SILENTLY):
            continue
        if key not in MOVED_KEYS and key != GKE_ACCELERATOR:
            out.notes.append(Note(Severity.WARNING, f"nodeSelector {key} has no DRA device attribute; kept "
                                                    "(DRA nodes may not carry GPU Feature Discovery labels)"))
            continue
        result = _translate_value(key, str(raw))
        if isinstance(result, Note):
            out.notes.append(result)
            continue
        if result.note:
            out.notes.append(result.note)
        if result.condition:
            out.selectors.append(result.condition)
        out.mig_profile = out.mig_profile or result.mig_profile
        if key in MOVED_KEYS:
            removed[key] = raw
            out.patch.append({"op": "remove", "path": f"/spec/nodeSelector/{escape(key)}"})
    if removed:
        out.original["nodeSelector"] = {k: str(v) for k, v in removed.items()}
        if len(removed) == len(selector):
            out.patch = [op for op in out.patch if not op["path"].startswith("/spec/nodeSelector/")]
            out.patch.append({"op": "remove", "path": "/spec/nodeSelector"})
        out.notes.append(Note(Severity.INFO, "moved nodeSelector " + ", ".join(f"{k}={v}" for k, v in
                                                                             removed.items())
                              + " into device selectors"))


def _node_affinity(spec: Mapping[str, Any], out: NodeConstraints) -> None:
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") \
        if isinstance(node_affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        return
    translated_terms: list[list[_Translation]] = []
    kept_terms: list[dict[str, Any]] = []
    touched = False
    for term in terms:
        expressions = term.get("matchExpressions") or [] if isinstance(term, Mapping) else []
        moved: list[_Translation] = []
        kept: list[Any] = []
        for expr in expressions:
            key = str(expr.get("key", "")) if isinstance(expr, Mapping) else ""
            if key not in MOVED_KEYS:
                if key.startswith(_GFD_PREFIXES) and not key.startswith(_KEPT_SILENTLY):
                    out.notes.append(Note(Severity.WARNING, f"node affinity on {key} has no DRA device "
                                                            "attribute; kept"))
                kept.append(expr)
                continue
            result = _translate_expression(expr)
            if isinstance(result, Note):
                out.notes.append(result)
                kept.append(expr)
                continue
            moved.append(result)
            touched = True
        translated_terms.append(moved)
        rest = {k: v for k, v in term.items() if k != "matchExpressions"} if isinstance(term, Mapping) else {}
        if kept:
            rest["matchExpressions"] = kept
        kept_terms.append(rest)
    if not touched:
        return
    if len(terms) > 1 and any(kept_terms):
        # Terms are ORed: moving part of one term into a claim-wide selector would change the meaning.
        out.notes.append(Note(Severity.WARNING, "required node affinity mixes GPU labels with other labels "
                                                "across several terms; kept as is (DRA nodes may lack GFD labels)"))
        return
    conditions = []
    for moved in translated_terms:
        parts = [t.condition for t in moved if t.condition]
        if parts:
            conditions.append(" && ".join(parts) if len(parts) == 1 or len(terms) == 1
                              else "(" + " && ".join(parts) + ")")
        for t in moved:
            out.mig_profile = out.mig_profile or t.mig_profile
            if t.note:
                out.notes.append(t.note)
    if len(terms) == 1:
        out.selectors.extend(p for moved in translated_terms for p in (t.condition for t in moved) if p)
    elif conditions:
        out.selectors.append(_any_of(conditions))
    out.original["nodeAffinity"] = _plain(required)
    base = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
    remaining = [t for t in kept_terms if t]
    if remaining:
        out.patch.append({"op": "replace", "path": f"{base}/nodeSelectorTerms", "value": remaining})
    elif len(node_affinity) > 1:
        out.patch.append({"op": "remove", "path": base})
    elif len(affinity) > 1:
        out.patch.append({"op": "remove", "path": "/spec/affinity/nodeAffinity"})
    else:
        out.patch.append({"op": "remove", "path": "/spec/affinity"})
    out.notes.append(Note(Severity.INFO, "moved required node affinity on GPU labels into device selectors"))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
