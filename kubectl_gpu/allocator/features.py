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
        return cls(
            admin_access="DRAAdminAccess" in on,
            consumable_capacity="DRAConsumableCapacity" in on,
            device_binding_and_status={"DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"} <= on,
            device_taints="DRADeviceTaints" in on,
            list_type_attributes="DRAListTypeAttributes" in on,
            partitionable_devices="DRAPartitionableDevices" in on,
            prioritized_list="DRAPrioritizedList" in on,
            device_taint_rules={"DRADeviceTaints", "DRADeviceTaintRules"} <= on,
        )

    def gates(self) -> frozenset[str]:
        """The CEL-relevant gates these switches imply (the scheduler's CEL cache is built with them)."""
        gates = set()
        if self.consumable_capacity:
            gates.add("DRAConsumableCapacity")
        if self.list_type_attributes:
            gates.add("DRAListTypeAttributes")
        return frozenset(gates)


ALL_FEATURES = Features(True, True, True, True, True, True, True, True)
