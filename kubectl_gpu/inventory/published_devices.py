"""NVML readings -> the devices and slices the NVIDIA DRA driver publishes for this node (pure).

Without DynamicMIG (the driver's default) a GPU without MIG mode is one ``gpu`` device; a GPU with
MIG mode enabled is announced only through its live MIG devices (``mig``), and all devices share
one slice.  With DynamicMIG a MIG-capable GPU is announced as partitionable devices
(``dynamic_mig``), one slice per GPU.  Attribute and capacity names, value kinds and formatting
follow the driver's ``deviceinfo.go`` / ``mig.go``; ``index`` and ``minor`` are not attributes
(driver v25.8.0 removed them).  Read at kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (v0.5.0).
"""

from __future__ import annotations

from typing import Callable

from kubectl_gpu.dra import facts
from kubectl_gpu.dra.facts import ATTR, MEMORY_SLICE_CAPACITY_PREFIX
from kubectl_gpu.inventory import driver_names, dynamic_mig
from kubectl_gpu.inventory.device_model import (
    AttributeValue,
    GpuDevices,
    InventoryPlan,
    PlannedSlice,
    PublishedDevice,
    common_attributes,
    device,
    gpu_capacity,
    gpu_device,
    mig_attributes,
    mig_capacity,
)
from kubectl_gpu.inventory.driver_names import NamingError
from kubectl_gpu.inventory.driver_settings import SPLIT_COUNTER_SLICES_SINCE_MINOR, DriverSettings
from kubectl_gpu.inventory.readings import DeviceFailure, GpuReading, MigReading, NodeReadings

__all__ = ["InventoryPlan", "PlannedSlice", "PublishedDevice", "plan_inventory", "published_versions"]


def plan_inventory(readings: NodeReadings, settings: DriverSettings = DriverSettings()) -> InventoryPlan:
    groups: list[GpuDevices] = []
    failures = list(readings.failures)
    notes: list[str] = []
    for gpu in readings.gpus:
        try:
            common = common_attributes(gpu, readings, settings)
            if settings.enabled(facts.DYNAMIC_MIG) and dynamic_mig.capable(gpu):
                groups.append(dynamic_mig.gpu_devices(gpu, common, settings))
                continue
        except NamingError as error:
            failures.append(DeviceFailure(f"GPU index {gpu.index}", str(error), gpu.uuid))
            continue
        groups.append(_static_devices(gpu, common, settings, failures, notes))
    slices = _slices(groups, settings, any(gpu.mig_capable for gpu in readings.gpus))
    nvml_version, driver_version, cuda_version = published_versions(readings)
    return InventoryPlan(
        nvml_driver_version=nvml_version,
        driver_version=driver_version,
        cuda_driver_version=cuda_version,
        slices=slices,
        failures=tuple(failures),
        notes=tuple(notes),
    )


def published_versions(readings: NodeReadings) -> tuple[str, str, str]:
    """The header's versions: NVML's driver version, and the driver and CUDA versions as published."""
    return (readings.driver_version, _safe(driver_names.semver, readings.driver_version),
            _safe(driver_names.cuda_driver_version, readings.cuda_driver_version))


def _slices(groups: list[GpuDevices], settings: DriverSettings, mig_capable: bool) -> tuple[PlannedSlice, ...]:
    """driver.go: without DynamicMIG one slice of every device (publishResources); with it one slice
    per GPU in PCI bus order (GenerateDriverResources), its counter set beside its devices before
    Kubernetes 1.35, else every counter set in a first slice of its own."""
    if not settings.enabled(facts.DYNAMIC_MIG):
        return (PlannedSlice(devices=tuple(d for g in groups for d in g.devices)),)
    ordered = sorted(groups, key=lambda g: g.bus_id)
    # NewDriver: the split model only once some GPU is MIG capable (device_state.go IsMigCapable), even
    # if none is announced the partitionable way: its counter slice is then empty, as the driver's is.
    split = settings.kubernetes_minor >= SPLIT_COUNTER_SLICES_SINCE_MINOR and mig_capable
    if not split:
        return tuple(PlannedSlice(g.devices, g.counter_sets) for g in ordered)
    counters = PlannedSlice(shared_counters=tuple(c for g in ordered for c in g.counter_sets))
    return (counters, *(PlannedSlice(devices=g.devices) for g in ordered))


def _static_devices(gpu: GpuReading, common: dict[str, AttributeValue], settings: DriverSettings,
                    failures: list[DeviceFailure], notes: list[str]) -> GpuDevices:
    bus_id = gpu.pci_bus_id or ""
    if not gpu.mig_enabled:
        return GpuDevices(bus_id, (gpu_device(gpu, common, settings, gpu_capacity(gpu)),))
    if not gpu.migs:
        notes.append(
            f"{driver_names.gpu_device_name(gpu.minor)} ({gpu.uuid}) has MIG mode enabled but no "
            "MIG devices: the driver publishes nothing for it until MIG devices are created"
        )
    devices: list[PublishedDevice] = []
    for mig in gpu.migs:
        try:
            devices.append(_mig_device(gpu, mig, common, settings))
        except NamingError as error:
            where = f"GPU index {gpu.index} MIG slot {mig.slot}"
            failures.append(DeviceFailure(where, str(error), mig.uuid))
    return GpuDevices(bus_id, tuple(sorted(devices, key=lambda device: device.name)))


def _mig_device(gpu: GpuReading, mig: MigReading, common: dict[str, AttributeValue],
                settings: DriverSettings) -> PublishedDevice:
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
        profile_info.profile_enum, mig.compute_slice_count, profile_info.memory_mib, gpu.memory_bytes)
    attributes = {**mig_attributes(gpu, profile, common), ATTR.uuid: ("string", mig.uuid)}
    capacity = mig_capacity(profile_info)
    # deviceinfo.go MigDeviceInfo.GetDevice: one memorySlice<N> per memory slice it covers.
    for memory_slice in range(mig.placement_start, mig.placement_start + mig.placement_size):
        capacity[f"{MEMORY_SLICE_CAPACITY_PREFIX}{memory_slice}"] = 1
    name = driver_names.mig_device_name(gpu.minor, profile, profile_info.profile_id, mig.placement_start)
    return device(name, attributes, capacity, settings)


def _safe(convert: Callable[[str], str] | Callable[[int], str], value: str | int) -> str:
    """The published form when the driver could parse it, else NVML's own (for the header)."""
    try:
        return convert(value)  # type: ignore[arg-type]
    except NamingError:
        return str(value)
