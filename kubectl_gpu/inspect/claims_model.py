"""ResourceClaims read in one shape: requests as v1 (`exactly` / `firstAvailable`), allocation
results with the pods a claim is reserved for."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, TypeVar

from kubectl_gpu.inspect.devices import DeviceKey

T = TypeVar("T")


_EMPTY: Mapping[str, Any] = {}  # read-only by convention: what an absent field reads as; the API's
# own mappings are kept in the views, not copied (10,000 claims in a `describe` of 1,000 nodes)


def frozen(cls: type[T], given: Mapping[str, Any] = _EMPTY, /, **fields: Any) -> T:
    """An instance of the frozen dataclass `cls` with every field given (in `given`, or by name),
    made with one dict update instead of the generated __init__'s object.__setattr__ per field:
    describe reads 10,000 claims and 8,000 allocations (ClaimView: ~3 us -> ~1 us)."""
    made = object.__new__(cls)
    made.__dict__.update(given, **fields)
    return made


# v1beta1 keeps these directly on the request; v1 and v1beta2 nest them under `exactly`.
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                 "tolerations", "capacity")


@dataclass(frozen=True)
class Request:
    name: str
    device_class: str | None
    allocation_mode: str  # ExactCount | All
    count: int
    selectors: tuple[str, ...]  # CEL expressions
    capacity_requests: Mapping[str, str]  # KEP-5075 consumable capacity, e.g. {"memory": "4Gi"}
    alternatives: tuple["Request", ...] = ()  # firstAvailable subrequests, in priority order

    def describe(self) -> str:
        if self.alternatives:
            return "first available of: " + "; ".join(a.describe() for a in self.alternatives)
        amount = "all" if self.allocation_mode == "All" else str(self.count)
        text = f"{amount} x {self.device_class or '?'}"
        if self.capacity_requests:
            text += " (" + ", ".join(f"{k} {v}" for k, v in self.capacity_requests.items()) + ")"
        if self.selectors:
            text += " where " + " && ".join(self.selectors)
        return text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.alternatives:
            out["firstAvailable"] = [a.to_dict() for a in self.alternatives]
            return out
        out.update({"deviceClassName": self.device_class, "allocationMode": self.allocation_mode,
                    "count": self.count, "selectors": list(self.selectors),
                    "capacityRequests": dict(self.capacity_requests)})
        return out


@dataclass(frozen=True)
class AllocatedDevice:
    request: str
    key: DeviceKey
    consumed_capacity: Mapping[str, str] = field(default_factory=dict)
    share_id: str | None = None
    admin_access: bool = False


@dataclass(frozen=True)
class ClaimView:
    namespace: str
    name: str
    uid: str
    spec: Mapping[str, Any]
    allocated: tuple[AllocatedDevice, ...]
    allocation_node: str | None  # the node an allocation binds pods to, when it names one
    reserved_for: tuple[str, ...]  # pod names (the consumers the scheduler recorded)
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_pod: str | None  # a claim generated from a template is owned by its pod
    deleting: bool = False

    @cached_property
    def requests(self) -> tuple[Request, ...]:
        # Parsed on demand: the cluster summary reads 10,000 claims but only their allocations.
        return claim_requests(self.spec)

    @property
    def is_allocated(self) -> bool:
        return bool(self.allocated)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def claim_requests(claim_spec: Mapping[str, Any] | None) -> tuple[Request, ...]:
    devices = (claim_spec or {}).get("devices") or {}
    return tuple(_request(r) for r in devices.get("requests") or () if isinstance(r, dict))


def read_claim(claim: Mapping[str, Any]) -> ClaimView:
    metadata = claim.get("metadata") or _EMPTY
    status = claim.get("status") or _EMPTY
    allocation = status.get("allocation") or _EMPTY
    owners = metadata.get("ownerReferences")
    selector = allocation.get("nodeSelector")
    return frozen(
        ClaimView,
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        spec=claim.get("spec") or _EMPTY,
        allocated=allocated_devices(allocation),
        allocation_node=_selected_node(selector) if selector else None,
        reserved_for=reserved_pods(status),
        labels=metadata.get("labels") or _EMPTY,
        annotations=metadata.get("annotations") or _EMPTY,
        owner_pod=next((str(o.get("name")) for o in owners
                        if isinstance(o, dict) and o.get("kind") == "Pod"), None) if owners else None,
        deleting=bool(metadata.get("deletionTimestamp")),
    )


# The two parts of a claim's status that say who holds which device, read alone for the cluster
# summary (holders.py: 10,000 claims, of which only these two fields are shown).

def allocated_devices(allocation: Mapping[str, Any]) -> tuple[AllocatedDevice, ...]:
    """The devices of a claim's `status.allocation`, in its order."""
    return tuple(_allocated(r) for r in allocation_results(allocation))


