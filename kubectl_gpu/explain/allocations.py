"""Who already holds which device: read from ResourceClaims' status.allocation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from kubectl_gpu.cel import InvalidValue, Quantity


@dataclass(frozen=True)
class Holder:
    claim: str  # namespace/name
    request: str
    admin_access: bool = False
    consumed: Mapping[str, Quantity] = field(default_factory=dict)  # consumable capacity (KEP-5075)

    @property
    def label(self) -> str:
        return f"{self.claim}:{self.request}"


Allocations = Mapping[str, tuple[Holder, ...]]  # driver/pool/device -> holders


def allocations_from_claims(claims: Iterable[Mapping[str, Any]]) -> dict[str, tuple[Holder, ...]]:
    holders: dict[str, list[Holder]] = {}
    for claim in claims:
        if claim.get("kind") != "ResourceClaim":
            continue
        meta = claim.get("metadata") or {}
        ref = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
        for result in results:
            if result.__class__ is not dict and not isinstance(result, Mapping):  # the ABC check is slow
                continue
            consumed = {}
            for name, value in (result.get("consumedCapacity") or {}).items():
                try:
                    consumed[str(name)] = Quantity.read(value)
                except InvalidValue:
                    continue  # the API server validated it; an unreadable value cannot be summed
            device = f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}"
            holders.setdefault(device, []).append(
                Holder(ref, str(result.get("request")), bool(result.get("adminAccess")), consumed)
            )
    return {device: tuple(items) for device, items in holders.items()}
