"""NVIDIA's DRA driver configuration API (`resource.nvidia.com/v1beta1`): what the core writes and
what the webhook checks, from one definition.

A ResourceClaim carries driver parameters in ``spec.devices.config[].opaque.parameters``.
The API server stores them unread; the NVIDIA kubelet plugin decodes them only when a pod
is already being started on a node (strict decoding, then ``Normalize`` and ``Validate``).
A typo there therefore surfaces as a pod stuck in ContainerCreating.  The webhook applies the
same rules at admission time with :func:`validate_nvidia_parameters`, mirroring the driver's
types (api/nvidia.com/resource/v1beta1: gpuconfig.go, migconfig.go, sharing.go,
vfiodeviceconfig.go, iommu.go, validate.go); the core builds its configs with
:func:`gpu_sharing_config`, and a test holds every config it writes to the validator.

Pure: no I/O.  Every problem is a :class:`FieldError` with the field path and what to change.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping

from .facts import (COMPUTE_DOMAIN_CONFIG_KINDS, COMPUTE_DOMAIN_DRIVER, GPU_CONFIG, GPU_DRIVER_CONFIG_KINDS,
                    IOMMU_BACKEND_POLICIES, MIG_DEVICE_CONFIG, MPS, NVIDIA_CONFIG_API_VERSION, SHARING_STRATEGIES,
                    TIME_SLICE_INTERVALS, TIME_SLICING, VFIO_DEVICE_CONFIG)
from .facts import NVIDIA_DRIVER as NVIDIA_GPU_DRIVER
from .quantity import QuantityError, parse_quantity

GPU_DRIVER_KINDS = GPU_DRIVER_CONFIG_KINDS
COMPUTE_DOMAIN_KINDS = COMPUTE_DOMAIN_CONFIG_KINDS
STRATEGIES = SHARING_STRATEGIES
INTERVALS = TIME_SLICE_INTERVALS

__all__ = [
    "COMPUTE_DOMAIN_DRIVER", "GPU_CONFIG", "IOMMU_BACKEND_POLICIES", "MIG_DEVICE_CONFIG", "MPS",
    "NVIDIA_GPU_DRIVER", "TIME_SLICING", "VFIO_DEVICE_CONFIG", "FieldError", "gpu_sharing_config",
    "validate_nvidia_parameters",
]

# The driver converts pinned-memory limits to whole MiB and rejects anything below 1 MiB.
_MIN_PINNED_LIMIT = Fraction(1024 * 1024)
_DEVICE_INDEX = re.compile(r"^\d+$")


def gpu_sharing_config(strategy: str, *, interval: str = "Default", thread_percentage: int | None = None,
                       pinned_memory_limit: str | None = None) -> dict[str, Any]:
    """A GpuConfig that shares the claim's GPUs by TimeSlicing or MPS, as the core writes it."""
    if strategy == TIME_SLICING:
        sharing: dict[str, Any] = {"strategy": TIME_SLICING, "timeSlicingConfig": {"interval": interval}}
    elif strategy == MPS:
        mps: dict[str, Any] = {}
        if thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = int(thread_percentage)
        if pinned_memory_limit is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = pinned_memory_limit
        sharing = {"strategy": MPS, "mpsConfig": mps} if mps else {"strategy": MPS}
    else:
        raise ValueError(f"unknown sharing strategy {strategy!r}; use {' or '.join(STRATEGIES)}")
    return {"apiVersion": NVIDIA_CONFIG_API_VERSION, "kind": GPU_CONFIG, "sharing": sharing}


@dataclass(frozen=True)
class FieldError:
    """One reason to deny: where (a field path such as ``spec.devices.config[0].opaque``)
    and what to change."""

    path: str
    message: str

    def render(self) -> str:
        return f"{self.path}: {self.message}"


def validate_nvidia_parameters(parameters: Any, path: str) -> list[FieldError]:
    """Findings for the ``parameters`` of an opaque config whose driver is gpu.nvidia.com.

    ``path`` is the field path of ``parameters`` itself; findings extend it.
    """
    if not isinstance(parameters, Mapping):
        return [FieldError(path, f"must be an object with apiVersion {NVIDIA_CONFIG_API_VERSION} "
                              f"and kind {' or '.join(GPU_DRIVER_KINDS)}")]
    findings: list[FieldError] = []
    api_version = parameters.get("apiVersion")
    kind = parameters.get("kind")
    if api_version != NVIDIA_CONFIG_API_VERSION:
        findings.append(FieldError(f"{path}.apiVersion", _api_version_message(api_version)))
    if kind in COMPUTE_DOMAIN_KINDS:
        findings.append(FieldError(
            f"{path}.kind",
            f"{kind} belongs to the driver {COMPUTE_DOMAIN_DRIVER}, not {NVIDIA_GPU_DRIVER}; "
            f"set opaque.driver to {COMPUTE_DOMAIN_DRIVER} or use one of {', '.join(GPU_DRIVER_KINDS)}",
        ))
        return findings
    checker = _KIND_CHECKERS.get(kind) if isinstance(kind, str) else None
    if checker is None:
        findings.append(FieldError(
            f"{path}.kind",
            f"unknown kind {kind!r} for driver {NVIDIA_GPU_DRIVER}; use one of "
            f"{', '.join(GPU_DRIVER_KINDS)}",
        ))
        return findings
    findings.extend(checker(parameters, path))
    return findings


