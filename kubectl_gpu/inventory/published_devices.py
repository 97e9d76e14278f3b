"""NVML readings -> the devices the NVIDIA DRA driver publishes for this node (pure).

Mirrors the driver's static (non-DynamicMIG) announcement: a GPU without MIG mode is one
``gpu`` device; a GPU with MIG mode enabled is announced only through its live MIG
devices (``mig``); the whole GPU is then not allocatable.  Attribute and capacity names,
value kinds and formatting follow the driver's ``deviceinfo.go`` / ``mig.go``.
``index`` and ``minor`` are not attributes: driver v25.8.0 removed them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from kubectl_gpu.dra.facts import ATTR, CAP, MEMORY_SLICE_CAPACITY_PREFIX
from kubectl_gpu.inventory import driver_names
from kubectl_gpu.inventory.driver_names import NamingError
from kubectl_gpu.inventory.readings import DeviceFailure, GpuReading, MigReading, NodeReadings

PCI_BUS_ID_ATTRIBUTE = ATTR.pciBusID
PCIE_ROOT_ATTRIBUTE = ATTR.pcieRoot
_MIB = 1024 * 1024

AttributeValue = tuple[str, "str | int | bool"]  # (kind: string|int|bool|version, value)


@dataclass(frozen=True)
class PublishedDevice:
    """One device of the ResourceSlice, as the driver would publish it."""

    name: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, int]  # integral quantities, bytes for memory

    @property
    def type(self) -> str:
        return str(self.attributes[ATTR.type][1])

    def attribute(self, name: str) -> str | None:
        value = self.attributes.get(name)
        return None if value is None else str(value[1])


@dataclass(frozen=True)
class InventoryPlan:
    nvml_driver_version: str  # as NVML reports it: 580.159.04
    driver_version: str  # as the driver publishes it: 580.159.4
    cuda_driver_version: str  # as the driver publishes it: 13.0.0
    devices: tuple[PublishedDevice, ...]
    failures: tuple[DeviceFailure, ...] = ()
    # Not errors, but the preview differs from what someone might expect.
    notes: tuple[str, ...] = ()


def plan_inventory(readings: NodeReadings) -> InventoryPlan:
    devices: list[PublishedDevice] = []
    failures = list(readings.failures)
    notes: list[str] = []
    for gpu in readings.gpus:
        try:
            common = _common_attributes(gpu, readings)
        except NamingError as error:
            failures.append(DeviceFailure(f"GPU index {gpu.index}", str(error), gpu.uuid))
            continue
        if not gpu.mig_enabled:
            devices.append(_gpu_device(gpu, common))
            continue
        if not gpu.migs:
            notes.append(
                f"{driver_names.gpu_device_name(gpu.minor)} ({gpu.uuid}) has MIG mode enabled but no "
                "MIG devices: the driver publishes nothing for it until MIG devices are created"
            )
        gpu_devices: list[PublishedDevice] = []
        for mig in gpu.migs:
            try:
                gpu_devices.append(_mig_device(gpu, mig, common))
            except NamingError as error:
                where = f"GPU index {gpu.index} MIG slot {mig.slot}"
                failures.append(DeviceFailure(where, str(error), mig.uuid))
        devices.extend(sorted(gpu_devices, key=lambda device: device.name))
    return InventoryPlan(
        nvml_driver_version=readings.driver_version,
        driver_version=_safe(driver_names.semver, readings.driver_version),
        cuda_driver_version=_safe(driver_names.cuda_driver_version, readings.cuda_driver_version),
        devices=tuple(devices),
        failures=tuple(failures),
        notes=tuple(notes),
    )


def _common_attributes(gpu: GpuReading, readings: NodeReadings) -> dict[str, AttributeValue]:
    """Attributes a GPU shares with its MIG devices."""
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
    if gpu.addressing_mode is not None:  # MIG devices carry their GPU's (mig.go)
        attributes[ATTR.addressingMode] = ("string", driver_names.addressing_mode_name(gpu.addressing_mode))
    if gpu.pci_bus_id is not None:
        attributes[PCI_BUS_ID_ATTRIBUTE] = ("string", gpu.pci_bus_id)
    if gpu.pcie_root is not None:
        attributes[PCIE_ROOT_ATTRIBUTE] = ("string", gpu.pcie_root)
    return attributes


def _gpu_device(gpu: GpuReading, common: dict[str, AttributeValue]) -> PublishedDevice:
    attributes = {
        ATTR.type: ("string", driver_names.GPU_DEVICE_TYPE),
        ATTR.uuid: ("string", gpu.uuid),
        **common,
    }
    capacity = {} if gpu.memory_bytes is None else {CAP.memory: gpu.memory_bytes}
    return _device(driver_names.gpu_device_name(gpu.minor), attributes, capacity)


def _mig_device(
    gpu: GpuReading, mig: MigReading, common: dict[str, AttributeValue]
) -> PublishedDevice:
    profile_info = mig.gpu_instance_profile
    if gpu.memory_bytes is None:
        raise NamingError("the GPU's memory size is unknown, so its MIG profile cannot be named")
    if mig.compute_slice_count != profile_info.slice_count:
        # The driver only knows profiles whose compute instance spans the GPU instance; it
        # fails to enumerate the GPU when it finds another one.
        raise NamingError(
            f"its compute instance uses {mig.compute_slice_count} of {profile_info.slice_count} "
            "slices of its GPU instance; the NVIDIA DRA driver only handles MIG devices whose "
            "compute instance spans the whole GPU instance (recreate it without a smaller -cgi)"
        )
    profile = driver_names.mig_profile_name(
        profile_info.profile_enum,
        mig.compute_slice_count,
        profile_info.memory_mib,
        gpu.memory_bytes,
    )
    attributes = {
        ATTR.type: ("string", driver_names.MIG_DEVICE_TYPE),
        ATTR.uuid: ("string", mig.uuid),
        ATTR.parentUUID: ("string", gpu.uuid),
        ATTR.profile: ("string", profile),
        **common,
    }
    capacity = {
        CAP.multiprocessors: profile_info.multiprocessors,
        CAP.copyEngines: profile_info.copy_engines,
        CAP.decoders: profile_info.decoders,
        CAP.encoders: profile_info.encoders,
        CAP.jpegEngines: profile_info.jpeg_engines,
        CAP.ofaEngines: profile_info.ofa_engines,
        CAP.memory: profile_info.memory_mib * _MIB,
    }
    for memory_slice in range(mig.placement_start, mig.placement_start + mig.placement_size):
        capacity[f"{MEMORY_SLICE_CAPACITY_PREFIX}{memory_slice}"] = 1
    name = driver_names.mig_device_name(
        gpu.minor, profile, profile_info.profile_id, mig.placement_start
    )
    return _device(name, attributes, capacity)


def _device(
    name: str, attributes: dict[str, AttributeValue], capacity: dict[str, int]
) -> PublishedDevice:
    return PublishedDevice(
        name=name,
        attributes=MappingProxyType(dict(sorted(attributes.items()))),
        capacity=MappingProxyType(dict(sorted(capacity.items()))),
    )


def _safe(convert: Callable[[str], str] | Callable[[int], str], value: str | int) -> str:
    """The published form when the driver could parse it, else NVML's own (for the header)."""
    try:
        return convert(value)  # type: ignore[arg-type]
    except NamingError:
        return str(value)
