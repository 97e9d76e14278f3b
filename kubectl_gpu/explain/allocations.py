"""Who already holds which device: read from ResourceClaims' status.allocation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from kubectl_gpu.dra.values import InvalidValue, Quantity


@dataclass(frozen=True)
class Holder:
    """One claim's request holding a device, and the capacity it consumes there."""

    claim: str  # namespace/name
    request: str
    admin_access: bool = False
    consumed: Mapping[str, Quantity] = field(default_factory=dict)  # consumable capacity (KEP-5075)
    shared: bool = False  # allocated with a shareID (one of several allocations of the device)

    @property
    def label(self) -> str:
        return f"{self.claim}:{self.request}"


Allocations = Mapping[str, tuple[Holder, ...]]  # driver/pool/device -> holders


def allocations_from_claims(claims: Iterable[Mapping[str, Any]]) -> dict[str, tuple[Holder, ...]]:
    holders: dict[str, list[Holder]] = {}
    for claim in claims:
        if claim.get("kind") != "ResourceClaim":
            continue
        # Read tolerantly: a claim the API server never saw may be malformed (explain reports such an
        # input claim as INVALID when it parses it); what cannot be read holds no device.
        meta = _map(claim.get("metadata"))
        ref = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
        results = _map(_map(_map(claim.get("status")).get("allocation")).get("devices")).get("results")
        for result in results if isinstance(results, list) else ():
            if result.__class__ is not dict and not isinstance(result, Mapping):  # the ABC check is slow
                continue
            consumed = {}
            for name, value in _map(result.get("consumedCapacity")).items():
                try:
                    consumed[str(name)] = Quantity.read(value)
                except InvalidValue:
                    continue  # the API server validated it; an unreadable value cannot be summed
            device = f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}"
            holders.setdefault(device, []).append(
                Holder(ref, str(result.get("request")), bool(result.get("adminAccess")), consumed,
                       bool(result.get("shareID")))
            )
    return {device: tuple(items) for device, items in holders.items()}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