def _api_version_message(api_version: Any) -> str:
    if api_version is None:
        return f"is required; set it to {NVIDIA_CONFIG_API_VERSION}"
    if api_version == "gpu.resource.nvidia.com/v1alpha1":
        return (f"{api_version} is the retired pre-1.0 driver API; set it to "
                f"{NVIDIA_CONFIG_API_VERSION}")
    return f"{api_version!r} is not served by the NVIDIA driver; set it to {NVIDIA_CONFIG_API_VERSION}"


# --- GpuConfig / MigDeviceConfig -------------------------------------------------------


def _check_sharing_config(params: Mapping[str, Any], path: str) -> list[FieldError]:
    """GpuConfig and MigDeviceConfig have the same fields; MIG sharing has fewer options."""
    kind = params["kind"]
    findings = _unknown_fields(params, path, ("apiVersion", "kind", "sharing"), kind)
    if "sharing" in params:
        findings += _check_sharing(params["sharing"], f"{path}.sharing", mig=kind == MIG_DEVICE_CONFIG)
    return findings


def _check_sharing(sharing: Any, path: str, *, mig: bool) -> list[FieldError]:
    if not isinstance(sharing, Mapping):
        return [FieldError(path, f"must be an object with a strategy ({' or '.join(STRATEGIES)})")]
    # A MIG device's time-slice is fixed by its parent GPU: MigDeviceSharing has no
    # timeSlicingConfig field, so the driver's strict decoder rejects one.
    valid = ("strategy", "mpsConfig") if mig else ("strategy", "timeSlicingConfig", "mpsConfig")
    owner = "MigDeviceConfig sharing" if mig else "GpuConfig sharing"
    findings = []
    if mig and "timeSlicingConfig" in sharing:
        findings.append(FieldError(
            f"{path}.timeSlicingConfig",
            "MIG devices take no time-slice interval (the parent GPU's applies); remove "
            "timeSlicingConfig, or use strategy MPS with mpsConfig",
        ))
        sharing = {k: v for k, v in sharing.items() if k != "timeSlicingConfig"}
    findings += _unknown_fields(sharing, path, valid, owner)

    strategy = sharing.get("strategy")
    if strategy is None:
        findings.append(FieldError(f"{path}.strategy", f"is required; use {' or '.join(STRATEGIES)}"))
    elif strategy == "Fabric":
        findings.append(FieldError(
            f"{path}.strategy",
            f"Fabric sharing is not enabled in the NVIDIA driver; use {' or '.join(STRATEGIES)}",
        ))
    elif strategy not in STRATEGIES:
        findings.append(FieldError(
            f"{path}.strategy",
            f"unknown strategy {strategy!r}; use {' or '.join(STRATEGIES)} (case-sensitive)",
        ))

    if "timeSlicingConfig" in sharing:
        if strategy == MPS:
            findings.append(FieldError(
                f"{path}.timeSlicingConfig",
                "timeSlicingConfig has no effect with strategy MPS and the driver rejects it; "
                "remove it or set strategy: TimeSlicing",
            ))
        findings += _check_time_slicing(sharing["timeSlicingConfig"], f"{path}.timeSlicingConfig")
    if "mpsConfig" in sharing:
        if strategy == TIME_SLICING and not mig:
            findings.append(FieldError(
                f"{path}.mpsConfig",
                "mpsConfig cannot be used with strategy TimeSlicing (the driver fails the pod "
                "at start); remove mpsConfig or set strategy: MPS",
            ))
        elif strategy == TIME_SLICING:
            findings.append(FieldError(
                f"{path}.mpsConfig",
                "mpsConfig is ignored with strategy TimeSlicing; remove it or set strategy: MPS",
            ))
        findings += _check_mps(sharing["mpsConfig"], f"{path}.mpsConfig")
    return findings


def _check_time_slicing(config: Any, path: str) -> list[FieldError]:
    if config is None:
        return []
    if not isinstance(config, Mapping):
        return [FieldError(path, f"must be an object like {{interval: {INTERVALS[0]}}}")]
    findings = _unknown_fields(config, path, ("interval",), "timeSlicingConfig")
    interval = config.get("interval")
    if interval is not None and interval not in INTERVALS:
        findings.append(FieldError(
            f"{path}.interval",
            f"unknown interval {interval!r}; use one of {', '.join(INTERVALS)} (case-sensitive)",
        ))
    return findings


