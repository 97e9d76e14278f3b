"""The explain engine: how each request of a claim meets the devices of the cluster.

Pure and I/O-free (the CLI reads files, `explain POD` reads the API): objects in, ClaimResult out.
It evaluates selectors the way the scheduler's allocator does (class selectors first, then the
request's, stopping at the first that says no; a CEL runtime error aborts the pod's scheduling),
and additionally evaluates every request selector on every device of the class, so it can say
which selector rejects the most devices.
"""

from __future__ import annotations

from contextvars import ContextVar

import dataclasses
import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from kubectl_gpu.allocator import BUDGET_EXHAUSTED, ERROR as ALLOCATOR_ERROR, Allocator, Outcome
from kubectl_gpu.cel import CelCompileError, CompiledSelector, Gates, compile_selector
from kubectl_gpu.dra.devices import Device
from kubectl_gpu.dra.facts import removed_attribute_advice
from kubectl_gpu.dra.gates import normalize_gates
from kubectl_gpu.dra.values import Quantity

from .allocations import Allocations, Holder
from .judge import ANY_NODE, Cluster, allocated_state, allocator_claim, build_allocator, candidate_nodes, facts_from_devices
from .model import (
    ERROR,
    MATCHED,
    NOT_EVALUATED,
    NOT_MATCHED,
    AllocatedDevice,
    AlternativeResult,
    ClaimResult,
    DeviceResult,
    RequestResult,
    SelectorOutcome,
    SelectorResult,
    device_result_fields,
    new_device_result,
)
from .specs import ClaimSpec, DeviceClassSpec, RequestSpec, SubrequestSpec, builtin_class_owner, builtin_device_class

SHARED_NODE = ANY_NODE

# Where explain_claim feeds the selector verdicts it computes (the allocator's cache), or None.
Remember = Callable[[str, Sequence[Device], Sequence[Any]], None] | None


@dataclass
class _SelectorState:
    """One selector's counts while the devices are evaluated, made into a SelectorResult at the end."""

    label: str
    origin: str
    expression: str
    compiled: CompiledSelector | None
    compile_error: str | None
    evaluated: int = 0
    matched: int = 0
    rejected: int = 0
    errors: int = 0
    first_error: str | None = None
    matched_outcome: SelectorOutcome = field(init=False, repr=False)
    rejected_outcome: SelectorOutcome = field(init=False, repr=False)
    not_evaluated_outcome: SelectorOutcome = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Frozen outcomes shared by every device: the per-device loop allocates none of its own.
        self.matched_outcome = SelectorOutcome(self.label, MATCHED)
        self.rejected_outcome = SelectorOutcome(self.label, NOT_MATCHED)
        self.not_evaluated_outcome = SelectorOutcome(self.label, NOT_EVALUATED)

    def result(self) -> SelectorResult:
        return SelectorResult(
            selector=self.label,
            origin=self.origin,
            expression=self.expression,
            engine=self.compiled.engine if self.compiled else None,
            evaluated=self.evaluated,
            matched=self.matched,
            rejected=self.rejected,
            errors=self.errors,
            first_error=self.first_error,
            compile_error=self.compile_error,
        )


def _compile(label: str, origin: str, expression: str, gates: Gates, stored: bool) -> _SelectorState:
    """A new claim's selector compiles as a new expression under the cluster's feature gates (what
    the API server says when the claim is created); a claim the cluster already holds and a
    DeviceClass's as the scheduler compiles them (StoredExpressions, whatever the gates)."""
    try:
        compiled = compile_selector(expression, gates=gates, stored=stored)
        return _SelectorState(label, origin, expression, compiled, None)
    except CelCompileError as err:
        return _SelectorState(label, origin, expression, None, str(err))


