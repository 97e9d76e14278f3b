"""The devices and slices the NVIDIA DRA driver publishes, as data, and the builders the static
and the DynamicMIG announcements share (attributes, capacities, consumable shares).

Read at kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (v0.5.0): cmd/gpu-kubelet-plugin/
deviceinfo.go, mig.go, allocatable.go, partitions.go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from kubectl_gpu.dra import facts
from kubectl_gpu.dra.facts import ATTR, CAP
from kubectl_gpu.inventory import consumable_shares, driver_names
from kubectl_gpu.inventory.consumable_shares import MIB, RequestPolicy
from kubectl_gpu.inventory.driver_settings import DriverSettings
from kubectl_gpu.inventory.readings import DeviceFailure, GpuInstanceProfile, GpuReading, NodeReadings

PCI_BUS_ID_ATTRIBUTE = ATTR.pciBusID
PCIE_ROOT_ATTRIBUTE = ATTR.pcieRoot

AttributeValue = tuple[str, "str | int | bool | tuple[int, ...]"]  # (kind: string|int|ints|bool|version, value)


@dataclass(frozen=True)
class CounterSet:
    """``sharedCounters[]`` entry, or a device's ``consumesCounters[]`` entry (``name``: the set)."""

    name: str
    counters: Mapping[str, int]


@dataclass(frozen=True)
class PublishedDevice:
    """One device of a ResourceSlice, as the driver would publish it."""

    name: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, int]  # integral quantities, bytes for memory
    consumes_counters: tuple[CounterSet, ...] = ()
    allow_multiple_allocations: bool = False
    request_policies: Mapping[str, RequestPolicy] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def type(self) -> str:
        return str(self.attributes[ATTR.type][1])

    def attribute(self, name: str) -> str | None:
        value = self.attributes.get(name)
        return None if value is None else str(value[1])


@dataclass(frozen=True)
class PlannedSlice:
    """One ResourceSlice of the node's pool: devices, or shared counters, or (before 1.35) both."""

    devices: tuple[PublishedDevice, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()


@dataclass(frozen=True)
class InventoryPlan:
    nvml_driver_version: str  # as NVML reports it: 580.159.04
    driver_version: str  # as the driver publishes it: 580.159.4
    cuda_driver_version: str  # as the driver publishes it: 13.0.0
    slices: tuple[PlannedSlice, ...]
    failures: tuple[DeviceFailure, ...] = ()
    # Not errors, but the preview differs from what someone might expect.
    notes: tuple[str, ...] = ()
    driver: str = facts.NVIDIA_DRIVER  # whose slices these are

    @property
    def devices(self) -> tuple[PublishedDevice, ...]:
        return tuple(device for s in self.slices for device in s.devices)


@dataclass(frozen=True)
class GpuDevices:
    """What one GPU contributes: its devices (sorted as the driver sorts them) and its counter set."""

    bus_id: str
    devices: tuple[PublishedDevice, ...]
    counter_sets: tuple[CounterSet, ...] = ()
    partitionable: bool = False  # announced the DynamicMIG way


def common_attributes(gpu: GpuReading, readings: NodeReadings,
                       settings: DriverSettings) -> dict[str, AttributeValue]:
    """Attributes a GPU shares with its MIG devices (mig.go CommonAttributesMig)."""
    attributes: dict[str, AttributeValue] = {
        ATTR.productName: ("string", gpu.product_name),
        ATTR.brand: ("string", driver_names.brand_name(gpu.brand)),
        ATTR.architecture: ("string", driver_names.architecture_name(gpu.architecture)),
        ATTR.cudaComputeCapability: (
            "version",
            driver_names.compute_capability_version(*gpu.compute_capability),
        ),
        ATTR.driverVersion: ("version", driver_names.semver(readings.driver_version)),
        ATTR.cudaDriverVersion: (
            "version",
            driver_names.cuda_driver_version(readings.cuda_driver_version),
        ),
    }
    if gpu.addressing_mode is not None and settings.publishes(facts.attribute("addressingMode")):
        attributes[ATTR.addressingMode] = ("string", driver_names.addressing_mode_name(gpu.addressing_mode))
    if gpu.pci_bus_id is not None:
        attributes[PCI_BUS_ID_ATTRIBUTE] = ("string", gpu.pci_bus_id)
    if gpu.pcie_root is not None:
        attributes[PCIE_ROOT_ATTRIBUTE] = ("string", gpu.pcie_root)
    numa = _numa_node(gpu.numa_node, settings)
    if numa is not None:
        attributes[ATTR.numaNode] = numa
    return attributes



def _numa_node(numa_node: int | None, settings: DriverSettings) -> AttributeValue | None:
    """deviceinfo.go addNumaNodeAttribute: nothing below 0; with the driver's DRAListTypeAttributes
    gate a one-element list (KEP-6072's list form), else an int."""
    if numa_node is None or numa_node < 0 or not settings.publishes(facts.attribute("numaNode")):
        return None
    if settings.enabled(facts.DRIVER_LIST_TYPE_ATTRIBUTES):
        return ("ints", (numa_node,))
    return ("int", numa_node)



def gpu_capacity(gpu: GpuReading) -> dict[str, int]:
    """allocatable.go fullGpuCapacity: the GPU's memory; nothing without NVML memory info."""
    return {} if gpu.memory_bytes is None else {CAP.memory: gpu.memory_bytes}



def gpu_device(gpu: GpuReading, common: dict[str, AttributeValue], settings: DriverSettings,
               capacity: Mapping[str, int], consumes: tuple[CounterSet, ...] = ()) -> PublishedDevice:
    attributes = {
        ATTR.type: ("string", driver_names.GPU_DEVICE_TYPE),
        ATTR.uuid: ("string", gpu.uuid),
        **common,
    }
    return device(driver_names.gpu_device_name(gpu.minor), attributes, capacity, settings, consumes)



def mig_capacity(profile_info: GpuInstanceProfile) -> dict[str, int]:
    """mig.go CommonCapacitiesMig (memory: memorySizeMB, which nvml.h documents as MiB)."""
    return {
        CAP.multiprocessors: profile_info.multiprocessors,
        CAP.copyEngines: profile_info.copy_engines,
        CAP.decoders: profile_info.decoders,
        CAP.encoders: profile_info.encoders,
        CAP.jpegEngines: profile_info.jpeg_engines,
        CAP.ofaEngines: profile_info.ofa_engines,
        CAP.memory: profile_info.memory_mib * MIB,
    }



def mig_attributes(gpu: GpuReading, profile: str, common: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
    return {
        ATTR.type: ("string", driver_names.MIG_DEVICE_TYPE),
        ATTR.parentUUID: ("string", gpu.uuid),
        ATTR.profile: ("string", profile),
        **common,
    }



def device(name: str, attributes: dict[str, AttributeValue], capacity: Mapping[str, int],
           settings: DriverSettings, consumes: tuple[CounterSet, ...] = ()) -> PublishedDevice:
    """The device as published, with consumable shares applied (allocatable.go GetDevice/PartGetDevice
    call applyConsumableShares on every GPU and MIG device)."""
    shared = consumable_shares.apply(dict(capacity), settings.shares)
    return PublishedDevice(
        name=name,
        attributes=MappingProxyType(dict(sorted(attributes.items()))),
        capacity=MappingProxyType(dict(sorted(shared.capacity.items()))),
        consumes_counters=consumes,
        allow_multiple_allocations=shared.allow_multiple_allocations,
        request_policies=MappingProxyType(dict(sorted(shared.request_policies.items()))),
    )