def _check_mps(config: Any, path: str) -> list[FieldError]:
    if config is None:
        return []
    if not isinstance(config, Mapping):
        return [FieldError(path, "must be an object with defaultActiveThreadPercentage and/or "
                              "defaultPinnedDeviceMemoryLimit")]
    findings = _unknown_fields(
        config, path,
        ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
         "defaultPerDevicePinnedMemoryLimit", "multiUser"),
        "mpsConfig",
    )
    # MultiUser *bool (driver main branch, sharing.go): start the MPS control daemon for several uids.
    if "multiUser" in config and not isinstance(config["multiUser"], (bool, type(None))):
        findings.append(FieldError(f"{path}.multiUser", f"must be true or false, not {config['multiUser']!r}"))
    if "defaultActiveThreadPercentage" in config:
        percentage = config["defaultActiveThreadPercentage"]
        if isinstance(percentage, bool) or not isinstance(percentage, int):
            findings.append(FieldError(
                f"{path}.defaultActiveThreadPercentage",
                f"must be a whole number from 0 to 100, not {percentage!r}",
            ))
        elif not 0 <= percentage <= 100:
            findings.append(FieldError(
                f"{path}.defaultActiveThreadPercentage",
                f"{percentage} is out of range; use a whole number from 0 to 100",
            ))
    if "defaultPinnedDeviceMemoryLimit" in config:
        findings += _check_pinned_limit(
            config["defaultPinnedDeviceMemoryLimit"], f"{path}.defaultPinnedDeviceMemoryLimit")
    if "defaultPerDevicePinnedMemoryLimit" in config:
        findings += _check_per_device_limits(
            config["defaultPerDevicePinnedMemoryLimit"], f"{path}.defaultPerDevicePinnedMemoryLimit")
    return findings


def _check_pinned_limit(value: Any, path: str) -> list[FieldError]:
    if value is None:
        return []
    try:
        quantity = parse_quantity(value)
    except QuantityError:
        return [FieldError(path, f"{value!r} is not a Kubernetes quantity; write it like 10Gi or 512Mi")]
    if quantity < _MIN_PINNED_LIMIT:
        return [FieldError(path, f"{value!r} is below 1Mi, which the driver rejects; use at least 1Mi")]
    return []


def _check_per_device_limits(value: Any, path: str) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [FieldError(path, "must map a device index (\"0\") or UUID (GPU-..., MIG-...) to a "
                              "quantity such as 10Gi")]
    findings = []
    for device, limit in value.items():
        entry = f"{path}[{device}]"
        # The driver resolves a key as a UUID of an allocated device, else as an index into
        # the allocated devices; anything else fails the pod at start.
        if not (isinstance(device, str)
                and (_DEVICE_INDEX.match(device) or device.startswith(("GPU-", "MIG-")))):
            findings.append(FieldError(
                entry, f"key {device!r} is neither a device index (\"0\", \"1\") nor a GPU/MIG "
                       "UUID (GPU-..., MIG-...)"))
        findings += _check_pinned_limit(limit, entry)
    return findings


# --- VfioDeviceConfig ------------------------------------------------------------------


def _check_vfio_device_config(params: Mapping[str, Any], path: str) -> list[FieldError]:
    findings = _unknown_fields(params, path, ("apiVersion", "kind", "iommu"), VFIO_DEVICE_CONFIG)
    iommu = params.get("iommu")
    if iommu is None:
        return findings
    iommu_path = f"{path}.iommu"
    if not isinstance(iommu, Mapping):
        return findings + [FieldError(iommu_path, "must be an object with backendPolicy "
                                               f"({' or '.join(IOMMU_BACKEND_POLICIES)})")]
    findings += _unknown_fields(iommu, iommu_path, ("backendPolicy", "enableAPIDevice"), "iommu")
    policy = iommu.get("backendPolicy")
    if policy not in IOMMU_BACKEND_POLICIES:
        what = "is required" if policy is None else f"unknown policy {policy!r}"
        findings.append(FieldError(f"{iommu_path}.backendPolicy",
                                f"{what}; use {' or '.join(IOMMU_BACKEND_POLICIES)}"))
    if "enableAPIDevice" in iommu and not isinstance(iommu["enableAPIDevice"], (bool, type(None))):
        findings.append(FieldError(f"{iommu_path}.enableAPIDevice", "must be true or false"))
    return findings


_KIND_CHECKERS: dict[str, Callable[[Mapping[str, Any], str], list[FieldError]]] = {
    GPU_CONFIG: _check_sharing_config,
    MIG_DEVICE_CONFIG: _check_sharing_config,
    VFIO_DEVICE_CONFIG: _check_vfio_device_config,
}


def _unknown_fields(obj: Mapping[str, Any], path: str, valid: tuple[str, ...],
                    owner: str) -> list[FieldError]:
    """The driver decodes strictly and case-sensitively: any other key fails the pod."""
    findings = []
    for key in obj:
        if key in valid:
            continue
        hint = ""
        close = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
        lowered = [v for v in valid if v.lower() == str(key).lower()]
        if lowered or close:
            hint = f" (did you mean {(lowered or close)[0]!r}?)"
        findings.append(FieldError(
            f"{path}.{key}",
            f"unknown field {key!r} in {owner}{hint}; valid fields: {', '.join(valid)}",
        ))
    return findings