@dataclass(frozen=True)
class _ClassPass:
    """A DeviceClass's selectors evaluated once over every device, in the scheduler's order.  They
    do not depend on the request, so every request (and firstAvailable alternative, and claim)
    naming the class reuses this pass instead of evaluating them again per device."""

    states: list[_SelectorState]  # with their counts over every device
    outcomes: list[tuple[SelectorOutcome, ...]]  # per device, aligned with the devices
    rejected_by: list[str | None]  # per device: the first class selector that said no
    errors: list[str | None]  # per device: the class selector's CEL runtime error, worded for people


# DeviceClass -> its pass over one sequence of devices (see explain_claim's class_passes).
ClassPasses = dict[DeviceClassSpec, _ClassPass]


def _class_pass(device_class: DeviceClassSpec, states: list[_SelectorState], devices: Sequence[Device],
                remember: Remember = None) -> _ClassPass:
    # Selector by selector rather than device by device: each selector runs over the devices
    # every earlier one accepted (the scheduler's order and stopping point for each device), in
    # one tight loop, and the outcome tuples are shared by every device that ends the same way.
    count = len(devices)
    all_matched = tuple(state.matched_outcome for state in states)
    outcomes: list[tuple[SelectorOutcome, ...]] = [all_matched] * count
    rejected_by: list[str | None] = [None] * count
    errors: list[str | None] = [None] * count
    accepted: Sequence[int] = range(count)  # positions of the devices every selector so far said yes to
    for k, state in enumerate(states):
        before = all_matched[:k]
        rejected = before + (state.rejected_outcome,)
        candidates = devices if k == 0 else [devices[i] for i in accepted]
        still: list[int] = []
        for i, verdict in zip(accepted, _verdicts(state, candidates, remember)):
            if verdict is True:
                still.append(i)
            elif verdict is False:
                outcomes[i] = rejected
                rejected_by[i] = state.label
            else:
                outcomes[i] = before + (SelectorOutcome(state.label, ERROR, verdict),)
                errors[i] = f"class {device_class.name}: selector #{state.label.rsplit('#', 1)[1]}: CEL runtime error: {verdict}"
        accepted = still
    return _ClassPass(states, outcomes, rejected_by, errors)


def explain_claim(
    claim: ClaimSpec,
    devices: Sequence[Device],
    classes: Mapping[str, DeviceClassSpec],
    allocations: Allocations | None = None,
    class_passes: ClassPasses | None = None,
    gates: Gates = None,
    judge: tuple[Allocator, Cluster] | None = None,
) -> ClaimResult:
    """Explain one claim against these devices.  ``classes`` are the cluster's DeviceClasses; the
    NVIDIA driver's classes are assumed when missing (and the result says so).  ``allocations``
    maps device ids to the claims holding them; the claim's own allocation is ignored.
    ``class_passes`` (start with ``{}``) lets several claims over the SAME devices share each
    class's selector evaluation.  ``gates`` are the cluster's enabled DRA feature gates (see
    :func:`kubectl_gpu.dra.gates.default_gates`; None: that function's default release).  ``judge`` is
    the structured allocator over the cluster's slices (see explain_objects); without it one is
    built over ``devices`` alone (no counter sets, every pool complete)."""
    passes: ClassPasses = {} if class_passes is None else class_passes
    own = {claim.ref}
    taken = {
        device: tuple(h for h in holders if h.claim not in own)
        for device, holders in (allocations or {}).items()
    }
    if judge is None:
        cluster = Cluster(facts_from_devices(devices), normalize_gates(gates))
        class_names = [a.device_class for r in claim.requests for a in r.alternatives]
        judge = (build_allocator(cluster, classes, class_names, allocations, ()), cluster)
    allocator, cluster = judge
    notes: list[str] = []
    requests = tuple(_explain_request(claim, request, devices, classes, taken, notes, passes, gates, allocator.remember)
                     for request in claim.requests)
    if claim.allocated:
        notes.append(f"already allocated: {', '.join(claim.allocated)} (explained as if it were not)")
    verdict = _claim_verdict(claim, requests, allocator, cluster, allocations)
    return ClaimResult(
        kind=claim.kind,
        namespace=claim.namespace,
        name=claim.name,
        api_version=claim.api_version,
        allocatable=verdict.allocatable,
        node=verdict.node,
        verdict=verdict.text,
        notes=tuple(dict.fromkeys(notes)),
        requests=verdict.requests,
        allocation=verdict.allocation,
        undecided=verdict.undecided,
    )


