"""The allocator for a cluster: its ResourceSlices, DeviceClasses, what is allocated already and
the feature switches, asked to place the claims of one pod on one node at a time."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

from kubectl_gpu.cel import CelCompileError, compile_selector
from kubectl_gpu.dra.devices import Device, SliceFacts, Taint

from .features import Features
from .ledger import Ledger
from .requests import ERROR, AllocatedState, Claim, DeviceClass, Outcome
from .node_selection import Node
from .search import DEFAULT_STEP_BUDGET, Allocation, SelectorCompileError, Verdict, gather


@dataclasses.dataclass(frozen=True)
class TaintRule:
    """A DeviceTaintRule: its taint on every device its selector names (driver, pool, device;
    an empty field selects all)."""

    taint: Taint
    driver: str = ""
    pool: str = ""
    device: str = ""

    def selects(self, device: Device) -> bool:
        return ((not self.driver or self.driver == device.driver) and (not self.pool or self.pool == device.pool)
                and (not self.device or self.device == device.name))


class Allocator:
    """Reusable across nodes and pods; not across changes to the cluster."""

    def __init__(self, slices: Iterable[SliceFacts], classes: Mapping[str, DeviceClass], features: Features,
                 allocated: AllocatedState = AllocatedState(), taint_rules: Sequence[TaintRule] = (),
                 budget: int = DEFAULT_STEP_BUDGET) -> None:
        self.features = features
        self.classes = classes
        self.allocated = allocated
        self.budget = budget
        rules = tuple(taint_rules) if features.device_taint_rules else ()
        self.slices = [_with_rules(s, rules) for s in slices] if rules else list(slices)
        self.on_node: dict[str, list[SliceFacts]] = {}
        self.shared: list[SliceFacts] = []
        for facts in self.slices:
            if facts.node_name:
                self.on_node.setdefault(facts.node_name, []).append(facts)
            else:
                self.shared.append(facts)
        self._compiled: dict[str, Any] = {}
        self._verdicts: dict[str, dict[int, Verdict]] = {}
        # Per AllocatedState (compared by identity): pool id -> counters left after its devices.
        self._counters: list[tuple[AllocatedState, dict[str, Any]]] = []

    def node_names(self) -> list[str]:
        """The nodes some slice names, by name."""
        return sorted(self.on_node)

    def devices(self) -> list[Device]:
        return [d for s in self.slices for d in s.devices]

    def allocate(self, claims: Sequence[Claim], node: Node, allocated: AllocatedState | Ledger | None = None) -> Outcome:
        """Allocate every claim of ``claims`` (one pod's) on ``node``, as the scheduler's filter does;
        ``allocated`` replaces what the cluster holds (explaining a claim that holds devices itself,
        or a plan's :class:`Ledger` of what its earlier placements took)."""
        state = self.allocated if allocated is None else allocated
        node_slices = self.on_node.get(node.name, []) + self.shared
        pools = gather(node_slices, node, self.features, self.slices)
        if isinstance(pools, str):
            return Outcome(ERROR, node.name, error=pools)
        if isinstance(state, Ledger):
            counters = state.counters
        else:
            counters = next((cache for known, cache in self._counters if known is state), None)
        if counters is None:
            counters = {}
            self._counters.append((state, counters))
        return Allocation(claims, node, pools, self.classes, state, self.features, self.evaluate,
                          self.budget, counters).run()

    def prime(self, expression: str, devices: Sequence[Device]) -> None:
        """Evaluate a selector on many devices at once (the search then finds each verdict)."""
        self.evaluate(expression, devices)

    def remember(self, expression: str, devices: Sequence[Device], verdicts: Sequence[Verdict]) -> None:
        """Keep verdicts evaluated elsewhere (True, False or the CEL runtime error's message)."""
        known = self._verdicts.setdefault(expression, {})
        for device, verdict in zip(devices, verdicts):
            known[id(device)] = verdict

    def evaluate(self, expression: str, devices: Sequence[Device]) -> list[Verdict]:
        compiled = self._compiled.get(expression)
        if compiled is None:
            try:
                compiled = compile_selector(expression, gates=self.features.gates(), stored=True)
            except CelCompileError as err:
                compiled = err
            self._compiled[expression] = compiled
        if isinstance(compiled, CelCompileError):
            raise SelectorCompileError(str(compiled))
        known = self._verdicts.setdefault(expression, {})
        missing = [d for d in devices if id(d) not in known]
        if missing:
            for device, verdict in zip(missing, compiled.verdicts(missing)):
                known[id(device)] = verdict if verdict is True or verdict is False else verdict.message
        return [known[id(d)] for d in devices]


def _with_rules(facts: SliceFacts, rules: Sequence[TaintRule]) -> SliceFacts:
    devices = []
    changed = False
    for device in facts.devices:
        added = tuple(rule.taint for rule in rules if rule.selects(device))
        if added:
            placement = dataclasses.replace(device.placement, taints=device.placement.taints + added)
            device = Device(device.driver, device.name, device.pool, device.attributes, device.capacity,
                            device.allow_multiple_allocations, device.node_name, device.node_scope,
                            device.slice_name, device.request_policies, placement)
            changed = True
        devices.append(device)
    return dataclasses.replace(facts, devices=tuple(devices)) if changed else facts


@dataclasses.dataclass(frozen=True)
class Placement:
    """A pod's claims tried on nodes, as the scheduler's filter tries them: every node's outcome,
    and the node chosen (the first, in the order given, where everything was allocated).  An
    error on any node that is not confined to that node (a CEL runtime error, an invalid claim)
    keeps the pod pending everywhere: ``error`` says which."""

    outcomes: tuple[Outcome, ...]

    @property
    def error(self) -> Outcome | None:
        return next((o for o in self.outcomes if o.kind == ERROR and not o.node_only), None)

    @property
    def chosen(self) -> Outcome | None:
        if self.error is not None:
            return None
        return next((o for o in self.outcomes if o.allocated), None)


def place(allocator: Allocator, claims: Sequence[Claim], nodes: Sequence[Node]) -> Placement:
    """Try ``claims`` (one pod's) on each node; stops at the first error that is the pod's, not the node's."""
    outcomes = []
    for node in nodes:
        outcome = allocator.allocate(claims, node)
        outcomes.append(outcome)
        if outcome.kind == ERROR and not outcome.node_only:
            break
    return Placement(tuple(outcomes))
