"""NVML readings -> the devices and slice HAMi's DRA driver publishes for this node (pure).

Project-HAMi/k8s-dra-driver at ebeaad97463a2af48dcc5f5a2603f65eaf792da8, cmd/hami-kubelet-plugin:
with its HAMiCoreSupport gate (on by default, and exclusive of DynamicMIG, MPS, time-slicing and
passthrough: pkg/featuregates/featuregates.go) nvlib.go ``GetPerGpuAllocatableDevices`` wraps every
GPU, in MIG mode or not, as one ``hami-gpu`` device (hami_core.go ``wrapHAMiCoreGpu``) and announces
nothing else.  driver.go ``publishResources`` then puts every device in one slice of a pool named
after the node.  Each device's attributes, capacities and request policies are those of
hami_core.go ``HAMiGpuInfo.GetDevice``, spelled in :mod:`kubectl_gpu.dra.hami`; the values are
read as NVIDIA's driver reads them (nvlib.go ``getGpuInfo`` is the fork's, so ``driver_names``
formats them).
"""

from __future__ import annotations

from types import MappingProxyType

from kubectl_gpu.dra import hami
from kubectl_gpu.inventory import driver_names
from kubectl_gpu.inventory.consumable_shares import RequestPolicy
from kubectl_gpu.inventory.device_model import AttributeValue, InventoryPlan, PlannedSlice, PublishedDevice
from kubectl_gpu.inventory.driver_names import NamingError
from kubectl_gpu.inventory.published_devices import published_versions
from kubectl_gpu.inventory.readings import DeviceFailure, GpuReading, NodeReadings


def plan_hami_inventory(readings: NodeReadings) -> InventoryPlan:
    """What HAMi's driver publishes for ``readings``: one device per GPU, all in one slice."""
    failures = list(readings.failures)
    devices: list[PublishedDevice] = []
    for gpu in readings.gpus:
        try:
            devices.append(hami_device(gpu, readings))
        except NamingError as error:
            failures.append(DeviceFailure(f"GPU index {gpu.index}", str(error), gpu.uuid))
    # publishResources ranges over a Go map, so the driver's own order changes from start to start;
    # the preview lists devices by name, which is how the scheduler's order is kept (by position).
    devices.sort(key=lambda device: device.name)
    nvml_version, driver_version, cuda_version = published_versions(readings)
    return InventoryPlan(
        nvml_driver_version=nvml_version,
        driver_version=driver_version,
        cuda_driver_version=cuda_version,
        slices=(PlannedSlice(devices=tuple(devices)),),
        failures=tuple(failures),
        driver=hami.HAMI_DRIVER,
    )


def hami_device(gpu: GpuReading, readings: NodeReadings) -> PublishedDevice:
    """hami_core.go GetDevice for one GPU; NamingError when the driver could not publish it."""
    if gpu.memory_bytes is None:
        # nvlib.go getGpuInfo: GetMemoryInfo failing fails the whole enumeration.
        raise NamingError("NVML did not report its memory; HAMi's driver fails to enumerate such a GPU")
    if gpu.pcie_root is None:
        raise NamingError(
            "its PCIe root could not be read from sysfs; HAMi's driver (hami_core.go GetDevice) reads "
            "it without a guard, so its kubelet plugin would crash on this node")
    values: dict[str, str | int | None] = {
        "type": hami.HAMI_GPU_TYPE,
        "uuid": gpu.uuid,
        "minor": gpu.minor,
        "productName": gpu.product_name,
        "brand": driver_names.brand_name(gpu.brand),
        "architecture": driver_names.architecture_name(gpu.architecture),
        "cudaComputeCapability": driver_names.compute_capability_version(*gpu.compute_capability),
        "driverVersion": driver_names.semver(readings.driver_version),
        "cudaDriverVersion": driver_names.cuda_driver_version(readings.cuda_driver_version),
        "pcieBusID": gpu.pci_bus_id,
        "pcieRoot": gpu.pcie_root,
    }
    attributes: dict[str, AttributeValue] = {}
    for attribute in hami.ATTRIBUTES:
        value = values[attribute.name]
        if value is not None:
            attributes[hami.published_key(attribute)] = (attribute.kind, value)
    capacity = {c.name: c.whole(gpu.memory_bytes) for c in hami.CAPACITIES}
    policies = {c.name: RequestPolicy(default=capacity[c.name], min=c.minimum, max=capacity[c.name], step=c.step)
                for c in hami.CAPACITIES}
    return PublishedDevice(
        name=hami.device_name(gpu.minor),
        attributes=MappingProxyType(dict(sorted(attributes.items()))),
        capacity=MappingProxyType(capacity),
        allow_multiple_allocations=hami.ALLOWS_MULTIPLE_ALLOCATIONS,
        request_policies=MappingProxyType(policies),
    )