def _explain_request(
    claim: ClaimSpec,
    request: RequestSpec,
    devices: Sequence[Device],
    classes: Mapping[str, DeviceClassSpec],
    taken: Allocations,
    notes: list[str],
    passes: ClassPasses,
    gates: Gates,
    remember: Remember = None,
) -> RequestResult:
    alternatives = tuple(
        _explain_alternative(claim, sub, devices, classes, taken, notes, passes, gates, remember)
        for sub in request.alternatives
    )
    mode = "firstAvailable" if request.first_available else "exactly"
    if not request.first_available:
        (only,) = alternatives
        return RequestResult(request.name, mode, only.allocatable, only.name if only.allocatable else None, only.verdict, alternatives)
    for alternative in alternatives:
        short = alternative.name.split("/", 1)[1]
        if alternative.fatal_error:
            verdict = f"alternative {short} cannot be evaluated: {alternative.verdict}"
            return RequestResult(request.name, mode, False, None, verdict, alternatives)
        if alternative.allocatable:
            skipped = [a.name.split("/", 1)[1] for a in alternatives if a is not alternative][: alternatives.index(alternative)]
            before = f" ({', '.join(skipped)} cannot be allocated)" if skipped else ""
            return RequestResult(request.name, mode, True, alternative.name, f"uses alternative {short}{before}: {alternative.verdict}", alternatives)
    verdict = "no alternative can be allocated: " + "; ".join(
        f"{a.name.split('/', 1)[1]}: {a.verdict}" for a in alternatives
    )
    return RequestResult(request.name, mode, False, None, verdict, alternatives)


