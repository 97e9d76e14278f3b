"""Which optional parts of the structured allocator are switched on, from the cluster's DRA
feature gates.

k8s.io/dynamic-resource-allocation structured/internal/types.go ``Features``: each entry changes
the allocator's control flow; the scheduler's DynamicResources plugin sets them from the feature
gates (``DeviceBindingAndStatus`` needs both DRADeviceBindingConditions and
DRAResourceClaimDeviceStatus).  DeviceTaintRule objects are applied to devices' taints only
with DRADeviceTaintRules on as well (the scheduler's device taint tracker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection


# Each switch, what it models (for people), and the gates that must all be on for it.
SWITCHES: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("admin_access", "admin access", frozenset({"DRAAdminAccess"})),
    ("prioritized_list", "prioritized lists (firstAvailable)", frozenset({"DRAPrioritizedList"})),
    ("partitionable_devices", "partitionable devices (shared counters: DynamicMIG)",
     frozenset({"DRAPartitionableDevices"})),
    ("device_taints", "device taints and tolerations", frozenset({"DRADeviceTaints"})),
    ("consumable_capacity", "consumable capacity", frozenset({"DRAConsumableCapacity"})),
    ("device_binding_and_status", "binding conditions",
     frozenset({"DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"})),
    ("device_taint_rules", "DeviceTaintRules", frozenset({"DRADeviceTaints", "DRADeviceTaintRules"})),
    ("list_type_attributes", "list-type attributes", frozenset({"DRAListTypeAttributes"})),
)


@dataclass(frozen=True)
class Features:
    admin_access: bool = False
    consumable_capacity: bool = False
    device_binding_and_status: bool = False
    device_taints: bool = False
    list_type_attributes: bool = False
    partitionable_devices: bool = False
    prioritized_list: bool = False
    device_taint_rules: bool = False  # not an allocator switch upstream: the tracker's

    @classmethod
    def from_gates(cls, gates: Collection[str]) -> "Features":
        """The switches a scheduler with these DRA feature gates enabled runs its allocator with."""
        on = frozenset(gates)
        return cls(**{name: needs <= on for name, _, needs in SWITCHES})

    def gates(self) -> frozenset[str]:
        """The CEL-relevant gates these switches imply (the scheduler's CEL cache is built with them)."""
        gates = set()
        if self.consumable_capacity:
            gates.add("DRAConsumableCapacity")
        if self.list_type_attributes:
            gates.add("DRAListTypeAttributes")
        return frozenset(gates)


ALL_FEATURES = Features(True, True, True, True, True, True, True, True)


def releases_text(width: int = 72) -> str:
    """Which switches are on by default from which Kubernetes release (dra/gates.py), for help:
    "1.34+      admin access, prioritized lists (firstAvailable)", wrapped to ``width``."""
    import textwrap

    from kubectl_gpu.dra.gates import SUPPORTED_MINORS, default_gates

    since: dict[int | None, list[str]] = {}
    for _, label, needs in SWITCHES:
        first = next((m for m in SUPPORTED_MINORS if needs <= default_gates(m)), None)
        since.setdefault(first, []).append(label)
    lines = []
    for first in sorted(since, key=lambda m: (m is None, m or 0)):
        when = f"1.{first}+" if first is not None else "gate only"
        lines.append(textwrap.fill(", ".join(since[first]), width, initial_indent=f"{when:<11}",
                                   subsequent_indent=" " * 11))
    return "\n".join(lines)
