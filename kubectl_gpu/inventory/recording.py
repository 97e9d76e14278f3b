"""What a node's NVML said, written back as the recording format of docs/inventory.md (pure):
``kubectl gpu inventory --record FILE``.  Replayed with ``--nvml-recording FILE`` the reader
gets the same readings, so the preview is the same slice, sysfs facts (pcieRoot, numa_node)
included.  Devices NVML could not describe are not in it (they are named as errors when recording).
"""

from __future__ import annotations

from typing import Any

from kubectl_gpu.inventory.readings import GpuInstanceProfile, GpuReading, MigReading, NodeReadings

# NVML_COMPUTE_INSTANCE_PROFILE_* for a compute instance of N slices (nvml.h), recorded as the profile
# and id of the compute instance each MIG device runs.
_COMPUTE_INSTANCE_PROFILE_OF_SLICES = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}
_MIG_ENABLE, _MIG_DISABLE = 1, 0


def recording_of(readings: NodeReadings, description: str) -> dict[str, Any]:
    return {
        "description": description,
        "driverVersion": readings.driver_version,
        "cudaDriverVersion": readings.cuda_driver_version,
        "gpus": [_gpu(gpu) for gpu in readings.gpus],
    }


def _gpu(gpu: GpuReading) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": gpu.product_name,
        "uuid": gpu.uuid,
        "minor": gpu.minor,
        "brand": gpu.brand,
        "architecture": gpu.architecture,
        "cudaComputeCapability": list(gpu.compute_capability),
    }
    if gpu.memory_bytes is not None:
        record["memoryTotalBytes"] = gpu.memory_bytes
    if gpu.pci_bus_id is not None:
        record["pciBusId"] = "0000" + gpu.pci_bus_id.upper()  # NVML's form: an 8-digit domain
    if gpu.mig_capable:
        mode = _MIG_ENABLE if gpu.mig_enabled else _MIG_DISABLE
        record["migMode"] = [mode, mode]
    if gpu.addressing_mode is not None:
        record["addressingMode"] = gpu.addressing_mode
    profiles = {p.profile_id: p for p in gpu.instance_profiles}
    profiles.update({m.gpu_instance_profile.profile_id: m.gpu_instance_profile for m in gpu.migs})
    if profiles:
        record["gpuInstanceProfiles"] = [_profile(p) for p in sorted(profiles.values(), key=lambda p: p.profile_enum)]
    if gpu.migs:
        slices = sorted({m.compute_slice_count for m in gpu.migs})
        record["computeInstanceProfiles"] = [
            {"profile": _COMPUTE_INSTANCE_PROFILE_OF_SLICES[n], "id": _COMPUTE_INSTANCE_PROFILE_OF_SLICES[n],
             "sliceCount": n} for n in slices]
        record["maxMigDeviceCount"] = max(m.slot for m in gpu.migs) + 1
        record["migDevices"] = [_mig(m, i) for i, m in enumerate(gpu.migs)]
    sysfs: dict[str, Any] = {}
    if gpu.pcie_root is not None:
        sysfs["pcieRoot"] = gpu.pcie_root
    if gpu.numa_node is not None:
        sysfs["numaNode"] = gpu.numa_node
    if sysfs:
        record["sysfs"] = sysfs
    return record


def _profile(profile: GpuInstanceProfile) -> dict[str, Any]:
    record = {
        "profile": profile.profile_enum, "id": profile.profile_id, "sliceCount": profile.slice_count,
        "instanceCount": profile.instance_count, "multiprocessorCount": profile.multiprocessors,
        "copyEngineCount": profile.copy_engines, "decoderCount": profile.decoders,
        "encoderCount": profile.encoders, "jpegCount": profile.jpeg_engines, "ofaCount": profile.ofa_engines,
        "memorySizeMB": profile.memory_mib,
    }
    if profile.placements:
        record["placements"] = [{"start": p.start, "size": p.size} for p in profile.placements]
    return record


def _mig(mig: MigReading, index: int) -> dict[str, Any]:
    compute_profile = _COMPUTE_INSTANCE_PROFILE_OF_SLICES[mig.compute_slice_count]
    return {
        "slot": mig.slot, "uuid": mig.uuid,
        "gpuInstanceId": index + 1, "computeInstanceId": 0,  # NVML's ids: any that tell them apart
        "gpuInstanceProfileId": mig.gpu_instance_profile.profile_id,
        "computeInstanceProfileId": compute_profile,
        "placement": {"start": mig.placement_start, "size": mig.placement_size},
    }
