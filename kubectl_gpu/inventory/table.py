"""The rows of the `kubectl gpu inventory` table (pure): one per published device, then one
per device NVML could not describe."""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_gpu.dra.facts import ATTR, CAP
from kubectl_gpu.inventory.published_devices import InventoryPlan
from kubectl_gpu.inventory.quantity import binary_si

COLUMNS = ("NAME", "TYPE", "PRODUCT", "MEMORY", "PROFILE", "UUID")
ERROR_TYPE = "error"


@dataclass(frozen=True)
class Row:
    name: str
    type: str
    product: str
    memory: str
    profile: str
    uuid: str

    @property
    def is_error(self) -> bool:
        return self.type == ERROR_TYPE

    def cells(self) -> tuple[str, ...]:
        return (self.name, self.type, self.product, self.memory, self.profile, self.uuid)


def table_rows(plan: InventoryPlan) -> list[Row]:
    rows = [
        Row(
            name=device.name,
            type=device.type,
            product=device.attribute(ATTR.productName) or "",
            memory=binary_si(device.capacity[CAP.memory]) if CAP.memory in device.capacity else "-",
            profile=device.attribute(ATTR.profile) or "-",
            uuid=device.attribute(ATTR.uuid) or "",
        )
        for device in plan.devices
    ]
    rows.extend(
        Row(
            name=failure.where,
            type=ERROR_TYPE,
            product=failure.message,
            memory="-",
            profile="-",
            uuid=failure.uuid or "-",
        )
        for failure in plan.failures
    )
    return rows
