"""Read this node's GPUs through NVML (``import pynvml``, from nvidia-ml-py).

The only module of the inventory that does I/O.  It turns NVML calls into
:class:`~kubectl_gpu.inventory.readings.NodeReadings` and nothing else: naming the
devices the way the NVIDIA DRA driver does happens later, in ``plan``.

It walks NVML the way the driver's kubelet plugin does (go-nvlib ``VisitDevices`` /
``VisitMigDevices``), so a problem the driver would hit shows up here too.  One device
that NVML cannot describe becomes a :class:`DeviceFailure`; the other devices are still
read.  NVML is always shut down again once it was initialised.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from kubectl_gpu.inventory.failures import ExitCode, InventoryUnavailable
from kubectl_gpu.inventory.readings import (
    DeviceFailure,
    GpuInstanceProfile,
    GpuReading,
    MigReading,
    NodeReadings,
    Placement,
)
from kubectl_gpu.inventory.sysfs import LiveSysfs, Sysfs

_PCI_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$")
_MIG_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE
# Only used when the installed pynvml predates these constants.
_GPU_INSTANCE_PROFILE_COUNT_FALLBACK = 0x12
_COMPUTE_INSTANCE_PROFILE_COUNT_FALLBACK = 0x9


class _DeviceReadError(Exception):
    def __init__(self, message: str, uuid: str | None = None) -> None:
        super().__init__(message)
        self.uuid = uuid


def read_node(sysfs: Sysfs | Path = Path("/sys"), nvml: Any = None) -> NodeReadings:
    """Everything NVML says about this node's GPUs, with the facts the driver reads from sysfs
    (``sysfs``: a root directory, or a recording's; ``nvml``: pynvml, or a recording's face of it).

    Raises :class:`InventoryUnavailable` when no device can be listed at all (no NVIDIA
    library, driver not loaded, no permission, no GPU).
    """
    nvml = nvml or _import_pynvml()
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        raise _unavailable(nvml, error) from None
    if isinstance(sysfs, Path):
        sysfs = LiveSysfs(sysfs)
    try:
        return _read_initialised(nvml, sysfs)
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass  # the readings are complete; a failed shutdown changes nothing for the user


def _import_pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError:
        raise InventoryUnavailable(
            "the Python NVML bindings are missing: pip install nvidia-ml-py",
            ExitCode.NO_NVML_LIBRARY,
        ) from None
    return pynvml


def _unavailable(nvml: ModuleType, error: Exception) -> InventoryUnavailable:
    if isinstance(error, nvml.NVMLError_LibraryNotFound):
        return InventoryUnavailable(
            "no NVIDIA driver here: libnvidia-ml.so.1 was not found "
            "(run on a GPU node, or in a pod with the NVIDIA container runtime)",
            ExitCode.NO_NVML_LIBRARY,
        )
    if isinstance(error, nvml.NVMLError_DriverNotLoaded):
        return InventoryUnavailable(
            "no usable GPU: the NVIDIA kernel driver is not loaded (NVML: Driver Not Loaded)",
            ExitCode.NO_GPU,
        )
    if isinstance(error, nvml.NVMLError_NoPermission):
        return InventoryUnavailable(
            "no usable GPU: NVML was denied access to the GPUs (run as root, or as a user "
            "that can open /dev/nvidiactl and /dev/nvidia*)",
            ExitCode.NO_GPU,
        )
    return InventoryUnavailable(f"NVML failed before listing GPUs: {error}", ExitCode.NVML_FAILED)


def _read_initialised(nvml: ModuleType, sysfs: Sysfs) -> NodeReadings:
    try:
        driver_version = nvml.nvmlSystemGetDriverVersion()
        cuda_driver_version = nvml.nvmlSystemGetCudaDriverVersion()
        count = nvml.nvmlDeviceGetCount()
    except nvml.NVMLError as error:
        raise _unavailable(nvml, error) from None
    if count == 0:
        raise InventoryUnavailable(
            "no usable GPU: the NVIDIA driver is loaded but NVML lists 0 GPUs", ExitCode.NO_GPU
        )
    gpus: list[GpuReading] = []
    failures: list[DeviceFailure] = []
    for index in range(count):
        try:
            gpu, mig_failures = _read_gpu(nvml, index, sysfs)
        except _DeviceReadError as error:
            failures.append(DeviceFailure(f"GPU index {index}", str(error), error.uuid))
            continue
        gpus.append(gpu)
        failures.extend(mig_failures)
    return NodeReadings(
        driver_version=_text(driver_version),
        cuda_driver_version=int(cuda_driver_version),
        gpus=tuple(gpus),
        failures=tuple(failures),
    )


def _call(nvml: ModuleType, name: str, *args: Any, uuid: str | None = None) -> Any:
    function: Callable[..., Any] = getattr(nvml, name)
    try:
        return function(*args)
    except nvml.NVMLError as error:
        raise _DeviceReadError(f"{name} failed: {error}", uuid) from None


def _read_gpu(
    nvml: ModuleType, index: int, sysfs: Sysfs
) -> tuple[GpuReading, list[DeviceFailure]]:
    handle = _call(nvml, "nvmlDeviceGetHandleByIndex", index)
    uuid = _text(_call(nvml, "nvmlDeviceGetUUID", handle))

    def call(name: str, *args: Any) -> Any:
        return _call(nvml, name, *args, uuid=uuid)

    minor = call("nvmlDeviceGetMinorNumber", handle)
    product_name = _text(call("nvmlDeviceGetName", handle))
    brand = call("nvmlDeviceGetBrand", handle)
    architecture = call("nvmlDeviceGetArchitecture", handle)
    major, minor_cc = call("nvmlDeviceGetCudaComputeCapability", handle)
    memory_bytes = _memory_bytes(nvml, handle, uuid)
    pci_bus_id = _pci_bus_id(_text(call("nvmlDeviceGetPciInfo", handle).busId), uuid)
    mig_mode = _mig_mode(nvml, handle, uuid)
    mig_enabled = mig_mode == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", _MIG_ENABLED)
    addressing_mode = _addressing_mode(nvml, handle, uuid)

    migs: tuple[MigReading, ...] = ()
    failures: list[DeviceFailure] = []
    profiles: dict[int, GpuInstanceProfile] = {}
    if mig_mode is not None:  # MIG capable: DynamicMIG announces every profile and placement
        profiles = _gpu_instance_profiles(nvml, handle, uuid)
    if mig_enabled:
        migs, failures = _read_migs(nvml, handle, index, uuid, profiles)
    gpu = GpuReading(
        index=index,
        minor=int(minor),
        uuid=uuid,
        product_name=product_name,
        brand=int(brand),
        architecture=int(architecture),
        compute_capability=(int(major), int(minor_cc)),
        memory_bytes=memory_bytes,
        pci_bus_id=pci_bus_id,
        pcie_root=sysfs.pcie_root(pci_bus_id),
        mig_enabled=mig_enabled,
        migs=migs,
        addressing_mode=addressing_mode,
        numa_node=sysfs.numa_node(pci_bus_id),
        mig_capable=mig_mode is not None,
        instance_profiles=tuple(sorted(profiles.values(), key=lambda p: p.profile_enum)),
    )
    return gpu, failures


def _addressing_mode(nvml: ModuleType, handle: Any, uuid: str) -> int | None:
    """go-nvlib GetAddressingModeAsString: no symbol or NOT_SUPPORTED is "" (nothing published)."""
    if not hasattr(nvml, "nvmlDeviceGetAddressingMode"):
        return None
    try:
        return int(nvml.nvmlDeviceGetAddressingMode(handle))
    except (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound):
        return None
    except nvml.NVMLError as error:
        raise _DeviceReadError(f"nvmlDeviceGetAddressingMode failed: {error}", uuid) from None


def _memory_bytes(nvml: ModuleType, handle: Any, uuid: str) -> int | None:
    try:
        return int(nvml.nvmlDeviceGetMemoryInfo(handle).total)
    except nvml.NVMLError_NotSupported:
        return None  # the driver then publishes no memory capacity (e.g. some vGPU guests)
    except nvml.NVMLError as error:
        raise _DeviceReadError(f"nvmlDeviceGetMemoryInfo failed: {error}", uuid) from None


def _mig_mode(nvml: ModuleType, handle: Any, uuid: str) -> int | None:
    """The current MIG mode; None on a GPU that is not MIG capable (NotSupported)."""
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except nvml.NVMLError_NotSupported:
        return None
    except nvml.NVMLError as error:
        raise _DeviceReadError(f"nvmlDeviceGetMigMode failed: {error}", uuid) from None
    return int(current)


def go_nvlib_bus_id(raw: str) -> str:
    """NVML says "00000000:3B:00.0"; go-nvlib lower-cases it and keeps a 4-digit domain."""
    bus_id = raw.lower()
    return bus_id if bus_id == "0000" else bus_id.removeprefix("0000")


def _pci_bus_id(raw: str, uuid: str) -> str:
    bus_id = go_nvlib_bus_id(raw)
    if not _PCI_BDF.match(bus_id):
        raise _DeviceReadError(
            f"NVML reports PCI bus ID {raw!r}, which is not in domain:bus:device.function form; "
            "the NVIDIA DRA driver refuses such a GPU",
            uuid,
        )
    return bus_id


def _supported_profiles(
    nvml: ModuleType, name: str, count: int, arguments: Callable[[int], tuple[Any, ...]], uuid: str
) -> Iterator[tuple[int, Any]]:
    """(profile enum, info) for each profile enum NVML describes; the ones this GPU does not
    support (NotSupported / InvalidArgument) are skipped, any other failure fails the device."""
    function: Callable[..., Any] = getattr(nvml, name)
    for profile_enum in range(count):
        try:
            info = function(*arguments(profile_enum))
        except (nvml.NVMLError_NotSupported, nvml.NVMLError_InvalidArgument):
            continue
        except nvml.NVMLError as error:
            raise _DeviceReadError(f"{name}({profile_enum}) failed: {error}", uuid) from None
        yield profile_enum, info


def _gpu_instance_profiles(nvml: ModuleType, handle: Any, uuid: str) -> dict[int, GpuInstanceProfile]:
    """Every GPU instance profile this GPU supports, by profile id (what a GI reports)."""
    profiles: dict[int, GpuInstanceProfile] = {}
    count = getattr(nvml, "NVML_GPU_INSTANCE_PROFILE_COUNT", _GPU_INSTANCE_PROFILE_COUNT_FALLBACK)
    infos = _supported_profiles(
        nvml, "nvmlDeviceGetGpuInstanceProfileInfo", count, lambda e: (handle, e), uuid
    )
    for profile_enum, info in infos:
        profiles[int(info.id)] = GpuInstanceProfile(
            profile_enum=profile_enum,
            profile_id=int(info.id),
            slice_count=int(info.sliceCount),
            multiprocessors=int(info.multiprocessorCount),
            copy_engines=int(info.copyEngineCount),
            decoders=int(info.decoderCount),
            encoders=int(info.encoderCount),
            jpeg_engines=int(info.jpegCount),
            ofa_engines=int(info.ofaCount),
            memory_mib=int(info.memorySizeMB),
            instance_count=int(info.instanceCount),
            placements=_possible_placements(nvml, handle, info, uuid),
        )
    return profiles


def _possible_placements(nvml: ModuleType, handle: Any, info: Any, uuid: str) -> tuple[Placement, ...]:
    """go-nvml GetGpuInstancePossiblePlacements: nvmlDeviceGetGpuInstancePossiblePlacements_v2 for the
    profile's id, first for the count (no array), then for the placements.  NotSupported and
    InvalidArgument give none, as the driver then skips the profile."""
    count = ctypes.c_uint(0)
    name = "nvmlDeviceGetGpuInstancePossiblePlacements"
    try:
        nvml.nvmlDeviceGetGpuInstancePossiblePlacements(handle, int(info.id), None, ctypes.byref(count))
        if count.value == 0:
            return ()
        placements = (nvml.c_nvmlGpuInstancePlacement_t * count.value)()
        nvml.nvmlDeviceGetGpuInstancePossiblePlacements(handle, int(info.id), placements, ctypes.byref(count))
    except (nvml.NVMLError_NotSupported, nvml.NVMLError_InvalidArgument):
        return ()
    except nvml.NVMLError as error:
        raise _DeviceReadError(f"{name} failed: {error}", uuid) from None
    return tuple(Placement(int(p.start), int(p.size)) for p in placements[: count.value])


def _read_migs(
    nvml: ModuleType, handle: Any, gpu_index: int, uuid: str, profiles: dict[int, GpuInstanceProfile]
) -> tuple[tuple[MigReading, ...], list[DeviceFailure]]:
    slots = _call(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle, uuid=uuid)
    migs: list[MigReading] = []
    failures: list[DeviceFailure] = []
    for slot in range(slots):
        where = f"GPU index {gpu_index} MIG slot {slot}"
        try:
            mig_handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except (nvml.NVMLError_NotFound, nvml.NVMLError_InvalidArgument):
            continue  # an empty slot
        except nvml.NVMLError as error:
            failures.append(
                DeviceFailure(where, f"nvmlDeviceGetMigDeviceHandleByIndex failed: {error}")
            )
            continue
        try:
            migs.append(_read_mig(nvml, handle, mig_handle, slot, profiles))
        except _DeviceReadError as error:
            failures.append(DeviceFailure(where, str(error), error.uuid))
    return tuple(migs), failures


def _read_mig(
    nvml: ModuleType, parent: Any, handle: Any, slot: int, profiles: dict[int, GpuInstanceProfile]
) -> MigReading:
    uuid = _text(_call(nvml, "nvmlDeviceGetUUID", handle))

    def call(name: str, *args: Any) -> Any:
        return _call(nvml, name, *args, uuid=uuid)

    gpu_instance_id = call("nvmlDeviceGetGpuInstanceId", handle)
    compute_instance_id = call("nvmlDeviceGetComputeInstanceId", handle)
    gpu_instance = call("nvmlDeviceGetGpuInstanceById", parent, gpu_instance_id)
    gpu_instance_info = call("nvmlGpuInstanceGetInfo", gpu_instance)
    compute_instance = call("nvmlGpuInstanceGetComputeInstanceById", gpu_instance, compute_instance_id)
    compute_instance_info = call("nvmlComputeInstanceGetInfo", compute_instance)

    profile = profiles.get(int(gpu_instance_info.profileId))
    if profile is None:
        raise _DeviceReadError(
            f"its GPU instance profile id {gpu_instance_info.profileId} is not among the "
            "profiles the GPU reports", uuid
        )
    compute_slices = _compute_slice_count(nvml, gpu_instance, int(compute_instance_info.profileId), uuid)
    return MigReading(
        slot=slot,
        uuid=uuid,
        gpu_instance_profile=profile,
        compute_slice_count=compute_slices,
        placement_start=int(gpu_instance_info.placement.start),
        placement_size=int(gpu_instance_info.placement.size),
    )


def _compute_slice_count(nvml: ModuleType, gpu_instance: Any, profile_id: int, uuid: str) -> int:
    count = getattr(
        nvml, "NVML_COMPUTE_INSTANCE_PROFILE_COUNT", _COMPUTE_INSTANCE_PROFILE_COUNT_FALLBACK
    )
    shared = getattr(nvml, "NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED", 0)
    infos = _supported_profiles(
        nvml, "nvmlGpuInstanceGetComputeInstanceProfileInfo", count, lambda e: (gpu_instance, e, shared), uuid
    )
    for _profile_enum, info in infos:
        if int(info.id) == profile_id:
            return int(info.sliceCount)
    raise _DeviceReadError(
        f"its compute instance profile id {profile_id} is not among the profiles its GPU instance reports",
        uuid,
    )


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