def allocation_results(allocation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The results of a claim's `status.allocation` as listed (maps only), in its order."""
    results = (allocation.get("devices") or _EMPTY).get("results")
    return [r for r in results if isinstance(r, dict)] if results else []


def allocation_result(raw: Mapping[str, Any]) -> tuple[DeviceKey, dict[str, Any]]:
    """One allocation result: the device's key, and the other fields of AllocatedDevice by name
    (holders.py makes its Holder from them without an AllocatedDevice in between)."""
    consumed = raw.get("consumedCapacity")
    return (DeviceKey(str(raw.get("driver") or ""), str(raw.get("pool") or ""), str(raw.get("device") or "")),
            {"request": str(raw.get("request") or ""),
             "consumed_capacity": {str(k): str(v) for k, v in consumed.items()} if consumed else {},
             "share_id": raw.get("shareID") or None,
             "admin_access": bool(raw.get("adminAccess"))})


def reserved_pods(status: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the pods a claim is reserved for (the consumers the scheduler recorded)."""
    reserved = status.get("reservedFor")
    return tuple(str(c.get("name")) for c in reserved
                 if isinstance(c, dict) and c.get("resource", "pods") == "pods") if reserved else ()


def _request(raw: Mapping[str, Any]) -> Request:
    if isinstance(raw.get("firstAvailable"), list):
        alternatives = tuple(_exact(str(s.get("name") or ""), s) for s in raw["firstAvailable"]
                             if isinstance(s, dict))
        return Request(str(raw.get("name") or ""), None, "ExactCount", 1, (), {}, alternatives)
    exact = raw.get("exactly")
    if not isinstance(exact, dict):
        exact = {k: raw[k] for k in _EXACT_FIELDS if k in raw}  # v1beta1: flat on the request
    return _exact(str(raw.get("name") or ""), exact)


def _exact(name: str, exact: Mapping[str, Any]) -> Request:
    selectors = tuple(str((s.get("cel") or {}).get("expression") or "")
                      for s in exact.get("selectors") or () if isinstance(s, dict))
    capacity = ((exact.get("capacity") or {}).get("requests")) or {}
    mode = str(exact.get("allocationMode") or "ExactCount")
    count = exact.get("count")
    return Request(
        name=name,
        device_class=exact.get("deviceClassName"),
        allocation_mode=mode,
        count=int(count) if isinstance(count, int) else 1,
        selectors=tuple(s for s in selectors if s),
        capacity_requests={str(k): str(v) for k, v in capacity.items()},
    )


def _allocated(raw: Mapping[str, Any]) -> AllocatedDevice:
    key, fields = allocation_result(raw)
    return frozen(AllocatedDevice, fields, key=key)


def _selected_node(node_selector: Any) -> str | None:
    # The scheduler writes `matchFields: metadata.name In [node]` for node-local devices.
    if not isinstance(node_selector, dict):
        return None
    for term in node_selector.get("nodeSelectorTerms") or ():
        for expr in (term or {}).get("matchFields") or ():
            if expr.get("key") == "metadata.name" and expr.get("operator") == "In":
                values = expr.get("values") or ()
                if len(values) == 1:
                    return str(values[0])
    return None
