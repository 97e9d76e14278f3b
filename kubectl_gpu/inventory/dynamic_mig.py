"""The driver's DynamicMIG announcement (KEP-4815 partitionable devices) for one GPU (pure).

Mirrors kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (v0.5.0):

* nvlib.go ``isDynamicMIGCapable``: a MIG-capable GPU; Hopper and newer always (MIG mode toggles
  without a reset), older ones only while MIG mode is on.  The full GPU is announced unless MIG mode
  is on and the GPU is older than Hopper (``GetPerGpuAllocatableDevices``).
* nvlib.go ``inspectMigProfilesAndPlacements`` over go-nvlib's ``VisitMigProfiles``: for every GPU
  instance profile NVML describes, the compute-instance profiles that span it (C == G; not the
  1_SLICE_REV1 one), one abstract MIG device per possible placement.  The largest value of each
  capacity over them is the full GPU's capacity; the largest placement size its memory-slice count.
* partitions.go: one counter set ``gpu-<minor>-counter-set`` per GPU whose counters are those
  largest capacities (names through ``camelToDNSName``) plus ``memory-slice-<i>`` (1 each); the full
  GPU consumes all of it, each MIG device its own capacities and the memory slices of its placement.
  A MIG device carries no ``uuid`` (it does not exist yet) and no ``memorySlice<N>`` capacities.

The vGPU-guest exclusion (``GetVirtualizationMode``) is not in NVML recordings: a recorded GPU is
taken to be no vGPU guest.
"""

from __future__ import annotations

import re

from kubectl_gpu.dra import facts
from kubectl_gpu.inventory import driver_names
from kubectl_gpu.inventory.consumable_shares import SHARES_CAPACITY
from kubectl_gpu.inventory.device_model import (
    AttributeValue,
    CounterSet,
    GpuDevices,
    PublishedDevice,
    device,
    gpu_capacity,
    gpu_device,
    mig_attributes,
    mig_capacity,
)
from kubectl_gpu.inventory.driver_names import NamingError
from kubectl_gpu.inventory.driver_settings import DriverSettings
from kubectl_gpu.inventory.readings import GpuInstanceProfile, GpuReading

# NVML_COMPUTE_INSTANCE_PROFILE_* -> compute slices (go-nvlib mig_profile.go NewMigProfile); 7 is
# 1_SLICE_REV1, which inspectMigProfilesAndPlacements skips.
_COMPUTE_INSTANCE_SLICES = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7, 5: 8, 6: 6, 7: 1, 8: 7}
_SKIPPED_COMPUTE_PROFILE = 7


def capable(gpu: GpuReading) -> bool:
    if not gpu.mig_capable:
        return False
    return gpu.architecture >= facts.HOPPER_ARCHITECTURE or gpu.mig_enabled


def counter_set_name(gpu: GpuReading) -> str:
    """partitions.go GetSharedCounterSetName: toRFC1123Compliant("gpu-<minor>-counter-set")."""
    return f"{driver_names.gpu_device_name(gpu.minor)}-counter-set"


def counter_name(capacity: str) -> str:
    """mig.go camelToDNSName: copyEngines -> copy-engines."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", capacity)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", name)
    return driver_names.rfc1123(name)


def memory_slice_counter(index: int) -> str:
    return f"memory-slice-{index}"


def gpu_devices(gpu: GpuReading, common: dict[str, AttributeValue], settings: DriverSettings) -> GpuDevices:
    """The GPU's partitionable devices and counter set; NamingError when the driver fails the GPU."""
    if gpu.memory_bytes is None:
        raise NamingError("NVML gives no memory size for this GPU, and the NVIDIA DRA driver's DynamicMIG "
                          "fails on such a GPU (go-nvlib VisitMigProfiles)")
    specs = [(profile, name, placement.start, placement.size)
             for profile, name in _profiles(gpu) for placement in profile.placements]
    largest: dict[str, int] = {}
    for profile, _name, _start, _size in specs:
        for capacity, value in mig_capacity(profile).items():
            largest[capacity] = max(largest.get(capacity, value), value)
    memory_slices = max((size for *_, size in specs), default=0)
    set_name = counter_set_name(gpu)

    def counters(capacity: dict[str, int], start: int, size: int) -> dict[str, int]:
        named = {counter_name(k): v for k, v in capacity.items()}
        named.update({memory_slice_counter(i): 1 for i in range(start, start + size)})
        return dict(sorted(named.items()))

    devices: dict[str, PublishedDevice] = {}
    shared_capacity = largest
    if not gpu.mig_enabled or gpu.architecture >= facts.HOPPER_ARCHITECTURE:
        consumes = (CounterSet(set_name, counters(largest, 0, memory_slices)),) if largest else ()
        full = gpu_device(gpu, common, settings, largest or gpu_capacity(gpu), consumes)
        devices[full.name] = full
        # PartCapacities hands out the GPU's own max-capacity map and applyConsumableShares writes into
        # it, so the counter set built afterwards counts what shares added to the full GPU (`shares`).
        if largest and SHARES_CAPACITY in full.capacity:
            shared_capacity = {**largest, SHARES_CAPACITY: full.capacity[SHARES_CAPACITY]}
    for profile, name, start, size in specs:
        attributes = mig_attributes(gpu, name, common)
        consumes = (CounterSet(set_name, counters(mig_capacity(profile), start, size)),)
        device_name = driver_names.mig_device_name(gpu.minor, name, profile.profile_id, start)
        devices[device_name] = device(device_name, attributes, mig_capacity(profile), settings, consumes)
    counter_sets = (CounterSet(set_name, counters(shared_capacity, 0, memory_slices)),) if largest else ()
    ordered = tuple(devices[name] for name in sorted(devices))
    return GpuDevices(gpu.pci_bus_id or "", ordered, counter_sets, partitionable=True)


def _profiles(gpu: GpuReading) -> list[tuple[GpuInstanceProfile, str]]:
    """(profile, its name) for each GPU instance profile and each compute-instance profile spanning
    it, in VisitMigProfiles' order (a 7-slice profile comes twice, through 7_SLICE and 7_SLICE_NVL:
    the same device names, kept once)."""
    assert gpu.memory_bytes is not None
    found = []
    for profile in gpu.instance_profiles:
        gpu_slices = facts.GPU_INSTANCE_PROFILES.get(profile.profile_enum, (None, ""))[0]
        if gpu_slices is None:
            raise NamingError(f"GPU instance profile {profile.profile_enum} is unknown to the NVIDIA DRA "
                              "driver (go-nvlib NewMigProfile), which fails to enumerate this GPU")
        for ci_profile, ci_slices in _COMPUTE_INSTANCE_SLICES.items():
            if ci_slices != gpu_slices or ci_profile == _SKIPPED_COMPUTE_PROFILE:
                continue
            name = driver_names.mig_profile_name(profile.profile_enum, ci_slices, profile.memory_mib,
                                                 gpu.memory_bytes)
            found.append((profile, name))
    return found
