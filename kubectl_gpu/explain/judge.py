"""The structured allocator as explain's judge: whether a claim (or all of a pod's claims) can be
allocated, on which node, with which devices.  Explain's own per-selector and per-device counts
say why; the allocator (kubectl_gpu/allocator, Kubernetes' search) says whether."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping, Sequence

from kubectl_gpu.allocator import (
    AllocatedState,
    Allocator,
    Claim,
    Constraint,
    DeviceClass,
    Features,
    Node,
    Request,
    SubRequest,
    TaintRule,
    Toleration,
)
from kubectl_gpu.dra.devices import Device, SliceFacts

from .allocations import Allocations
from .specs import ClaimSpec, DeviceClassSpec, SubrequestSpec, builtin_device_class

ANY_NODE = "(any node)"


def allocator_claim(spec: ClaimSpec) -> Claim:
    """A claim in the allocator's terms (the request, alternative and constraint names as written)."""
    requests = []
    for request in spec.requests:
        if request.first_available:
            subs = tuple(_sub(alternative, alternative.name.split("/", 1)[1]) for alternative in request.alternatives)
            requests.append(Request(request.name, first_available=subs))
        else:
            requests.append(Request(request.name, exactly=_sub(request.alternatives[0], request.name)))
    constraints = tuple(Constraint(c.requests, c.match_attribute, c.distinct_attribute) for c in spec.constraints)
    return Claim(spec.ref, tuple(requests), constraints)


def _sub(sub: SubrequestSpec, name: str) -> SubRequest:
    return SubRequest(
        name=name,
        device_class=sub.device_class,
        selectors=sub.selectors,
        allocation_mode=sub.allocation_mode,
        count=sub.count,
        admin_access=True if sub.admin_access else None,
        tolerations=tuple(Toleration(t["key"], t["operator"], t["value"], t["effect"]) for t in sub.tolerations),
        capacity={k: q.value for k, q in sub.capacity_requests.items()} or None,
    )


def allocator_classes(classes: Mapping[str, DeviceClassSpec], names: Iterable[str]) -> dict[str, DeviceClass]:
    """The given classes, and the NVIDIA driver's for the names missing among them (as explain assumes)."""
    found = {name: DeviceClass(name, spec.selectors) for name, spec in classes.items()}
    for name in names:
        if name not in found:
            builtin = builtin_device_class(name)
            if builtin is not None:
                found[name] = DeviceClass(name, builtin.selectors)
    return found


def allocated_state(allocations: Allocations | None, own: Sequence[str] = ()) -> AllocatedState:
    """What other claims hold: dedicated devices, shares and the capacity shares consume.  The
    claims in ``own`` (being explained) hold nothing; allocations with admin access block nobody."""
    dedicated: set[str] = set()
    shared: set[str] = set()
    capacity: dict[str, dict[str, Fraction]] = {}
    mine = set(own)
    for device_id, holders in (allocations or {}).items():
        driver = device_id.split("/", 1)[0]
        for holder in holders:
            if holder.claim in mine or holder.admin_access:
                continue
            if holder.shared:
                shared.add(device_id)
                consumed = capacity.setdefault(device_id, {})
                for name, quantity in holder.consumed.items():
                    key = name if "/" in name else f"{driver}/{name}"
                    consumed[key] = consumed.get(key, Fraction(0)) + quantity.value
            else:
                dedicated.add(device_id)
    return AllocatedState(frozenset(dedicated), frozenset(shared), capacity)


def facts_from_devices(devices: Sequence[Device]) -> list[SliceFacts]:
    """Slices rebuilt from devices alone, for callers that hold no ResourceSlice objects: each
    (pool, slice, node) group a complete pool's slice, without counter sets."""
    groups: dict[tuple[str, str, str, str | None], list[Device]] = {}
    for device in devices:
        groups.setdefault((device.driver, device.pool, device.slice_name, device.node_name), []).append(device)
    per_pool: dict[tuple[str, str], int] = {}
    for driver, pool, _, _ in groups:
        per_pool[(driver, pool)] = per_pool.get((driver, pool), 0) + 1
    return [SliceFacts(name=f"{slice_name or pool}@{node or ''}", driver=driver, pool=pool, generation=0,
                       resource_slice_count=per_pool[(driver, pool)], node_name=node, all_nodes=node is None,
                       node_selector=None, per_device_node_selection=False, shared_counters=(), devices=tuple(members))
            for (driver, pool, slice_name, node), members in groups.items()]


@dataclass(frozen=True)
class Cluster:
    """What the allocator is built from for one explanation: the slices (newest generations), the
    nodes (None: those the slices name), DeviceTaintRules, and the feature gates."""

    facts: Sequence[SliceFacts]
    gates: frozenset[str]
    nodes: Sequence[Node] | None = None
    taint_rules: Sequence[TaintRule] = ()


def build_allocator(cluster: Cluster, classes: Mapping[str, DeviceClassSpec], class_names: Iterable[str],
                    allocations: Allocations | None, own: Sequence[str]) -> Allocator:
    return Allocator(cluster.facts, allocator_classes(classes, class_names), Features.from_gates(cluster.gates),
                     allocated_state(allocations, own), cluster.taint_rules)


def candidate_nodes(allocator: Allocator, cluster: Cluster, avoid: frozenset[str]) -> list[Node]:
    """The nodes to try, by name, the avoided ones last.  Without Node objects: the nodes the slices
    name, or, when none does, one node of unknown labels (every node selector may match it)."""
    if cluster.nodes is not None:
        nodes = list(cluster.nodes)
    else:
        nodes = [Node(name) for name in allocator.node_names()]
        if not nodes:
            nodes = [Node(ANY_NODE, unknown_labels=True)]
    nodes.sort(key=lambda n: (n.name in avoid, n.name))
    return nodes