def _explain_alternative(
    claim: ClaimSpec,
    sub: SubrequestSpec,
    devices: Sequence[Device],
    classes: Mapping[str, DeviceClassSpec],
    taken: Allocations,
    notes: list[str],
    passes: ClassPasses,
    gates: Gates,
    remember: Remember = None,
) -> AlternativeResult:
    device_class = classes.get(sub.device_class)
    source = "given"
    if device_class is None:
        device_class = builtin_device_class(sub.device_class)
        owner, owner_in_words = builtin_class_owner(sub.device_class)
        source = f"built-in ({owner})" if device_class else "missing"
        if device_class:
            notes.append(
                f"DeviceClass {sub.device_class} was not given; using {owner_in_words}'s definition "
                f"({device_class.selectors[0]})"
            )
    capacity_text = {k: str(v) for k, v in sub.capacity_requests.items()}
    if device_class is None:
        verdict = (
            f"DeviceClass {sub.device_class} does not exist, so the scheduler cannot allocate this request; "
            "create it (install the driver that provides it) or pass it with --classes"
        )
        return AlternativeResult(
            sub.name, sub.device_class, source, sub.allocation_mode, sub.count, capacity_text, sub.admin_access,
            len(devices), 0, 0, 0, None, 0, False, verdict, verdict, (), (),
        )

    class_states = [_compile(f"class {device_class.name} #{i}", "class", e, gates, True) for i, e in enumerate(device_class.selectors)]
    request_states = [_compile(f"#{i}", "request", e, gates, claim.stored) for i, e in enumerate(sub.selectors)]
    compile_failures = [s for s in class_states + request_states if s.compiled is None]
    if compile_failures:
        failed = compile_failures[0]
        where = f"class {device_class.name}" if failed.origin == "class" else f"claim {claim.ref}"
        index = failed.label.rsplit("#", 1)[1]
        verdict = (
            f"{where}: selector #{index}: CEL compile error: {failed.compile_error}; "
            + ("the API server rejects this claim" if failed.origin == "request" else "the scheduler cannot use this class")
        )
        return AlternativeResult(
            sub.name, sub.device_class, source, sub.allocation_mode, sub.count, capacity_text, sub.admin_access,
            len(devices), 0, 0, 0, None, 0, False, verdict, verdict,
            tuple(s.result() for s in class_states + request_states), (),
        )
    class_pass = passes.get(device_class)
    if class_pass is None:
        class_pass = passes[device_class] = _class_pass(device_class, class_states, devices, remember)

    # The request's selectors run one at a time over the devices in the class (each over all of
    # them, for the per-selector counts), then each device's result is put together.
    in_class_devices = [d for d, no, error in zip(devices, class_pass.rejected_by, class_pass.errors)
                        if no is None and error is None]
    columns = [_verdicts(state, in_class_devices, remember) for state in request_states]
    verdicts = iter(zip(*columns)) if columns else itertools.repeat(())
    not_evaluated = tuple(s.not_evaluated_outcome for s in request_states)
    # Devices that end the same way (the same selector outcomes, nobody holding them) share the
    # fields of their DeviceResult but the device and node: each distinct ending is worked out
    # once, and each device's result is a copy of its fields (new_device_result) instead of a
    # DeviceResult built field by field, 8,000 times in a 1,000-node cluster.
    # In the class, a device's ending is its row of verdicts: every class selector said yes to it,
    # and the class pass gives all such devices its one all-matched tuple of outcomes.
    in_class_endings: dict[tuple[bool | str, ...], dict[str, Any]] = {}
    other_endings: dict[tuple[int, str | None, str | None], dict[str, Any]] = {}
    results: list[DeviceResult] = []
    append = results.append
    in_class = matched = free_count = shared_free = 0
    free_per_node: dict[str, int] = {}
    fatal: str | None = None
    capacity_requested = bool(sub.capacity_requests)
    for device, class_outcomes, first_no, error in zip(
        devices, class_pass.outcomes, class_pass.rejected_by, class_pass.errors
    ):
        device_id = device.id
        node = device.node_name or f"({device.node_scope or 'all nodes'})"  # or where it is reachable
        if first_no is None and error is None:
            in_class += 1
            row = next(verdicts)
            fields = in_class_endings.get(row)
            if fields is None:
                fields = in_class_endings[row] = _in_class_ending(claim, request_states, class_outcomes, row)
        else:
            # Keyed by the outcomes' identity: the class pass shares one tuple among the devices
            # a class selector rejects, and keeps every tuple alive while this loop runs.
            key = (id(class_outcomes), first_no, error)
            fields = other_endings.get(key)
            if fields is None:
                fields = other_endings[key] = _ending(first_no, error, class_outcomes + not_evaluated)
        kind = fields["result"]
        if kind is ERROR:
            fatal = fatal or f"{fields['error']} (device {device_id})"
        elif kind is MATCHED:
            matched += 1
            holders = taken.get(device_id, ()) if taken else ()
            if holders or capacity_requested:
                free, capacity_note = _availability(sub, device, holders)
                fields = {**fields, "free": free, "taken_by": tuple([h.label for h in holders]) if holders else (),
                          "capacity": capacity_note}
            if fields["free"]:
                free_count += 1
                if node.startswith("("):  # reachable from several nodes
                    shared_free += 1
                else:
                    free_per_node[node] = free_per_node.get(node, 0) + 1
        append(new_device_result(fields, device_id, node))

    best_node, best_free = _best_node(free_per_node, shared_free)
    if sub.allocation_mode == "All":
        allocatable = fatal is None and _all_mode_node(results) is not None
    else:
        allocatable = fatal is None and best_free >= sub.count
    selectors = tuple(s.result() for s in class_pass.states + request_states)
    verdict = _alternative_verdict(sub, device_class.name, len(devices), in_class, matched, free_count, best_node, best_free, allocatable, fatal, request_states, results)
    return AlternativeResult(
        sub.name, sub.device_class, source, sub.allocation_mode, sub.count, capacity_text, sub.admin_access,
        len(devices), in_class, matched, free_count, best_node, best_free, allocatable, fatal, verdict,
        selectors, tuple(results),
    )


