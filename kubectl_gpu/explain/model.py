"""The result of `explain`: plain immutable data, rendered as a table for people or JSON for scripts.

Field order is the JSON key order, so keep it stable; add fields at the end of a class.
"""

from __future__ import annotations

from dataclasses import dataclass

MATCHED = "matched"
NOT_MATCHED = "not matched"
ERROR = "error"
NOT_EVALUATED = "not evaluated"


@dataclass(frozen=True)
class SelectorOutcome:
    """What one selector said about one device."""

    selector: str  # "class gpu.nvidia.com #0" or "#1" (indexes as the scheduler prints them)
    result: str  # matched | not matched | error | not evaluated
    message: str | None = None


_set_fields = object.__setattr__


@dataclass(frozen=True, init=False)
class DeviceResult:
    """One device as one alternative of a request sees it: matched, rejected (by which selector) or an error."""

    device: str  # driver/pool/name
    node: str  # node name, or where the device is reachable
    result: str  # matched | not matched | error
    rejected_by: str | None  # the first selector that said no, in the scheduler's order
    error: str | None  # the CEL runtime error, worded as the scheduler reports it
    free: bool  # matched and usable by this request now
    taken_by: tuple[str, ...]  # claims holding the device (namespace/name:request)
    capacity: str | None  # consumable capacity verdict, when the request asks for capacity
    selectors: tuple[SelectorOutcome, ...]

    def __init__(self, device: str, node: str, result: str, rejected_by: str | None, error: str | None, free: bool,
                 taken_by: tuple[str, ...], capacity: str | None, selectors: tuple[SelectorOutcome, ...]) -> None:
        # The generated __init__ of a frozen dataclass in one call instead of one object.__setattr__
        # per field: explain makes one per device (8,000).  Same fields, same order.
        _set_fields(self, "__dict__", {
            "device": device, "node": node, "result": result, "rejected_by": rejected_by, "error": error,
            "free": free, "taken_by": taken_by, "capacity": capacity, "selectors": selectors,
        })


def device_result_fields(result: str, rejected_by: str | None, error: str | None, free: bool,
                         taken_by: tuple[str, ...], capacity: str | None,
                         selectors: tuple[SelectorOutcome, ...]) -> dict[str, object]:
    """The fields of a DeviceResult but its device and node, shared by the devices that end the
    same way (see new_device_result)."""
    return {"device": "", "node": "", "result": result, "rejected_by": rejected_by, "error": error, "free": free,
            "taken_by": taken_by, "capacity": capacity, "selectors": selectors}


_new = object.__new__


def new_device_result(fields: dict[str, object], device: str, node: str) -> DeviceResult:
    """A DeviceResult with ``fields`` (from device_result_fields) for this device and node: a copy
    of a dict instead of nine fields set one by one (explain makes one per device, 8,000)."""
    result = _new(DeviceResult)
    own = fields.copy()
    own["device"] = device
    own["node"] = node
    _set_fields(result, "__dict__", own)
    return result


@dataclass(frozen=True)
class SelectorResult:
    """One selector (the class's or the request's) over all devices: its engine and its counts."""

    selector: str
    origin: str  # "class" | "request"
    expression: str
    engine: str | None  # fast | cel-python | None when it does not compile
    evaluated: int
    matched: int
    rejected: int
    errors: int
    first_error: str | None = None
    compile_error: str | None = None


@dataclass(frozen=True)
class AlternativeResult:
    """One way to satisfy a request: the request itself (exactly) or one firstAvailable entry."""

    name: str
    device_class: str
    class_source: str  # "given" | "built-in (NVIDIA driver)" | "built-in (HAMi driver)" | "missing"
    allocation_mode: str
    count: int
    capacity_requests: dict[str, str]
    admin_access: bool
    devices: int  # devices considered (all ResourceSlices)
    in_class: int
    matched: int
    free: int
    best_node: str | None
    best_node_free: int
    allocatable: bool
    fatal_error: str | None
    verdict: str
    selectors: tuple[SelectorResult, ...]
    device_results: tuple[DeviceResult, ...]


@dataclass(frozen=True)
class RequestResult:
    """One device request of a claim: whether it fits, and each of its alternatives."""

    name: str
    mode: str  # exactly | firstAvailable
    allocatable: bool
    chosen: str | None  # the alternative the scheduler would use
    verdict: str
    alternatives: tuple[AlternativeResult, ...]


@dataclass(frozen=True)
class AllocatedDevice:
    """A device the scheduler would allocate, as a ResourceClaim's status.allocation.devices.results names it."""

    request: str  # "gpu", or "gpu/alternative" for a firstAvailable alternative
    driver: str
    pool: str
    device: str


@dataclass(frozen=True)
class ClaimResult:
    """One claim explained: whether all its requests fit together, and on which node."""

    kind: str
    namespace: str | None
    name: str
    api_version: str
    allocatable: bool
    node: str | None  # a node where every request fits together
    verdict: str
    notes: tuple[str, ...]
    requests: tuple[RequestResult, ...]
    allocation: tuple[AllocatedDevice, ...] = ()  # the devices the scheduler's allocator picks, when allocatable
    undecided: bool = False  # the allocator's search stopped at its step budget before an answer


@dataclass(frozen=True)
class ClaimError:
    """A claim that could not be explained because it is invalid."""

    kind: str
    namespace: str | None
    name: str
    error: str
