"""Resource pools as the allocator sees them from one node (upstream GatherPools, buildPool,
checkSlicesInPool in structured/internal/experimental/pools_experimental.go).

Only the newest generation of a pool counts; a pool is incomplete until all of its
``resourceSliceCount`` slices are there, and invalid when a device name repeats, a counter set is
published twice or a device draws on a counter (set) nobody publishes.  Neither kind gives devices;
an "All" request refuses them outright.  Pools are ordered by driver then pool name, those with
binding conditions last; slices in a pool by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping, Sequence

from kubectl_gpu.dra.devices import SliceFacts

from .features import Features
from .node_selection import InvalidNodeSelector, Node, node_matches


class PoolError(ValueError):
    """Pools cannot be gathered (a node selector the scheduler cannot parse)."""


@dataclass
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[SliceFacts] = field(default_factory=list)  # those with devices for this node
    other_slices: list[SliceFacts] = field(default_factory=list)  # the pool's others (their devices use counters too)
    counter_sets: dict[str, Mapping[str, Fraction]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


def gather_pools(node_slices: Sequence[SliceFacts], node: Node, features: Features,
                 all_slices: Sequence[SliceFacts]) -> list[Pool]:
    by_pool: dict[tuple[str, str], list[SliceFacts]] = {}
    for facts in node_slices:
        if not features.partitionable_devices and (facts.per_device_node_selection or facts.shared_counters):
            continue
        try:
            if facts.node_name or facts.all_nodes or facts.node_selector is not None:
                relevant = node_matches(node, facts.node_name, facts.all_nodes, facts.node_selector)
            elif facts.per_device_node_selection:
                relevant = any(node_matches(node, d.node_name, d.placement.all_nodes, d.placement.node_selector)
                               for d in facts.devices)
            else:
                continue  # some future way of selecting nodes: other pools may still do
        except InvalidNodeSelector as err:
            raise PoolError(f"failed to perform node selection for slice {facts.name}: {err}") from None
        if relevant:
            _add_slice(by_pool, facts)

    pools: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for (driver, name), slices in by_pool.items():
        expected = slices[0].resource_slice_count
        everything: list[SliceFacts] | None = None
        if len(slices) != expected:
            # Slices this node does not see may complete the pool (counter sets, other nodes'
            # devices): look at all of the pool's slices of this generation.
            obsolete, everything = _slices_in_pool(all_slices, driver, name, slices[0].generation)
            if obsolete:
                continue  # the driver is replacing this generation
            if len(everything) != expected:
                pools.append(Pool(driver, name, incomplete=True))
                continue
        pool = _build_pool(driver, name, slices, features, everything or [])
        (with_binding_conditions if _has_binding_conditions(pool) else pools).append(pool)
    pools.sort(key=lambda p: (p.driver, p.name))
    with_binding_conditions.sort(key=lambda p: (p.driver, p.name))
    return pools + with_binding_conditions


def _add_slice(by_pool: dict[tuple[str, str], list[SliceFacts]], facts: SliceFacts) -> None:
    key = (facts.driver, facts.pool)
    current = by_pool.get(key)
    if current is None or facts.generation > current[0].generation:
        by_pool[key] = [facts]
    elif facts.generation == current[0].generation:
        current.append(facts)


def _slices_in_pool(all_slices: Sequence[SliceFacts], driver: str, name: str,
                    generation: int) -> tuple[bool, list[SliceFacts]]:
    found = []
    for facts in all_slices:
        if facts.driver != driver or facts.pool != name:
            continue
        if facts.generation > generation:
            return True, []
        if facts.generation == generation:
            found.append(facts)
    return False, found


def _build_pool(driver: str, name: str, slices: list[SliceFacts], features: Features,
                everything: list[SliceFacts]) -> Pool:
    slices = sorted(slices, key=lambda s: s.name)
    counter_slices = []
    device_slices = []
    for facts in slices:
        (counter_slices if features.partitionable_devices and facts.shared_counters else device_slices).append(facts)
    others = []
    if len(slices) < len(everything):
        seen = {id(s) for s in slices}
        for facts in everything:
            if id(facts) in seen:
                continue
            (counter_slices if features.partitionable_devices and facts.shared_counters else others).append(facts)
    names: set[str] = set()
    for facts in device_slices:
        for device in facts.devices:
            if device.name in names:
                return Pool(driver, name, invalid=True, invalid_reason=f"duplicate device name {device.name}")
            names.add(device.name)
    if not features.partitionable_devices:
        return Pool(driver, name, slices=device_slices)
    counter_sets: dict[str, Mapping[str, Fraction]] = {}
    for facts in counter_slices:
        for set_name, counters in facts.shared_counters:
            if set_name in counter_sets:
                return Pool(driver, name, invalid=True, invalid_reason=f"duplicate counter set name {set_name}")
            counter_sets[set_name] = counters
    for group in (device_slices, others):
        reason = _unknown_counters(counter_sets, group)
        if reason:
            return Pool(driver, name, invalid=True, invalid_reason=reason)
    return Pool(driver, name, slices=device_slices, other_slices=others, counter_sets=counter_sets)


def _unknown_counters(counter_sets: Mapping[str, Mapping[str, Fraction]], slices: Sequence[SliceFacts]) -> str | None:
    for facts in slices:
        for device in facts.devices:
            for set_name, counters in device.placement.consumes_counters:
                known = counter_sets.get(set_name)
                if known is None:
                    return f"counter set {set_name} not found"
                for counter in counters:
                    if counter not in known:
                        return f"counter {counter} not found in counter set {set_name}"
    return None


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.placement.binding_conditions for s in pool.slices for d in s.devices)
