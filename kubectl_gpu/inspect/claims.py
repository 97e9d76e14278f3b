"""`describe claim`: what a ResourceClaim asks for, what it got, and who uses it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kubectl_gpu.dra.facts import REPORT_API_VERSION
from kubectl_gpu.core.constants import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from kubectl_gpu.inspect.claims_model import Request, read_claim
from kubectl_gpu.inspect.devices import DeviceKey, SliceDevice
from kubectl_gpu.inspect.pods import ALLOCATED, WAITING, AllocatedDeviceRow, allocated_device_rows, \
    devices_by_key, explanation_dict


@dataclass(frozen=True)
class ClaimReport:
    namespace: str
    name: str
    state: str
    requests: tuple[Request, ...]
    devices: tuple[AllocatedDeviceRow, ...]
    node: str | None
    reserved_for: tuple[str, ...]
    owner_pod: str | None  # set when generated from a template for that pod
    managed: bool  # created by kubectl-gpu
    explanation: Any = None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        explanation = explanation_dict(self.explanation)
        return {
            "apiVersion": REPORT_API_VERSION, "kind": "GpuClaim", "namespace": self.namespace, "name": self.name,
            "state": self.state, "requests": [r.to_dict() for r in self.requests],
            "devices": [d.to_dict() for d in self.devices], "node": self.node,
            "reservedFor": list(self.reserved_for), "ownerPod": self.owner_pod,
            "managedByKubectlGpu": self.managed, "explanation": explanation,
        }


def claim_report(claim: Mapping[str, Any], devices: Iterable[SliceDevice],
                 explanation: Any = None) -> ClaimReport:
    """For many claims use claim_reports, which indexes the devices once."""
    return _claim_report(claim, devices_by_key(devices), explanation)


def claim_reports(claims: Iterable[Mapping[str, Any]], devices: Iterable[SliceDevice]) -> list[ClaimReport]:
    """claim_report of each claim; re-indexing 8,000 devices per claim made `describe claim -A`
    quadratic."""
    by_key = devices_by_key(devices)
    return [_claim_report(claim, by_key) for claim in claims]


def _claim_report(claim: Mapping[str, Any], by_key: Mapping[DeviceKey, SliceDevice],
                  explanation: Any = None) -> ClaimReport:
    view = read_claim(claim)
    rows = allocated_device_rows(view, by_key)
    nodes = {r.node for r in rows if r.node}
    return ClaimReport(
        namespace=view.namespace,
        name=view.name,
        state=ALLOCATED if view.is_allocated else WAITING,
        requests=view.requests,
        devices=rows,
        node=view.allocation_node or (next(iter(nodes)) if len(nodes) == 1 else None),
        reserved_for=view.reserved_for,
        owner_pod=view.owner_pod,
        managed=view.labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE,
        explanation=explanation,
    )
