"""Device-plugin GPUs: what nodes advertise, and which pods hold them."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from kubectl_gpu.core import constants
from kubectl_gpu.core import family_of, legacy_requests, legacy_texts
from kubectl_gpu.dra.quantity import format_plain, parse_quantity, QuantityError

TERMINATED_PHASES = ("Succeeded", "Failed")
# A pod whose JSON (lower-cased) holds none of these texts names no legacy resource, so holds no
# device-plugin GPU: a page of such pods need not be decoded (k8s/lists.py, unmentioned_page).
LEGACY_TEXTS = tuple(sorted(text.encode() for text in legacy_texts()))
# TPUs are accelerators too, but no NVIDIA DRA driver offers them, so they cannot be double counted
# against the NVIDIA driver's GPUs.
NON_GPU_FAMILIES = (constants.TPU,)


@dataclass(frozen=True)
class LegacyResource:
    name: str  # nvidia.com/gpu, nvidia.com/mig-1g.10gb, aliyun.com/gpu-mem...
    family: str
    capacity: str
    allocatable: str

    @property
    def offered(self) -> bool:
        """The node offers this resource to the scheduler right now."""
        return positive_quantity(self.allocatable)

    @property
    def is_gpu(self) -> bool:
        return self.family not in NON_GPU_FAMILIES

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "capacity": self.capacity,
                "allocatable": self.allocatable}


@dataclass(frozen=True)
class LegacyRequestRow:
    container: str
    resource: str
    amount: str
    family: str

    def to_dict(self) -> dict[str, Any]:
        return {"container": self.container, "resource": self.resource, "amount": self.amount,
                "family": self.family}


@dataclass(frozen=True)
class LegacyPod:
    namespace: str
    name: str
    node: str | None
    phase: str
    requests: tuple[LegacyRequestRow, ...]
    # KEP-5004: the scheduler satisfied these extended resources through a DRA claim, so the pod
    # holds DRA devices, not device-plugin ones.
    served_by_dra: bool

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def holds_device_plugin_gpus(self) -> bool:
        return not self.served_by_dra and any(
            family_of(r.resource) not in NON_GPU_FAMILIES for r in self.requests)

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "node": self.node,
                "phase": self.phase, "servedByDRA": self.served_by_dra,
                "requests": [r.to_dict() for r in self.requests]}


def node_legacy_resources(node: Mapping[str, Any]) -> tuple[LegacyResource, ...]:
    status = node.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}
    found = []
    for name in sorted(set(capacity) | set(allocatable)):
        family = family_of(name)
        if family is None:
            continue
        found.append(LegacyResource(name, family, str(capacity.get(name, "0")),
                                    str(allocatable.get(name, capacity.get(name, "0")))))
    return tuple(found)


def is_active(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in TERMINATED_PHASES


def legacy_pod(pod: Mapping[str, Any]) -> LegacyPod | None:
    """The pod's non-zero legacy GPU requests, or None when it makes none."""
    if not _names_a_legacy_resource(pod):
        return None  # most pods of a cluster: the core's reading (notes and all) is not needed
    requests = tuple(
        LegacyRequestRow(r.container.name, r.name, format_plain(r.amount), r.family)
        for r in legacy_requests(pod) if r.amount > 0
    )
    if not requests:
        return None
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    return LegacyPod(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        node=(pod.get("spec") or {}).get("nodeName") or None,
        phase=str(status.get("phase") or "Unknown"),
        requests=requests,
        served_by_dra=_served_by_extended_resource_claim(status, requests),
    )


def _names_a_legacy_resource(pod: Mapping[str, Any]) -> bool:
    """False only when no container's limits or requests name a resource `family_of` knows (the
    only keys `legacy_requests` turns into requests).  Objects read from the API are plain dicts;
    any other mapping is left to the core's full reading (an ABC check per container would cost
    more than the rest of this)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return isinstance(spec, Mapping)
    for field in ("initContainers", "containers"):
        containers = spec.get(field)
        if not containers or not isinstance(containers, list):
            continue
        for container in containers:
            if not isinstance(container, dict):
                if isinstance(container, Mapping):
                    return True
                continue
            resources = container.get("resources")
            if not resources:
                continue
            if not isinstance(resources, dict):
                return isinstance(resources, Mapping)
            for amounts in (resources.get("limits"), resources.get("requests")):
                if not amounts:
                    continue
                if not isinstance(amounts, dict):
                    if isinstance(amounts, Mapping):
                        return True
                    continue
                if any(family_of(str(key)) is not None for key in amounts):
                    return True
    return False


def _served_by_extended_resource_claim(status: Mapping[str, Any],
                                       requests: tuple[LegacyRequestRow, ...]) -> bool:
    claim_status = status.get("extendedResourceClaimStatus") or {}
    mapped = {(m.get("containerName"), m.get("resourceName"))
              for m in claim_status.get("requestMappings") or () if isinstance(m, dict)}
    return bool(mapped) and all((r.container, r.resource) in mapped for r in requests)


def positive_quantity(text: str) -> bool:
    try:
        return parse_quantity(text) > Fraction(0)
    except QuantityError:
        return False
