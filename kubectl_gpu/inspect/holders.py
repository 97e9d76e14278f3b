"""Who holds each device: the claims allocated to it and the pods those claims are reserved for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from kubectl_gpu.inspect.claims_model import allocation_result, allocation_results, frozen, reserved_pods
from kubectl_gpu.inspect.devices import DeviceKey


@dataclass(frozen=True)
class Holder:
    claim: str  # namespace/name
    request: str
    pods: tuple[str, ...]  # namespace/name of each pod the claim is reserved for
    consumed_capacity: Mapping[str, str] = field(default_factory=dict)
    share_id: str | None = None
    # Admin access (monitoring) does not take the device away from other claims.
    admin_access: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "request": self.request, "pods": list(self.pods),
                "consumedCapacity": dict(self.consumed_capacity), "shareID": self.share_id,
                "adminAccess": self.admin_access}


def holders_by_device(claims: Iterable[Mapping[str, Any]],
                      index: dict[DeviceKey, list[Holder]] | None = None) -> dict[DeviceKey, list[Holder]]:
    """Who holds each device, from the claims as listed: only an allocated claim's name, results
    and consumers are read (a ClaimView per claim would read every field of 10,000).  Added to
    `index` when given: a list's pages one after another (fetch.py reads each as it comes)."""
    index = {} if index is None else index
    for claim in claims:
        if not isinstance(claim, dict):
            continue
        status = claim.get("status")
        allocation = status.get("allocation") if isinstance(status, dict) else None
        if not allocation or not isinstance(allocation, dict):
            continue
        results = allocation_results(allocation)
        if not results:
            continue
        metadata = claim.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        ref = f"{namespace}/{str(metadata.get('name') or '')}"
        pods = tuple(f"{namespace}/{p}" for p in reserved_pods(status))
        for result in results:
            key, fields = allocation_result(result)
            holder = frozen(Holder, fields, claim=ref, pods=pods)
            held = index.get(key)
            if held is None:
                index[key] = [holder]
            else:
                held.append(holder)
    return index


def exclusive_holders(holders: Iterable[Holder]) -> list[Holder]:
    return [h for h in holders if not h.admin_access]