def _in_class_ending(claim: ClaimSpec, request_states: Sequence[_SelectorState],
                     class_outcomes: tuple[SelectorOutcome, ...], row: tuple[bool | str, ...]) -> dict[str, Any]:
    """A device every class selector accepts, as the request's selectors answer ``row``: the
    scheduler stops at the first selector that is not true, which decides the result."""
    first_no: str | None = None
    error: str | None = None
    outcomes = list(class_outcomes)
    for state, verdict in zip(request_states, row):
        if verdict is True or verdict is False:
            outcomes.append(state.matched_outcome if verdict else state.rejected_outcome)
            if not verdict and first_no is None and error is None:
                first_no = state.label
        else:
            outcomes.append(SelectorOutcome(state.label, ERROR, verdict))
            if first_no is None and error is None:
                error = f"claim {claim.ref}: selector {state.label}: CEL runtime error: {verdict}"
    return _ending(first_no, error, tuple(outcomes))


def _ending(first_no: str | None, error: str | None, outcomes: tuple[SelectorOutcome, ...]) -> dict[str, Any]:
    """DeviceResult's fields but device and node, for a device nobody holds (see new_device_result)."""
    if error is not None:
        return device_result_fields(ERROR, None, error, False, (), None, outcomes)
    if first_no is not None:
        return device_result_fields(NOT_MATCHED, first_no, None, False, (), None, outcomes)
    return device_result_fields(MATCHED, None, None, True, (), None, outcomes)  # what _availability says


def _verdicts(state: _SelectorState, devices: Sequence[Device], remember: Remember = None) -> list[bool | str]:
    """The selector's answer for each device: True, False, or its CEL runtime error's message;
    the state counts them (and ``remember`` keeps them for the allocator)."""
    assert state.compiled is not None
    verdicts: list[Any] = state.compiled.verdicts(devices)  # one call for every device
    matched, rejected = verdicts.count(True), verdicts.count(False)  # an error is neither
    if matched + rejected != len(verdicts):
        for i, verdict in enumerate(verdicts):
            if verdict is not True and verdict is not False:
                state.errors += 1
                if state.first_error is None:
                    state.first_error = f"{verdict.message} (device {devices[i].id})"
                verdicts[i] = verdict.message
    state.evaluated += len(devices)
    state.matched += matched
    state.rejected += rejected
    if remember is not None:
        remember(state.expression, devices, verdicts)
    return verdicts


def _availability(sub: SubrequestSpec, device: Device, holders: tuple[Holder, ...]) -> tuple[bool, str | None]:
    blocking = [h for h in holders if not h.admin_access]
    if sub.admin_access:
        return True, None  # admin access may use devices that are already allocated
    if blocking and not device.allow_multiple_allocations:
        return False, None
    if not sub.capacity_requests:
        if blocking:
            return True, "shared device (allowMultipleAllocations)"
        return True, None
    notes = []
    for name, wanted in sub.capacity_requests.items():
        total = device.capacity_value(name)
        if total is None:
            return False, f"device has no capacity {name}"
        effective, problem = _apply_policy(wanted, device, name)
        if problem:
            return False, f"{name}: {problem}"
        consumed = sum((h.consumed.get(name, Quantity(Fraction(0), "0")).value for h in blocking), Fraction(0))
        remaining = total.value - consumed
        if effective.value > remaining:
            return False, f"{name}: needs {effective}, {Quantity.of(remaining)} of {total} left"
        notes.append(f"{name}: {effective} of {Quantity.of(remaining)} left")
    return True, "; ".join(notes)


