"""What NVML said about this node, as plain immutable data.

The reader (``nvml_reader``) fills these from NVML; everything downstream (the
driver-naming rules in ``plan``, the ResourceSlice document, the table) is a pure
function of them.  Raw NVML enums are kept raw here on purpose: turning them into the
strings the NVIDIA DRA driver publishes is a naming decision, made in one place.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """One possible placement of a GPU instance: its first memory slice and how many it covers
    (``nvmlDeviceGetGpuInstancePossiblePlacements``, what ``nvidia-smi mig -lgipp`` lists)."""

    start: int
    size: int


@dataclass(frozen=True)
class GpuInstanceProfile:
    """One row of ``nvmlDeviceGetGpuInstanceProfileInfo`` (what ``nvidia-smi mig -lgip`` lists)."""

    profile_enum: int  # the NVML_GPU_INSTANCE_PROFILE_* value the info was queried with
    profile_id: int  # info.id, e.g. 19 for 1g.10gb on an A100 80GB
    slice_count: int
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    memory_mib: int  # info.memorySizeMB; nvml.h documents the unit as MiB
    instance_count: int = 0  # info.instanceCount: how many such instances fit at once
    # Where a GPU instance of this profile may sit; empty when NVML gave none (NotSupported),
    # and then the driver's DynamicMIG skips the profile (nvlib.go inspectMigProfilesAndPlacements).
    placements: tuple[Placement, ...] = ()


@dataclass(frozen=True)
class MigReading:
    """One live MIG device (a GPU instance with a compute instance)."""

    slot: int  # nvmlDeviceGetMigDeviceHandleByIndex index on its GPU
    uuid: str
    gpu_instance_profile: GpuInstanceProfile
    compute_slice_count: int  # slices of the compute instance inside the GPU instance
    placement_start: int  # first memory slice of the GPU instance
    placement_size: int


@dataclass(frozen=True)
class GpuReading:
    """One physical GPU."""

    index: int  # NVML enumeration index (never published: only used to report problems)
    minor: int  # /dev/nvidiaN; the driver names the device gpu-<minor>
    uuid: str
    product_name: str
    brand: int  # NVML_BRAND_*
    architecture: int  # NVML_DEVICE_ARCH_*
    compute_capability: tuple[int, int]
    memory_bytes: int | None  # None: NVML reports memory as not supported for this GPU
    pci_bus_id: str | None  # extended BDF, lower case: 0000:3b:00.0
    pcie_root: str | None  # pci<domain>:<bus> from sysfs, when it could be resolved
    mig_enabled: bool
    migs: tuple[MigReading, ...] = ()
    # NVML_DEVICE_ADDRESSING_MODE_* from nvmlDeviceGetAddressingMode; None: the library lacks the call
    # or the platform does not support it (no coherent memory), so the driver publishes no attribute.
    addressing_mode: int | None = None
    # sysfs numa_node of the GPU's PCI device (-1: no affinity); None when sysfs has no such device.
    numa_node: int | None = None
    mig_capable: bool = False  # nvmlDeviceGetMigMode answered (go-nvlib IsMigCapable)
    # Every GPU instance profile the GPU supports, in NVML enum order (read when MIG capable):
    # DynamicMIG announces one device per profile and placement.
    instance_profiles: tuple[GpuInstanceProfile, ...] = ()


@dataclass(frozen=True)
class DeviceFailure:
    """A device NVML could not describe; the others are still reported."""

    where: str  # "GPU index 1", "GPU index 0 MIG slot 3" (NVML enumeration order)
    message: str
    uuid: str | None = None


@dataclass(frozen=True)
class NodeReadings:
    driver_version: str  # nvmlSystemGetDriverVersion, e.g. "580.159.04"
    cuda_driver_version: int  # nvmlSystemGetCudaDriverVersion, e.g. 13000
    gpus: tuple[GpuReading, ...]
    failures: tuple[DeviceFailure, ...] = ()
