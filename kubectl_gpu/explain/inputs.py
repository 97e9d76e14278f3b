"""Sort a pile of Kubernetes objects (several files, multi-document YAML, `kind: List`) into what
explain needs, and explain every claim among them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from kubectl_gpu.allocator import Node
from kubectl_gpu.cel import Gates
from kubectl_gpu.dra.devices import Device, SliceFacts, current_slices, is_resource_slice, read_slice
from kubectl_gpu.dra.gates import normalize_gates
from kubectl_gpu.collector import with_collector_paused

from .allocations import allocations_from_claims
from .engine import AVOID_NODES, ClassPasses, explain_claim, explain_together
from .judge import Cluster, build_allocator, facts_from_devices
from .model import ClaimError, ClaimResult
from .taint_rules import is_device_taint_rule
from .taint_rules import taint_rules as read_taint_rules
from .specs import ClaimSpec, DeviceClassSpec, InvalidClaim, is_claim, is_device_class, parse_claim, parse_device_class


@dataclass
class ExplainInputs:
    """The objects read for explain, sorted by kind; what explain does not use is named in ``ignored``."""

    claims: list[Mapping[str, Any]] = field(default_factory=list)
    slices: list[Mapping[str, Any]] = field(default_factory=list)
    classes: list[Mapping[str, Any]] = field(default_factory=list)
    nodes: list[Mapping[str, Any]] = field(default_factory=list)  # core/v1 Nodes (names, labels)
    taint_rules: list[Mapping[str, Any]] = field(default_factory=list)  # DeviceTaintRules
    ignored: list[str] = field(default_factory=list)  # "Kind/name" of objects explain does not use


@dataclass(frozen=True)
class Explanation:
    """Every claim's result (or error) and what they were explained against."""

    items: tuple[ClaimResult | ClaimError, ...]
    devices: int
    slices: int
    classes: tuple[str, ...]

    @property
    def allocatable(self) -> bool:
        return all(isinstance(i, ClaimResult) and i.allocatable for i in self.items)


def flatten(objects: Iterable[Any]) -> list[Mapping[str, Any]]:
    """Expand `kind: List` (and FooList) items; drop empty documents."""
    flat: list[Mapping[str, Any]] = []
    for obj in objects:
        if obj.__class__ is not dict and not isinstance(obj, Mapping):  # the ABC check is slow: dicts first
            continue
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            flat.extend(flatten(obj["items"]))
        else:
            flat.append(obj)
    return flat


def allocator_nodes(objects: Sequence[Mapping[str, Any]], only: str | None = None) -> list[Node] | None:
    """Node objects as the allocator sees them (name, labels); ``only`` keeps that node (known
    from the objects, else with unknown labels).  None: no Node given, the slices' nodes count."""
    nodes = []
    for obj in objects:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
        nodes.append(Node(str(meta.get("name") or ""), {str(k): str(v) for k, v in labels.items()}))
    if only is not None:
        known = [n for n in nodes if n.name == only]
        return known or [Node(only, unknown_labels=True)]
    return nodes or None


def sort_objects(objects: Iterable[Any]) -> ExplainInputs:
    inputs = ExplainInputs()
    for obj in flatten(objects):
        if is_claim(obj):
            inputs.claims.append(obj)
        elif is_resource_slice(obj):
            inputs.slices.append(obj)
        elif is_device_class(obj):
            inputs.classes.append(obj)
        elif obj.get("kind") == "Node" and obj.get("apiVersion") == "v1":
            inputs.nodes.append(obj)
        elif is_device_taint_rule(obj):
            inputs.taint_rules.append(obj)
        else:
            metadata = obj.get("metadata")
            name = metadata.get("name", "") if isinstance(metadata, Mapping) else ""
            inputs.ignored.append(f"{obj.get('kind', '?')}/{name}")
    return inputs


