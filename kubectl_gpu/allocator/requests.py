"""What the allocator is asked and what it answers, in the shapes of resource.k8s.io/v1.

A claim's requests (``exactly`` or ``firstAvailable`` sub-requests), its constraints and the
devices already allocated in the cluster go in; per claim, the devices of its requests and the
node selector of the allocation (a ResourceClaim's ``status.allocation``) come out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from kubectl_gpu.dra.devices import Taint

EXACT_COUNT = "ExactCount"
ALL = "All"

# resourceapi.AllocationResultsMaxSize: the most devices one claim's allocation may hold.
ALLOCATION_RESULTS_MAX_SIZE = 32


@dataclass(frozen=True)
class Toleration:
    """A request's toleration of device taints (KEP-5055)."""

    key: str = ""
    operator: str = "Equal"  # Equal | Exists (empty means Equal)
    value: str = ""
    effect: str = ""  # empty: every effect

    def tolerates(self, taint: Taint) -> bool:
        # k8s.io/dynamic-resource-allocation resourceclaim.ToleratesTaint.
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True)
class SubRequest:
    """A request's ``exactly`` part, or one ``firstAvailable`` alternative."""

    name: str
    device_class: str
    selectors: tuple[str | None, ...] = ()  # None: a selector of a kind other than CEL
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None  # None: not set (the feature check looks at "set", not "true")
    tolerations: tuple[Toleration, ...] = ()
    capacity: Mapping[str, Fraction] | None = None  # capacity.requests (consumable capacity)


@dataclass(frozen=True)
class Request:
    name: str
    exactly: SubRequest | None = None
    first_available: tuple[SubRequest, ...] = ()


@dataclass(frozen=True)
class Constraint:
    """``matchAttribute`` or ``distinctAttribute`` over some requests (none named: all of them)."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True)
class ClaimConfig:
    """One entry of a claim's ``spec.devices.config``: a DeviceConfiguration (``opaque``: driver and
    parameters) for the requests named (none: every request)."""

    configuration: Mapping[str, Any]
    requests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Claim:
    name: str  # namespace/name, as the scheduler names it in messages (klog.KObj)
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...] = ()
    config: tuple[ClaimConfig, ...] = ()


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()  # its spec.config[].DeviceConfiguration, in order


FROM_CLASS = "FromClass"
FROM_CLAIM = "FromClaim"


@dataclass(frozen=True)
class AllocationConfig:
    """One entry of ``status.allocation.devices.config``: where the configuration came from
    (``FromClass`` | ``FromClaim``) and the requests it applies to (empty: all of them)."""

    source: str
    requests: tuple[str, ...]
    configuration: Mapping[str, Any]


@dataclass(frozen=True)
class AllocatedState:
    """What the cluster has allocated already: dedicated devices, shared allocations (a device's
    id with a shareID) and the capacity those shares consume, by device id (driver/pool/device)."""

    devices: frozenset[str] = frozenset()
    shared: frozenset[str] = frozenset()  # ids of devices allocated with a shareID
    capacity: Mapping[str, Mapping[str, Fraction]] = field(default_factory=dict)

    def holds(self, device_id: str) -> bool:
        """IsDeviceAllocated: dedicated, shared, or consuming capacity."""
        return device_id in self.devices or device_id in self.shared or device_id in self.capacity


@dataclass(frozen=True)
class DeviceResult:
    """One allocated device, as in ``status.allocation.devices.results``."""

    request: str  # "gpu" or, for a firstAvailable alternative, "gpu/alternative"
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[Toleration, ...] = ()
    shared: bool = False  # allocated with a shareID (the device allows multiple allocations)
    consumed_capacity: Mapping[str, Fraction] | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class ClaimAllocation:
    claim: str
    devices: tuple[DeviceResult, ...]
    node_selector: Mapping[str, Any] | None  # None: reachable from every node
    chosen: Mapping[str, str] = field(default_factory=dict)  # firstAvailable request -> chosen alternative
    config: tuple[AllocationConfig, ...] = ()


ALLOCATED = "allocated"
UNSATISFIABLE = "unsatisfiable"
ERROR = "error"
BUDGET_EXHAUSTED = "budget exhausted"


@dataclass(frozen=True)
class Outcome:
    """The allocator's answer for one node: ``ALLOCATED`` (with the allocations, claim by claim),
    ``UNSATISFIABLE`` (no solution on this node), ``ERROR`` (what the scheduler reports as an
    error: invalid input for every node, or, with ``node_only``, for this node) or
    ``BUDGET_EXHAUSTED`` (the search stopped before an answer)."""

    kind: str
    node: str | None
    allocations: tuple[ClaimAllocation, ...] = ()
    error: str | None = None
    node_only: bool = False  # an error that only affects this node (ErrFailedAllocationOnNode)
    steps: int = 0  # the search's steps (upstream's NumAllocateOneInvocations)

    @property
    def allocated(self) -> bool:
        return self.kind == ALLOCATED
