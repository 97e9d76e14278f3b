"""What the target cluster's ResourceQuota counts, read from its profile for the core's quota plan.

Claims are counted per DeviceClass on every release kubectl-gpu targets; a claim also counts
toward ``requests.<extendedResourceName>`` only where DRAExtendedResource is on and its class names
one (KEP-5004; kubectl_gpu.core.quota cites the evaluators).  The API server drops
``extendedResourceName`` from a DeviceClass while the gate is off, so both facts come from the
profile: its gates and its classes (plus the classes ``migrate --device-classes`` is about to add).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kubectl_gpu.dra.gates import EXTENDED_RESOURCE
from kubectl_gpu.core import QuotaTarget

if TYPE_CHECKING:
    from kubectl_gpu.cluster.profile import ClusterProfile  # offline migrate has none and never loads it


def quota_target(profile: ClusterProfile | None, extra_classes: Iterable[Mapping[str, Any]] = ()) -> QuotaTarget:
    """Without a profile nothing is assumed to count claims but their class's device count."""
    if profile is None:
        return QuotaTarget()
    pairs = set()
    for device_class in (*profile.device_classes, *extra_classes):
        name = (device_class.get("metadata") or {}).get("name")
        resource = (device_class.get("spec") or {}).get("extendedResourceName")
        if isinstance(name, str) and isinstance(resource, str):
            pairs.add((name, resource))
    return QuotaTarget(extended_resource=profile.gate(EXTENDED_RESOURCE), class_extended_resources=tuple(sorted(pairs)))