@with_collector_paused
def explain_objects(
    claims: Sequence[Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]],
    classes: Sequence[Mapping[str, Any]] = (),
    allocated_claims: Sequence[Mapping[str, Any]] = (),
    devices: Sequence[Device] = (),
    gates: Gates = None,
    avoid_nodes: Iterable[str] = (),
    slice_devices: Sequence[Device] | None = None,
    slice_facts: Sequence[SliceFacts] | None = None,
    nodes: Sequence[Node] | None = None,
    one_pod: bool = False,
    pods: Sequence[Sequence[int]] = (),
    taint_rules: Sequence[Mapping[str, Any]] = (),
) -> Explanation:
    """Explain each claim under the cluster's enabled DRA feature ``gates`` (None: the defaults of
    :data:`kubectl_gpu.dra.gates.DEFAULT_MINOR`).  Invalid claims become ClaimError items; invalid slices and classes raise
    (InvalidResourceSlice / InvalidClaim), since every answer would depend on them.

    ``devices`` are devices beside those of ``slices``; ``slice_facts`` are the current generation
    of ``slices`` read already (a ClusterProfile's ``slice_facts``): building 8,000 devices twice
    was a quarter of `explain -f --slices`; ``slice_devices`` the same as bare devices, for callers
    without the slices.  ``nodes`` are the cluster's nodes (names and labels, for node selectors);
    None: the nodes the slices name.  ``one_pod``: the claims are one pod's, allocated together on
    one node (the scheduler's way), not each alone; ``pods``: the same for several pods, each the
    positions of its claims in ``claims`` (a claim two pods share is judged with the first);
    ``taint_rules``: the cluster's DeviceTaintRules (InvalidTaintRule when one cannot be read)."""
    claims, slices, classes, allocated_claims = (flatten(x) for x in (claims, slices, classes, allocated_claims))
    if slice_facts is None:
        # The scheduler ignores older pool generations; the allocator sees the rest as published.
        slice_facts = [read_slice(s) for s in current_slices(slices)]
    facts = list(slice_facts)
    if slice_devices is not None and not facts:
        facts = facts_from_devices(slice_devices)
    if devices:
        facts.extend(facts_from_devices(devices))
    all_devices = [d for f in facts for d in f.devices]
    class_specs: dict[str, DeviceClassSpec] = {}
    for obj in classes:
        spec = parse_device_class(obj)
        class_specs[spec.name] = spec
    allocations = allocations_from_claims([*allocated_claims, *claims])
    class_passes: ClassPasses = {}  # a class's selectors run once over the devices, whatever the claim count
    cluster = Cluster(facts, normalize_gates(gates), nodes, read_taint_rules(flatten(taint_rules)))
    specs = _parse_each(claims)
    class_names = {a.device_class for spec in specs if not isinstance(spec, ClaimError)
                   for r in spec.requests for a in r.alternatives}
    # One allocator for every claim: selectors are evaluated once, whatever the claim count.
    allocator = build_allocator(cluster, class_specs, class_names, allocations, ())
    # ``avoid_nodes`` (double-counted nodes, see doctor) are never suggested while another node fits.
    token = AVOID_NODES.set(frozenset(avoid_nodes))
    try:
        items = [spec if isinstance(spec, ClaimError) else
                 explain_claim(spec, all_devices, class_specs, allocations, class_passes, gates, (allocator, cluster))
                 for spec in specs]
        judged: set[int] = set()
        for pod in ([range(len(specs))] if one_pod else pods):
            members = [i for i in dict.fromkeys(pod) if i not in judged]
            judged.update(members)
            if len(members) < 2 or any(isinstance(specs[i], ClaimError) for i in members):
                continue
            together = explain_together([items[i] for i in members], [specs[i] for i in members],
                                        allocator, cluster, allocations)
            for i, result in zip(members, together):
                items[i] = result
    finally:
        AVOID_NODES.reset(token)
    return Explanation(tuple(items), len(all_devices), len(slices), tuple(sorted(class_specs)))


def _parse_each(claims: Sequence[Mapping[str, Any]]) -> list[ClaimSpec | ClaimError]:
    parsed: list[ClaimSpec | ClaimError] = []
    for obj in claims:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        try:
            parsed.append(parse_claim(obj))
        except InvalidClaim as err:
            parsed.append(ClaimError(str(obj.get("kind")), meta.get("namespace"), str(meta.get("name", "")), str(err)))
    return parsed
