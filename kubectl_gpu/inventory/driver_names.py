"""How the NVIDIA DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu) names and formats things.

Each rule mirrors the driver's own code so the preview matches what the kubelet plugin
publishes, byte for byte where it matters to a CEL selector:

* brand / architecture strings come from go-nvlib ``GetBrandAsString`` /
  ``GetArchitectureAsString`` (note ``Nvidia``, not ``NVIDIA``; ``Ada Lovelace``).
* versions go through Masterminds semver ``NewVersion`` (loose: missing parts become 0,
  leading zeros are dropped) and ``String()``, so driver ``580.159.04`` is published as
  ``580.159.4`` and CUDA ``13000`` as ``13.0.0``.
* MIG profile names come from go-nvlib ``MigProfileInfo.String()`` (``1g.10gb``,
  ``1g.10gb+me``, ``1c.2g.20gb``), with the memory rounded the way go-nvlib rounds it.
* device names: ``gpu-<minor>`` and ``gpu-<minor>-mig-<profile without dots>-<profile id>-<placement start>``.
"""

from __future__ import annotations

import math
import re

from kubectl_gpu.dra import facts

# NVML_BRAND_* -> go-nvlib GetBrandAsString.  Values NVML defines but go-nvlib does not
# (e.g. 18 NVIDIA_VGAMEDEV) make the driver fail to enumerate the GPU.
BRANDS: dict[int, str] = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "Grid",
    5: "GeForce",
    6: "Titan",
    7: "NvidiaVApps",
    8: "NvidiaVPC",
    9: "NvidiaVCS",
    10: "NvidiaVWS",
    11: "NvidiaCloudGaming",
    12: "QuadroRTX",
    13: "NvidiaRTX",
    14: "Nvidia",
    15: "GeForceRTX",
    16: "TitanRTX",
}

# NVML_DEVICE_ARCH_* -> go-nvlib GetArchitectureAsString, and NVML_GPU_INSTANCE_PROFILE_* ->
# (GPU slices, profile-name suffix): the facts every face shares.
ARCHITECTURES = facts.ARCHITECTURES
_GPU_INSTANCE_PROFILES = facts.GPU_INSTANCE_PROFILES

_LOOSE_SEMVER = re.compile(
    r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$"
)

GPU_DEVICE_TYPE = facts.GPU_TYPE
MIG_DEVICE_TYPE = facts.MIG_TYPE


class NamingError(ValueError):
    """The driver has no name for this value (it fails to enumerate such a GPU)."""


def brand_name(brand: int) -> str:
    try:
        return BRANDS[brand]
    except KeyError:
        raise NamingError(
            f"NVML brand {brand} has no name in the NVIDIA DRA driver (go-nvlib), which fails to "
            "enumerate this GPU; upgrade the driver to a release that knows this brand"
        ) from None


def architecture_name(architecture: int) -> str:
    try:
        return ARCHITECTURES[architecture]
    except KeyError:
        raise NamingError(
            f"NVML architecture {architecture} has no name in the NVIDIA DRA driver (go-nvlib), "
            "which fails to enumerate this GPU; upgrade the driver to a release that knows it"
        ) from None


def addressing_mode_name(mode: int) -> str:
    """NVML_DEVICE_ADDRESSING_MODE_* -> go-nvlib GetAddressingModeAsString ("None", "HMM", "ATS")."""
    try:
        return facts.ADDRESSING_MODES[mode]
    except KeyError:
        raise NamingError(
            f"NVML addressing mode {mode} has no name in the NVIDIA DRA driver (go-nvlib), which fails to "
            "enumerate this GPU; upgrade the driver to a release that knows it"
        ) from None


def semver(text: str) -> str:
    """Masterminds semver ``MustParse(text).String()``: ``580.159.04`` -> ``580.159.4``."""
    match = _LOOSE_SEMVER.match(text)
    if match is None:
        raise NamingError(f"{text!r} is not a version the NVIDIA DRA driver can parse")
    major, minor, patch = match.group(1), match.group(2), match.group(3)
    version = f"{int(major)}.{int(minor[1:]) if minor else 0}.{int(patch[1:]) if patch else 0}"
    if match.group(5):
        version += f"-{match.group(5)}"
    if match.group(8):
        version += f"+{match.group(8)}"
    return version


def compute_capability_version(major: int, minor: int) -> str:
    return semver(f"{major}.{minor}")


def cuda_driver_version(encoded: int) -> str:
    """NVML encodes CUDA 12.8 as 12080; the driver publishes ``12.8.0``."""
    return semver(f"{encoded // 1000}.{(encoded % 1000) // 10}")


def mig_memory_gb(profile_memory_mib: int, device_memory_bytes: int) -> int:
    """go-nvlib getMigMemorySizeGB: the profile's share of the GPU in eighths, times the GPU's
    memory in whole GiB rounded up (an A100 40GB with 4864 MiB slices gives 5)."""
    one_mib, one_gib = 1024 * 1024, 1024 * 1024 * 1024
    fraction = (profile_memory_mib * one_mib) / device_memory_bytes
    fraction = math.ceil(fraction * 8) / 8
    device_gib = (device_memory_bytes + one_gib - 1) // one_gib
    # Go's math.Round rounds half away from zero; Python's round() would round half to even.
    return int(math.floor(fraction * device_gib + 0.5))


def mig_profile_name(
    profile_enum: int, compute_slices: int, profile_memory_mib: int, device_memory_bytes: int
) -> str:
    try:
        gpu_slices, suffix = _GPU_INSTANCE_PROFILES[profile_enum]
    except KeyError:
        raise NamingError(
            f"GPU instance profile {profile_enum} is unknown to the NVIDIA DRA driver (go-nvlib)"
        ) from None
    gigabytes = mig_memory_gb(profile_memory_mib, device_memory_bytes)
    if compute_slices == gpu_slices:
        return f"{gpu_slices}g.{gigabytes}gb{suffix}"
    return f"{compute_slices}c.{gpu_slices}g.{gigabytes}gb{suffix}"


def gpu_device_name(minor: int) -> str:
    return f"gpu-{minor}"


def mig_device_name(parent_minor: int, profile: str, profile_id: int, placement_start: int) -> str:
    return f"gpu-{parent_minor}-mig-{rfc1123(profile.replace('.', ''))}-{profile_id}-{placement_start}"


def rfc1123(name: str) -> str:
    # The driver's toRFC1123Compliant: lower case, anything but [a-z0-9-.] becomes '-'.
    name = re.sub(r"[^a-z0-9.\-]", "-", name.lower()).strip("-")
    return name.removesuffix(".")[:253]
