"""The structured allocator's search, as upstream runs it for one node
(structured/internal/experimental/allocator_experimental.go: Allocate, validateDeviceRequest,
allocateOne, isSelectable, allocateDevice, checkAvailableCounters, createNodeSelector).

Claims are allocated one after another, each request's devices one after another, trying the
devices of every pool (by driver and pool name), slice (by name) and position in the slice; a
device that cannot be used, or after which the rest cannot be allocated, is undone and the next
one tried.  Within one request devices are only tried in increasing position (combinations, not
permutations).  A firstAvailable request tries its alternatives in order and keeps the first with
which everything after it can be allocated.  The first complete solution is the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from kubectl_gpu.dra.devices import Device, SliceFacts

from . import capacity as cap
from .constraints import ConstraintState
from .features import Features
from .ledger import Ledger
from .requests import (
    ALL,
    ALLOCATED,
    ALLOCATION_RESULTS_MAX_SIZE,
    BUDGET_EXHAUSTED,
    ERROR,
    EXACT_COUNT,
    UNSATISFIABLE,
    AllocatedState,
    Claim,
    ClaimAllocation,
    DeviceClass,
    DeviceResult,
    Outcome,
    Request,
    SubRequest,
    FROM_CLAIM,
    FROM_CLASS,
    AllocationConfig,
)
from .node_selection import InvalidNodeSelector, Node, node_matches, node_name_selector
from .pools import Pool, PoolError, gather_pools

# The default bound on the search: allocateOne calls for one node.  The scheduler bounds its
# filter by time instead (DRASchedulerFilterTimeout, 10 s); this is about as much search as a
# second of Python does.
DEFAULT_STEP_BUDGET = 200_000

# A selector's verdict on one device: True, False, or the CEL runtime error's message.
Verdict = Any
# Evaluates one selector on devices: (expression, devices) -> verdicts, or raises the compile
# error's message as SelectorCompileError.
Evaluate = Callable[[str, Sequence[Device]], list[Verdict]]


class SelectorCompileError(Exception):
    """A selector does not compile: the message is the compile error."""


class _Fatal(Exception):
    """An error that ends the allocation (upstream returns it from Allocate)."""

    def __init__(self, message: str, node_only: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.node_only = node_only


class _Exceeded(Exception):
    """errAllocationResultMaxSizeExceeded: more than 32 devices for one claim on this path."""


class _Budget(Exception):
    pass


@dataclass
class _RequestData:
    request: SubRequest
    parent: Request | None
    device_class: DeviceClass | None
    num_devices: int = 0
    all_devices: list[tuple[Pool, SliceFacts, Device]] = field(default_factory=list)
    selected: int = 0

    @property
    def name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent else self.request.name


class Allocation:
    """One Allocate call: the claims of one pod, on one node."""

    def __init__(self, claims: Sequence[Claim], node: Node, pools: list[Pool], classes: Mapping[str, DeviceClass],
                 allocated: AllocatedState | Ledger, features: Features, evaluate: Evaluate, budget: int,
                 available_counters: dict[str, dict[str, dict[str, Fraction]]]) -> None:
        self.claims = claims
        self.node = node
        self.pools = pools
        self.classes = classes
        self.allocated = allocated
        self.features = features
        self.evaluate = evaluate
        self.budget = budget
        self.steps = 0
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[ConstraintState]] = []
        self.matches: dict[tuple[str, tuple[int, int, int]], bool] = {}
        self.allocating: dict[str, set[int]] = {}  # device id -> claims (by index) it is being allocated for
        self.allocating_capacity: dict[str, dict[str, Fraction]] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}  # pool id -> set -> counter
        self.available_counters = available_counters  # pool id -> ..., shared by the nodes of one Allocator
        self.consumptions: dict[str, Any] = {}  # device id -> its consumesCounters (see _consumption)
        self.results: list[list[tuple[DeviceResult, Pool, SliceFacts, Device]]] = [[] for _ in claims]

    # -- Allocate ------------------------------------------------------------------------------

    def run(self) -> Outcome:
        try:
            self._validate()
            done = self._allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except _Fatal as fatal:
            return Outcome(ERROR, self.node.name, error=fatal.message, node_only=fatal.node_only, steps=self.steps)
        except _Exceeded:
            done = False
        except _Budget:
            return Outcome(BUDGET_EXHAUSTED, self.node.name, steps=self.steps, error=(
                f"the search stopped after {self.steps} steps without an answer (its budget); "
                "the scheduler searches for up to 10 seconds and may still find an allocation"))
        if not done:
            if any(pool.invalid for pool in self.pools):
                return Outcome(ERROR, self.node.name, error="invalid resource pools were encountered",
                               node_only=True, steps=self.steps)
            return Outcome(UNSATISFIABLE, self.node.name, steps=self.steps)
        return Outcome(ALLOCATED, self.node.name, tuple(self._claim_allocation(i) for i in range(len(self.claims))),
                       steps=self.steps)

    def _validate(self) -> None:
        for claim_index, claim in enumerate(self.claims):
            minimum_per_claim = 0
            for request_index, request in enumerate(claim.requests):
                if request.first_available and not self.features.prioritized_list:
                    raise _Fatal(f"claim {claim.name}, request {request.name}: has subrequests, but the "
                                 "DRAPrioritizedList feature is disabled")
                if not self.features.consumable_capacity:
                    if request.exactly is not None and request.exactly.capacity is not None:
                        raise _Fatal(f"claim {claim.name}, request {request.name}: has capacity requests, but the "
                                     "DRAConsumableCapacity feature is disabled")
                    for sub in request.first_available:
                        if sub.capacity is not None:
                            raise _Fatal(f"claim {claim.name}, subrequest {sub.name}: has capacity requests, but the "
                                         "DRAConsumableCapacity feature is disabled")
                if request.first_available:
                    fewest = None
                    for sub_index, sub in enumerate(request.first_available):
                        data = self._request_data(claim, sub, request, (claim_index, request_index, sub_index))
                        self.request_data[(claim_index, request_index, sub_index)] = data
                        fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
                    minimum_per_claim += fewest or 0
                else:
                    assert request.exactly is not None
                    data = self._request_data(claim, request.exactly, None, (claim_index, request_index, 0))
                    self.request_data[(claim_index, request_index, 0)] = data
                    minimum_per_claim += data.num_devices
            if minimum_per_claim > ALLOCATION_RESULTS_MAX_SIZE:
                raise _Fatal(f"claim {claim.name}: number of requested devices {minimum_per_claim} exceeds the "
                             f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            states = []
            for index, constraint in enumerate(claim.constraints):
                if constraint.match_attribute is None and constraint.distinct_attribute is None:
                    raise _Fatal(f"claim {claim.name}, constraint #{index}: empty constraint (unsupported constraint type?)")
                states.append(ConstraintState(constraint, self.features.list_type_attributes))
            self.constraints.append(states)

    def _request_data(self, claim: Claim, sub: SubRequest, parent: Request | None,
                      key: tuple[int, int, int]) -> _RequestData:
        for index, selector in enumerate(sub.selectors):
            if selector is None:
                raise _Fatal(f"claim {claim.name}, request {sub.name}, selector #{index}: CEL expression empty "
                             "(unsupported selector type?)")
        if not self.features.admin_access and sub.admin_access is not None:
            raise _Fatal(f"claim {claim.name}, request {sub.name}: admin access is requested, but the feature is disabled")
        if not sub.device_class:
            raise _Fatal(f"claim {claim.name}, request {sub.name}: missing device class name (unsupported request type?)")
        device_class = self.classes.get(sub.device_class)
        if device_class is None:
            raise _Fatal(f"claim {claim.name}, request {sub.name}: could not retrieve device class {sub.device_class}: "
                         f'deviceclass.resource.k8s.io "{sub.device_class}" not found')
        data = _RequestData(sub, parent, device_class)
        if sub.allocation_mode == EXACT_COUNT:
            data.num_devices = sub.count
        elif sub.allocation_mode == ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise _Fatal(f"claim {claim.name}, request {sub.name}: asks for all devices, but resource pool "
                                 f"{pool.id} is currently being updated")
                if pool.invalid:
                    raise _Fatal(f"claim {claim.name}, request {sub.name}: asks for all devices, but resource pool "
                                 f"{pool.id} is currently invalid")
                for facts in pool.slices:
                    for device in facts.devices:
                        if not self._selectable(key, data, facts, device):
                            continue
                        if self.features.consumable_capacity and not self._capacity_fits(data.request, device):
                            continue
                        data.all_devices.append((pool, facts, device))
            data.num_devices = len(data.all_devices)
        else:
            raise _Fatal(f"claim {claim.name}, request {sub.name}: unsupported count mode {sub.allocation_mode}")
        return data

    # -- allocateOne ---------------------------------------------------------------------------

    def _allocate_one(self, claim_index: int, request_index: int, sub_index: int, device_index: int,
                      in_sub_request: bool, start: tuple[int, int, int]) -> bool:
        self.steps += 1
        if self.steps > self.budget:
            raise _Budget
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        if request_index >= len(claim.requests):
            try:
                return self._allocate_one(claim_index + 1, 0, 0, 0, False, (0, 0, 0))
            except _Exceeded:
                return False  # another allocation of the earlier claims may leave room
        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]
        if not in_sub_request and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (claim_index, request_index, sub) in self.request_data:
                try:
                    success = self._allocate_one(claim_index, request_index, sub, device_index, True, (0, 0, 0))
                except _Exceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    self.request_data[(claim_index, request_index, 0)].selected = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _Exceeded
            return False

        request = data.request
        all_mode = request.allocation_mode == ALL
        if all_mode and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self._allocate_one(claim_index, request_index + 1, 0, 0, False, (0, 0, 0))
        if len(self.results[claim_index]) + data.num_devices - device_index > ALLOCATION_RESULTS_MAX_SIZE:
            raise _Exceeded

        if all_mode:
            pool, facts, device = data.all_devices[device_index]
            undo = self._allocate_device(claim_index, data, pool, facts, device, must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(claim_index, request_index, sub_index, device_index + 1, in_sub_request, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done

        admin = bool(request.admin_access)
        pool_start, slice_start, position_start = start
        # The loop below is the search's hot path (every device, at every step of backtracking):
        # the in-use check and the selectability cache are read inline, not through method calls.
        allocated, allocating, matches = self.allocated.devices, self.allocating, self.matches
        capacity = self.features.consumable_capacity
        for pool_index in range(pool_start, len(self.pools)):
            pool = self.pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            first_slice = slice_start if pool_index == pool_start else 0
            for slice_index in range(first_slice, len(pool.slices)):
                facts = pool.slices[slice_index]
                devices = facts.devices
                first = position_start if pool_index == pool_start and slice_index == slice_start else 0
                for position in range(first, len(devices)):
                    device = devices[position]
                    device_id = device.id
                    # Being in use is cheap to check, so it is checked before the selectors.
                    if admin:
                        if claim_index in allocating.get(device_id, ()):
                            continue
                    elif device_id in allocated or allocating.get(device_id):
                        continue
                    selectable = matches.get((device_id, key))
                    if selectable is None:
                        selectable = self._selectable(key, data, facts, device)
                    if not selectable:
                        continue
                    if capacity and not self._capacity_fits(request, device):
                        continue
                    undo = self._allocate_device(claim_index, data, pool, facts, device, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(claim_index, request_index, sub_index, device_index + 1,
                                                  in_sub_request, (pool_index, slice_index, position + 1))
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    # -- isSelectable ---------------------------------------------------------------------------

    def _selectable(self, key: tuple[int, int, int], data: _RequestData, facts: SliceFacts, device: Device) -> bool:
        placement = device.placement
        if not self.features.device_binding_and_status and placement.binding_conditions:
            return False
        cache_key = (device.id, key)
        known = self.matches.get(cache_key)
        if known is not None:
            return known
        claim = self.claims[key[0]]
        if data.device_class is not None:
            if not self._selectors_match(data.device_class.selectors, device, f"class {data.device_class.name}"):
                self.matches[cache_key] = False
                return False
        if not self._selectors_match(data.request.selectors, device, f"claim {claim.name}"):
            self.matches[cache_key] = False
            return False
        if facts.per_device_node_selection:
            try:
                reachable = node_matches(self.node, device.node_name, placement.all_nodes, placement.node_selector)
            except InvalidNodeSelector as err:
                raise _Fatal(f"failed to parse node selector of device {device.id}: {err}") from None
            if not reachable:
                self.matches[cache_key] = False
                return False
        self.matches[cache_key] = True
        return True

    def _selectors_match(self, selectors: Sequence[str], device: Device, owner: str) -> bool:
        for index, expression in enumerate(selectors):
            try:
                (verdict,) = self.evaluate(expression, (device,))
            except SelectorCompileError as err:
                raise _Fatal(f"{owner}: selector #{index}: CEL compile error: {err}") from None
            if verdict is True:
                continue
            if verdict is False:
                return False
            raise _Fatal(f"{owner}: selector #{index} on device {device.id}: CEL runtime error: {verdict}")
        return True

    # -- allocateDevice -------------------------------------------------------------------------

    def _capacity_fits(self, request: SubRequest, device: Device) -> bool:
        allocated = self.allocated.capacity.get(device.id)
        allocating = self.allocating_capacity.get(device.id)
        if not request.capacity and not device.request_policies and not allocated and not allocating:
            return True  # each capacity consumed whole, once: it fits itself
        return bool(cap.fits(device, request.capacity, allocated, allocating))

    def _in_use(self, device_id: str) -> bool:
        return device_id in self.allocated.devices or bool(self.allocating.get(device_id))

    def _allocate_device(self, claim_index: int, data: _RequestData, pool: Pool, facts: SliceFacts, device: Device,
                         must: bool) -> Callable[[], None] | None:
        """The device taken for the request, if it may be (the undo), or None."""
        request = data.request
        device_id = device.id
        placement = device.placement
        multiple = self.features.consumable_capacity and device.allow_multiple_allocations
        admin = bool(request.admin_access)
        if not multiple and admin and claim_index in self.allocating.get(device_id, ()):
            return None
        if not admin and self._in_use(device_id):
            return None
        if not self.features.partitionable_devices and placement.consumes_counters:
            return None
        skip_counters = multiple and (device_id in self.allocated.capacity or device_id in self.allocating_capacity)
        if not skip_counters and placement.consumes_counters and not self._take_counters(pool, device):
            return None
        if data.parent is None:
            base, sub_name = request.name, ""
        else:
            base, sub_name = data.parent.name, request.name
        if self.features.device_taints and _taint_prevents(device, request):
            # Counters taken above stay taken here, as upstream leaves them (its rollback runs
            # only for devices that were allocated).
            return None
        states = self.constraints[claim_index]
        for index, state in enumerate(states):
            if not state.add(base, sub_name, device):
                if must:
                    raise _Fatal(f"claim {self.claims[claim_index].name}, request {request.name}: cannot add device "
                                 f"{device_id} because a claim constraint would not be satisfied")
                for earlier in states[:index]:
                    earlier.remove(base, sub_name)
                return None
        claims = self.allocating.setdefault(device_id, set())
        if not multiple:
            claims.add(claim_index)
        consumed: dict[str, Fraction] = {}
        shared = False
        if self.features.consumable_capacity:
            if not self._capacity_fits(request, device):
                return None
            if multiple:
                consumed = cap.consumed_by(device, request.capacity)
                shared = True
                pending = self.allocating_capacity.setdefault(device_id, {})
                for name, amount in consumed.items():
                    pending[name] = pending.get(name, 0) + amount
        binding = self.features.device_binding_and_status
        result = DeviceResult(
            request=data.name,
            driver=device.driver,
            pool=device.pool,
            device=device.name,
            admin_access=True if admin else None,
            tolerations=request.tolerations,
            shared=shared,
            consumed_capacity=consumed or None,
            binding_conditions=placement.binding_conditions if binding else (),
            binding_failure_conditions=placement.binding_failure_conditions if binding else (),
        )
        results = self.results[claim_index]
        before = len(results)
        results.append((result, pool, facts, device))

        def undo() -> None:
            for state in states:
                state.remove(base, sub_name)
            self.allocating[device_id].discard(claim_index)
            if multiple:
                if consumed:
                    pending = self.allocating_capacity[device_id]
                    for name, amount in consumed.items():
                        pending[name] -= amount
                    if not any(pending.values()):
                        del self.allocating_capacity[device_id]
            elif self.features.partitionable_devices and placement.consumes_counters:
                self._return_counters(pool, device)
            del results[before:]

        return undo

    # -- counters ---------------------------------------------------------------------------------

    def _available(self, pool: Pool) -> tuple[dict[str, dict[str, Fraction]], bool]:
        """The pool's counters less what the devices allocated already consume, and whether one
        of them is overdrawn (computed once per pool).  Whole amounts are ints: the search adds
        and compares them at every step."""
        known = self.available_counters.get(pool.id)
        if known is None:
            available = {name: {c: _number(v) for c, v in counters.items()} for name, counters in pool.counter_sets.items()}
            for slices in (pool.slices, pool.other_slices):
                for facts in slices:
                    for device in facts.devices:
                        if not self.allocated.holds(device.id):
                            continue
                        for set_name, counters in device.placement.consumes_counters:
                            remaining = available.get(set_name, {})
                            for counter, amount in counters.items():
                                if counter in remaining:
                                    remaining[counter] -= _number(amount)
            overdrawn = any(v < 0 for counters in available.values() for v in counters.values())
            known = self.available_counters[pool.id] = (available, overdrawn)
        return known

    def _take_counters(self, pool: Pool, device: Device) -> bool:
        """checkAvailableCounters: the device's consumption added, and every counter of the pool
        still within what is available.  Only the sets this device draws on changed; a counter
        set already overdrawn (by allocated devices) refuses every device, as upstream's check of
        all the pool's counters does.  A device that does not fit takes nothing (checked before
        adding: most devices the search meets on a busy GPU do not fit)."""
        available, overdrawn = self._available(pool)
        if overdrawn:
            return False
        consumption = self._consumption(device)
        consumed = self.consumed_counters.setdefault(pool.id, {})
        for set_name, counters in consumption:
            taken = consumed.get(set_name) or _NONE
            limits = available.get(set_name) or _NONE
            for counter, amount in counters:
                if counter in limits and limits[counter] < taken.get(counter, 0) + amount:
                    return False
        for set_name, counters in consumption:
            taken = consumed.setdefault(set_name, {})
            for counter, amount in counters:
                taken[counter] = taken.get(counter, 0) + amount
        return True

    def _return_counters(self, pool: Pool, device: Device) -> None:
        consumed = self.consumed_counters.get(pool.id, {})
        for set_name, counters in self._consumption(device):
            taken = consumed.setdefault(set_name, {})
            for counter, amount in counters:
                taken[counter] = taken.get(counter, 0) - amount

    def _consumption(self, device: Device) -> tuple[tuple[str, tuple[tuple[str, Fraction | int], ...]], ...]:
        """The device's consumesCounters with whole amounts as ints, read once per search."""
        found = self.consumptions.get(device.id)
        if found is None:
            found = self.consumptions[device.id] = tuple(
                (set_name, tuple((counter, _number(amount)) for counter, amount in counters.items()))
                for set_name, counters in device.placement.consumes_counters)
        return found

    # -- the result -------------------------------------------------------------------------------

    def _claim_allocation(self, claim_index: int) -> ClaimAllocation:
        claim = self.claims[claim_index]
        chosen = {}
        for request_index, request in enumerate(claim.requests):
            if request.first_available:
                selected = self.request_data[(claim_index, request_index, 0)].selected
                chosen[request.name] = request.first_available[selected].name
        entries = self.results[claim_index]
        return ClaimAllocation(
            claim=claim.name,
            devices=tuple(result for result, *_ in entries),
            node_selector=self._node_selector(entries),
            chosen=chosen,
            config=self._config(claim_index),
        )

    def _config(self, claim_index: int) -> tuple[AllocationConfig, ...]:
        """The allocation's device configuration, as upstream populates it: each class's configs
        once (for every request using the class), then the claim's own that name an allocated
        request (or subrequest) or none; a config then naming every request names none."""
        claim = self.claims[claim_index]
        # The allocated name of each request: the subrequest chosen for a firstAvailable one.
        names: list[tuple[str, str | None]] = []  # (request name, "request/subrequest" or None)
        configs: list[tuple[str, list[str], Mapping[str, Any]]] = []
        by_class: dict[str, tuple[int, int]] = {}
        for request_index, request in enumerate(claim.requests):
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent is not None:
                data = self.request_data[(claim_index, request_index, data.selected)]
            names.append((request.name, data.name if data.parent is not None else None))
            device_class = data.device_class
            if device_class is None:
                continue
            known = by_class.get(device_class.name)
            if known is not None:
                for entry in configs[known[0]:known[1]]:
                    entry[1].append(data.name)
                continue
            start = len(configs)
            configs.extend((FROM_CLASS, [data.name], config) for config in device_class.config)
            by_class[device_class.name] = (start, len(configs))
        for config in claim.config:
            if not config.requests or any(name in config.requests or (sub is not None and sub in config.requests)
                                          for name, sub in names):
                configs.append((FROM_CLAIM, list(config.requests), config.configuration))
        return tuple(AllocationConfig(source, () if all(name in requests or (sub is not None and sub in requests)
                                                        for name, sub in names) else tuple(requests), configuration)
                     for source, requests, configuration in configs)

    def _node_selector(self, entries: Sequence[tuple[DeviceResult, Pool, SliceFacts, Device]]) -> Mapping[str, Any] | None:
        fields: list[Any] = []
        expressions: list[Any] = []
        for _, _, facts, device in entries:
            if facts.per_device_node_selection:
                node_name, selector = device.node_name, device.placement.node_selector
            else:
                node_name, selector = facts.node_name, facts.node_selector
            if node_name or device.placement.binds_to_node:
                return node_name_selector(self.node.name)
            if selector is not None:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) == 1:
                    for requirement in terms[0].get("matchFields") or []:
                        if not any(_same_requirement(requirement, r) for r in fields):
                            fields.append(requirement)
                    for requirement in terms[0].get("matchExpressions") or []:
                        if not any(_same_requirement(requirement, r) for r in expressions):
                            expressions.append(requirement)
                elif len(terms) > 1:
                    raise _Fatal(f"create NodeSelector for claim {self.claims[0].name}: unsupported "
                                 f"ResourceSlice.NodeSelector with {len(terms)} terms")
        if not fields and not expressions:
            return None
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


_NONE: Mapping[str, Any] = {}


def _number(value: Fraction) -> Fraction | int:
    """A whole amount as an int (quantities are mostly whole bytes): ints add and compare fast."""
    return value.numerator if value.denominator == 1 else value


def _same_requirement(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
            and set(a.get("values") or ()) == set(b.get("values") or ()))


def _taint_prevents(device: Device, request: SubRequest) -> bool:
    for taint in device.placement.taints:
        if taint.effect in ("NoSchedule", "NoExecute"):
            if not any(t.tolerates(taint) for t in request.tolerations):
                return True
    return False


def gather(node_slices: Sequence[SliceFacts], node: Node, features: Features,
           all_slices: Sequence[SliceFacts]) -> list[Pool] | str:
    """The node's pools, or the error upstream wraps as "gather pool information"."""
    try:
        return gather_pools(node_slices, node, features, all_slices)
    except PoolError as err:
        return f"gather pool information: {err}"