def _apply_policy(wanted: Quantity, device: Device, name: str) -> tuple[Quantity, str | None]:
    """Round a capacity request the way the device's requestPolicy says (KEP-5075)."""
    policy = device.request_policies.get(name) or device.request_policies.get(f"{device.driver}/{name}")
    if not policy:
        return wanted, None
    valid_values = policy.get("validValues")
    if valid_values:
        options = sorted((Quantity.read(v) for v in valid_values), key=lambda q: q.value)
        for option in options:
            if option.value >= wanted.value:
                return option, None
        return wanted, f"{wanted} is above every allowed value ({', '.join(map(str, options))})"
    valid_range = policy.get("validRange")
    if valid_range:
        minimum = Quantity.read(valid_range.get("min", 0))
        value = max(wanted.value, minimum.value)
        step = valid_range.get("step")
        if step:
            step_value = Quantity.read(step).value
            steps = -(-(value - minimum.value) // step_value)
            value = minimum.value + steps * step_value
        maximum = valid_range.get("max")
        if maximum is not None and value > Quantity.read(maximum).value:
            return wanted, f"{wanted} is above the maximum {maximum}"
        return Quantity.of(value), None
    return wanted, None


# Nodes to suggest last (doctor flags them for double counting: a device there may be handed out
# twice).  Set by explain_objects for one explanation; a context variable so the engine's many
# helpers need not pass it along.
AVOID_NODES: ContextVar[frozenset[str]] = ContextVar("AVOID_NODES", default=frozenset())


def _best_node(free_per_node: Mapping[str, int], shared: int) -> tuple[str | None, int]:
    """The node with the most free devices (``shared``: free devices reachable from several nodes)."""
    if not free_per_node:
        return (SHARED_NODE if shared else None), shared
    avoid = AVOID_NODES.get()
    node = max(sorted(free_per_node), key=lambda n: (n not in avoid, free_per_node[n]))
    return node, free_per_node[node] + shared


def _all_mode_node(results: Sequence[DeviceResult]) -> str | None:
    """allocationMode All: a node where every matching device is free (and there is one)."""
    nodes: dict[str, list[DeviceResult]] = {}
    for r in results:
        if r.result == MATCHED:
            nodes.setdefault(r.node, []).append(r)
    for node in sorted(nodes):
        if all(r.free for r in nodes[node]):
            return node
    return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _short(expression: str, limit: int = 70) -> str:
    flat = " ".join(expression.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _hint(error: str) -> str:
    if "no such key:" in error:
        key = error.split("no such key:", 1)[1].split()[0].strip("()")
        # the message names the key, not its domain: a removed NVIDIA name is the likely reading
        return removed_attribute_advice(key) or (
            f"no device in the class publishes {key!r}: fix the name, or guard it with has(...)")
    return "fix the selector"


def _alternative_verdict(
    sub: SubrequestSpec,
    class_name: str,
    total: int,
    in_class: int,
    matched: int,
    free: int,
    best_node: str | None,
    best_free: int,
    allocatable: bool,
    fatal: str | None,
    request_states: Sequence[_SelectorState],
    results: Sequence[DeviceResult],
) -> str:
    needs = "needs all matching devices of a node" if sub.allocation_mode == "All" else f"needs {_plural(sub.count, 'device')}"
    if sub.capacity_requests:
        needs += " with " + ", ".join(f"{k} {v}" for k, v in sub.capacity_requests.items())
    if fatal:
        return f"cannot be allocated: {fatal}. The scheduler aborts scheduling the pod on this error; {_hint(fatal)}"
    counts = f"{_plural(in_class, 'device')} in class {class_name} (of {total})"
    if sub.selectors:
        counts += f", {matched} match the selectors"
    counts += f", {free} free"
    if allocatable:
        where = f" on node {best_node}" if best_node and best_node != SHARED_NODE else ""
        return f"{needs}: {counts} - can be allocated{where}"
    reasons = []
    if in_class == 0:
        reasons.append(f"no device is in class {class_name}")
    worst = max(request_states, key=lambda s: s.rejected, default=None)
    if worst is not None and worst.rejected and matched < max(sub.count, 1):
        reasons.append(f"selector {worst.label} ({_short(worst.expression)}) rejects {worst.rejected} of {in_class}")
    taken = sum(1 for r in results if r.result == MATCHED and not r.free and r.taken_by)
    if taken:
        reasons.append(f"{taken} taken by other claims")
    short_capacity = [r for r in results if r.result == MATCHED and not r.free and not r.taken_by and r.capacity]
    if short_capacity:
        reasons.append(f"{len(short_capacity)} lack capacity ({short_capacity[0].capacity})")
    if sub.allocation_mode == "All" and matched:
        reasons.append("every node has a matching device in use")
    elif free >= sub.count > best_free:
        reasons.append(f"at most {best_free} free on one node")
    matches_text = f"{matched} {'matches' if matched == 1 else 'match'}"
    return f"{needs}, {matches_text}: " + ("; ".join(reasons) or counts)


@dataclass(frozen=True)
class _Verdict:
    allocatable: bool
    node: str | None
    text: str
    requests: tuple[RequestResult, ...]
    allocation: tuple[AllocatedDevice, ...] = ()
    undecided: bool = False


def _claim_verdict(claim: ClaimSpec, requests: tuple[RequestResult, ...], allocator: Allocator, cluster: Cluster,
                   allocations: Allocations | None) -> _Verdict:
    """The structured allocator decides; explain's per-request findings word the reasons."""
    blocked = [r for r in requests if not r.allocatable]
    # A missing class or a selector that does not compile: explain's wording says what to fix
    # (the API server or the scheduler refuses before any search).  A CEL runtime error is the
    # search's to meet: a device in use is skipped before its selectors run.
    refused = next((r for r in blocked if all(a.class_source == "missing" or any(s.compile_error for s in a.selectors)
                                              for a in r.alternatives)), None)
    if refused is not None:
        return _Verdict(False, None, f"cannot be allocated: request {refused.name}: {refused.verdict}", requests)
    state = allocated_state(allocations, (claim.ref,)) if claim.allocated or allocations else None
    target = allocator_claim(claim)
    # A node's search can end in an error only where a selector fails on a device: then every
    # node is tried (the scheduler's filter runs on all of them); otherwise the first fit is the answer.
    every_node = any(s.errors for r in requests for a in r.alternatives for s in a.selectors)
    failed_on_node: Outcome | None = None
    undecided: Outcome | None = None
    chosen: Outcome | None = None
    for node in candidate_nodes(allocator, cluster, AVOID_NODES.get()):
        outcome = allocator.allocate([target], node, state)
        if outcome.kind == ALLOCATOR_ERROR:
            if not outcome.node_only:
                failing = next((r for r in blocked if any(a.fatal_error for a in r.alternatives)), None)
                reason = f"request {failing.name}: {failing.verdict}" if failing else outcome.error
                return _Verdict(False, None, f"cannot be allocated: {reason}", requests)
            failed_on_node = failed_on_node or outcome
        elif outcome.kind == BUDGET_EXHAUSTED:
            undecided = undecided or outcome
        elif outcome.allocated and chosen is None:
            chosen = outcome
            if not every_node:
                break
    if chosen is not None:
        (allocation,) = chosen.allocations
        devices = tuple(AllocatedDevice(d.request, d.driver, d.pool, d.device) for d in allocation.devices)
        node = chosen.node
        where = f" on node {node}" if node != SHARED_NODE else ""
        return _Verdict(True, node, f"can be allocated{where}", _with_choices(requests, allocation.chosen), devices)
    if undecided is not None:
        return _Verdict(False, None, (
            f"cannot be decided: on node {undecided.node} {undecided.error}; no other node fits"), requests,
            undecided=True)
    if blocked:
        first = blocked[0]
        return _Verdict(False, None, f"cannot be allocated: request {first.name}: {first.verdict}", requests)
    if failed_on_node is not None:
        return _Verdict(False, None, f"cannot be allocated: {failed_on_node.error}", requests)
    detail = ""
    if claim.constraints:
        detail = " with " + ", ".join(
            f"the same {c.match_attribute}" if c.match_attribute else f"distinct {c.distinct_attribute}"
            for c in claim.constraints)
    return _Verdict(False, None, (
        "cannot be allocated: every request fits alone, but no node has enough distinct free devices "
        f"for all of them together{detail} (the scheduler's allocator tried every combination, with device "
        "taints, shared counters and devices in use)"), requests)


def explain_together(results: Sequence[ClaimResult], specs: Sequence[ClaimSpec], allocator: Allocator, cluster: Cluster,
                     allocations: Allocations | None) -> list[ClaimResult]:
    """One pod's claims allocated together, on one node, as the scheduler allocates them: each
    result then says where, and with which devices, or that the claims fit only apart."""
    claims = [allocator_claim(spec) for spec in specs]
    state = allocated_state(allocations, [spec.ref for spec in specs])
    chosen: Outcome | None = None
    for node in candidate_nodes(allocator, cluster, AVOID_NODES.get()):
        outcome = allocator.allocate(claims, node, state)
        if outcome.kind == ALLOCATOR_ERROR and not outcome.node_only:
            break
        if outcome.allocated:
            chosen = outcome
            break
    updated = []
    for index, result in enumerate(results):
        if chosen is not None:
            allocation = chosen.allocations[index]
            where = f" on node {chosen.node}" if chosen.node != SHARED_NODE else ""
            updated.append(dataclasses.replace(
                result, allocatable=True, node=chosen.node,
                verdict=f"can be allocated{where}, together with the pod's other claims",
                requests=_with_choices(result.requests, allocation.chosen),
                allocation=tuple(AllocatedDevice(d.request, d.driver, d.pool, d.device) for d in allocation.devices)))
        elif result.allocatable:
            updated.append(dataclasses.replace(
                result, allocatable=False, node=None, allocation=(),
                verdict=("cannot be allocated together with the pod's other claims: it fits alone, but no node "
                         "has devices for all of the pod's claims at once")))
        else:
            updated.append(result)
    return updated


def _with_choices(requests: tuple[RequestResult, ...], chosen: Mapping[str, str]) -> tuple[RequestResult, ...]:
    """The firstAvailable alternatives the allocator chose, where explain's first fit alone differs."""
    updated = []
    for request in requests:
        pick = chosen.get(request.name)
        full = f"{request.name}/{pick}" if pick else None
        if full is None:
            if not request.allocatable:  # a selector failed only on devices the search never reached
                request = dataclasses.replace(request, allocatable=True, chosen=request.alternatives[0].name, verdict=(
                    "can be allocated: the devices a selector fails on are in use, and the scheduler skips them "
                    "before evaluating selectors"))
            updated.append(request)
            continue
        if request.chosen == full:
            updated.append(request)
            continue
        alternative = next(a for a in request.alternatives if a.name == full)
        skipped = [a.name.split("/", 1)[1] for a in request.alternatives[: request.alternatives.index(alternative)]]
        before = f" ({', '.join(skipped)} cannot be allocated with the claim's other requests)" if skipped else ""
        updated.append(dataclasses.replace(request, allocatable=True, chosen=full,
                                           verdict=f"uses alternative {pick}{before}: {alternative.verdict}"))
    return tuple(updated)
