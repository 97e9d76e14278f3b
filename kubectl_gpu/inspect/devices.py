"""Devices as ResourceSlices publish them, for describe and doctor to show.

The slices are read by the one ResourceSlice parser (``kubectl_gpu.dra.devices.devices_from_slice``:
v1, v1beta2, v1beta1 and v1alpha3's ``basic:``, per-device node names, capacities as quantities);
a ``SliceDevice`` is a view of one parsed ``Device`` with names qualified
("gpu.nvidia.com/productName"): an unqualified name belongs to the driver's own domain, which is
how the scheduler resolves `device.attributes["gpu.nvidia.com"].productName`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import Any, Iterable, Mapping, NamedTuple

from kubectl_gpu.dra.devices import Device, InvalidResourceSlice, current_slices, devices_from_slice
from kubectl_gpu.dra.values import Semver
from kubectl_gpu.dra import hami
from kubectl_gpu.dra.facts import ATTR, CAP, GPU_TYPE, MIG_TYPE

# NVIDIA and the example driver both call their GPU memory capacity "memory".
MEMORY_CAPACITY = CAP.memory
# The device types that are GPUs or slices of one: NVIDIA's, and HAMi's shared GPU.
GPU_TYPES = (GPU_TYPE, MIG_TYPE, hami.HAMI_GPU_TYPE)


class DeviceKey(NamedTuple):
    """How an allocation result names a device."""

    driver: str
    pool: str
    device: str


def _of_device(field: str, doc: str = "") -> Any:
    """A field of the parsed Device, read through the view."""
    return property(attrgetter(f"device.{field}"), doc=doc)


@dataclass(frozen=True, init=False)
class SliceDevice:
    device: Device  # as the one ResourceSlice parser read it
    # What every row, count and total of a 1,000-node report reads, read once when the view is
    # made, from the driver's own attributes (bare names belong to the driver's domain).
    type: str | None
    product: str | None
    uuid: str | None
    parent_uuid: str | None  # a MIG device's GPU (the NVIDIA driver's parentUUID attribute)
    is_mig: bool
    is_gpu: bool  # a GPU or a slice of one (MIG, vGPU); not an IMEX channel or a NIC
    # How an allocation result names it, read for every row and sort: copied, not reached through
    # the device, and made when the slices are read (on their list's thread, fetch.py).
    driver: str
    pool: str
    name: str
    key: DeviceKey

    def __init__(self, device: Device) -> None:
        own = device.attributes.get(device.driver) or {}
        kind = _text(own.get(ATTR.type))
        # One dict update instead of a frozen dataclass's object.__setattr__ per field (8,000 views).
        self.__dict__.update(
            device=device, type=kind, driver=device.driver, pool=device.pool, name=device.name,
            key=DeviceKey(device.driver, device.pool, device.name),
            product=_text(own.get(ATTR.productName)) or _text(own.get("model")),  # "model": the example driver
            uuid=_text(own.get(ATTR.uuid)), parent_uuid=_text(own.get(ATTR.parentUUID)),
            is_mig=kind == MIG_TYPE,
            is_gpu=kind in GPU_TYPES if kind is not None else device.driver.startswith("gpu."))

    node = _of_device("node_name", "The device's node; None when it is reachable from several (nodeSelector/allNodes).")
    slice_name = _of_device("slice_name")
    allow_multiple_allocations = _of_device("allow_multiple_allocations", "KEP-5075: consumable capacity, shared by claims.")

    @cached_property
    def attributes(self) -> Mapping[str, Any]:
        """Qualified name -> str | int | bool (versions as their text; list attributes as lists)."""
        return {f"{domain}/{name}": _plain(value)
                for domain, values in self.device.attributes.items() for name, value in values.items()}

    @cached_property
    def capacity(self) -> Mapping[str, str]:
        """Qualified name -> quantity text, as published."""
        return {f"{domain}/{name}": quantity.text
                for domain, values in self.device.capacity.items() for name, quantity in values.items()}

    def attribute(self, name: str) -> Any:
        """An attribute by bare name (driver's domain) or qualified name; None when absent."""
        value = self.device.attribute(name)
        return None if value is None else _plain(value)

    def capacity_of(self, name: str) -> str | None:
        quantity = self.device.capacity_value(name)
        return None if quantity is None else quantity.text

    def text(self, name: str) -> str | None:
        """An attribute as text (versions and numbers too); None when absent."""
        return _text(self.device.attribute(name))

    @property
    def memory(self) -> str | None:
        return self.capacity_of(MEMORY_CAPACITY)

    @property
    def mig_profile(self) -> str | None:
        return self.text(ATTR.profile)

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
    """The devices of one slice; none for a slice the API server would have refused."""
    try:
        return [SliceDevice(device) for device in devices_from_slice(resource_slice)]
    except InvalidResourceSlice:
        return []


def current_devices(resource_slices: Iterable[Mapping[str, Any]]) -> list[SliceDevice]:
    """Devices of the newest generation of each pool (see current_slices)."""
    return [device for s in current_slices(resource_slices) for device in devices_of_slice(s)]


def _text(value: Any) -> str | None:
    if value is None or value.__class__ is str:  # most attributes are strings: no conversion
        return value
    return str(_plain(value))


def _plain(value: Any) -> Any:
    if value.__class__ is Semver:
        return str(value)
    if value.__class__ is list:
        return [_plain(item) for item in value]
    return value
