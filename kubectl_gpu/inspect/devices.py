"""Devices as ResourceSlices publish them, in one shape whatever the API version.

v1/v1beta2 put attributes and capacity on the device; v1beta1 and v1alpha3 wrap them in `basic`;
v1alpha3 capacity values are bare quantities.  Attribute names are qualified here
("gpu.nvidia.com/productName"): an unqualified name belongs to the driver's own domain, which is
how the scheduler resolves `device.attributes["gpu.nvidia.com"].productName`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Mapping, NamedTuple

from kubectl_gpu.cel.device import current_slices  # noqa: F401 (part of this module's API)

# NVIDIA and the example driver both call their GPU memory capacity "memory".
MEMORY_CAPACITY = "memory"
GPU_TYPES = ("gpu", "mig", "vgpu")


class DeviceKey(NamedTuple):
    """How an allocation result names a device."""

    driver: str
    pool: str
    device: str


@dataclass(frozen=True)
class SliceDevice:
    driver: str
    pool: str
    name: str
    node: str | None  # None: the device is reachable from several nodes (nodeSelector/allNodes)
    slice_name: str
    attributes: Mapping[str, Any]  # qualified name -> str | int | bool (versions as text)
    capacity: Mapping[str, str]  # qualified name -> quantity text
    allow_multiple_allocations: bool = False  # KEP-5075: consumable capacity, shared by claims

    @property
    def key(self) -> DeviceKey:
        return DeviceKey(self.driver, self.pool, self.name)

    def attribute(self, name: str) -> Any:
        """An attribute by bare name (driver's domain) or qualified name; None when absent."""
        return self.attributes.get(name if "/" in name else f"{self.driver}/{name}")

    def capacity_of(self, name: str) -> str | None:
        return self.capacity.get(name if "/" in name else f"{self.driver}/{name}")

    def text(self, name: str) -> str | None:
        """An attribute as text (versions and numbers too); None when absent."""
        value = self.attribute(name)
        return str(value) if value is not None else None

    @cached_property  # read for every row, count and total of a 1,000-node report
    def type(self) -> str | None:
        return self.text("type")

    @cached_property  # read for every row, count and total of a 1,000-node report
    def product(self) -> str | None:
        return self.text("productName") or self.text("model")

    @cached_property  # read for every row, count and total of a 1,000-node report
    def uuid(self) -> str | None:
        return self.text("uuid")

    @property
    def memory(self) -> str | None:
        return self.capacity_of(MEMORY_CAPACITY)

    @property
    def mig_profile(self) -> str | None:
        return self.text("profile")

    @cached_property  # read for every row, count and total of a 1,000-node report
    def parent_uuid(self) -> str | None:
        """A MIG device's GPU (the NVIDIA driver's parentUUID attribute)."""
        return self.text("parentUUID")

    @cached_property  # read for every row, count and total of a 1,000-node report
    def is_mig(self) -> bool:
        return self.type == "mig"

    @cached_property  # read for every row, count and total of a 1,000-node report
    def is_gpu(self) -> bool:
        """A GPU or a slice of one (MIG, vGPU); not an IMEX channel or a NIC."""
        kind = self.type
        if kind is not None:
            return kind in GPU_TYPES
        return self.driver.startswith("gpu.")

    def to_dict(self) -> dict[str, Any]:
        return {
            "driver": self.driver,
            "pool": self.pool,
            "name": self.name,
            "node": self.node,
            "resourceSlice": self.slice_name,
            "type": self.type,
            "product": self.product,
            "uuid": self.uuid,
            "memory": self.memory,
            "migProfile": self.mig_profile,
            "allowMultipleAllocations": self.allow_multiple_allocations,
            "attributes": dict(self.attributes),
            "capacity": dict(self.capacity),
        }


def devices_of_slice(resource_slice: Mapping[str, Any]) -> list[SliceDevice]:
    spec = resource_slice.get("spec") or {}
    driver = str(spec.get("driver") or "")
    pool = str((spec.get("pool") or {}).get("name") or "")
    node = spec.get("nodeName") or None
    slice_name = str((resource_slice.get("metadata") or {}).get("name") or "")
    found = []
    for raw in spec.get("devices") or ():
        if not isinstance(raw, dict):
            continue
        body = raw.get("basic") if isinstance(raw.get("basic"), dict) else raw
        found.append(SliceDevice(
            driver=driver,
            pool=pool,
            name=str(raw.get("name") or ""),
            node=node,
            slice_name=slice_name,
            attributes=_attributes(driver, body.get("attributes")),
            capacity=_capacity(driver, body.get("capacity")),
            allow_multiple_allocations=bool(body.get("allowMultipleAllocations")),
        ))
    return found


def current_devices(resource_slices: Iterable[Mapping[str, Any]]) -> list[SliceDevice]:
    """Devices of the newest generation of each pool (see current_slices)."""
    return [device for s in current_slices(resource_slices) for device in devices_of_slice(s)]


def published_attribute_names(devices: Iterable[SliceDevice]) -> dict[str, int]:
    """Qualified attribute and capacity names -> how many devices publish each."""
    counts: dict[str, int] = {}
    for device in devices:
        for name in device.attributes:
            counts[name] = counts.get(name, 0) + 1
        for name in device.capacity:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _qualify(driver: str, name: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _attributes(driver: str, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if isinstance(value, dict):
            for kind in ("string", "int", "bool", "version"):
                if kind in value:
                    out[_qualify(driver, str(name))] = value[kind]
                    break
    return out


def _capacity(driver: str, raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    out: dict[str, str] = {}
    for name, value in raw.items():
        # v1beta1+: {value: "80Gi", requestPolicy: ...}; v1alpha3: a bare quantity.
        quantity = value.get("value") if isinstance(value, dict) else value
        if quantity is not None:
            out[_qualify(driver, str(name))] = str(quantity)
    return out


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
