"""The NVIDIA DRA driver's naming and formatting rules, on real values.

A selector such as ``device.attributes["gpu.nvidia.com"].driverVersion`` or
``device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`` only matches if the preview
spells values exactly as the driver does.
"""

from __future__ import annotations

import pytest

from kubectl_gpu.inventory import driver_names
from kubectl_gpu.inventory.driver_names import NamingError
from kubectl_gpu.inventory.quantity import binary_si

MiB = 1024 * 1024
A100_40GB = 40960 * MiB
A100_80GB = 81920 * MiB
H100_80GB = 81559 * MiB


@pytest.mark.parametrize(
    ("nvml", "published"),
    [
        ("580.159.04", "580.159.4"),  # Masterminds semver drops the leading zero
        ("550.54.15", "550.54.15"),
        ("535.104.05", "535.104.5"),
        ("570.86", "570.86.0"),
    ],
)
def test_driver_versions_are_published_as_the_driver_parses_them(nvml: str, published: str) -> None:
    assert driver_names.semver(nvml) == published


def test_cuda_driver_version_is_decoded_from_nvmls_integer() -> None:
    assert driver_names.cuda_driver_version(13000) == "13.0.0"
    assert driver_names.cuda_driver_version(12080) == "12.8.0"
    assert driver_names.cuda_driver_version(12040) == "12.4.0"


def test_compute_capability_is_a_version() -> None:
    assert driver_names.compute_capability_version(9, 0) == "9.0.0"
    assert driver_names.compute_capability_version(8, 6) == "8.6.0"


def test_a_version_the_driver_cannot_parse_is_refused() -> None:
    with pytest.raises(NamingError, match="not a version"):
        driver_names.semver("r580")


@pytest.mark.parametrize(
    ("brand", "name"),
    [(14, "Nvidia"), (2, "Tesla"), (5, "GeForce"), (13, "NvidiaRTX"), (12, "QuadroRTX")],
)
def test_brands_use_go_nvlibs_spelling(brand: int, name: str) -> None:
    assert driver_names.brand_name(brand) == name


@pytest.mark.parametrize(
    ("architecture", "name"),
    [(7, "Ampere"), (8, "Ada Lovelace"), (9, "Hopper"), (10, "Blackwell"), (5, "Volta"), (13, "Rubin")],
)
def test_architectures_use_go_nvlibs_spelling(architecture: int, name: str) -> None:
    assert driver_names.architecture_name(architecture) == name


def test_an_enum_the_driver_has_no_name_for_says_the_driver_would_fail() -> None:
    with pytest.raises(NamingError, match="fails to enumerate"):
        driver_names.architecture_name(11)  # no NVML_DEVICE_ARCH_* value in go-nvml v0.13
    with pytest.raises(NamingError, match="fails to enumerate"):
        driver_names.brand_name(18)


@pytest.mark.parametrize(
    ("profile_enum", "compute_slices", "memory_mib", "device_bytes", "name"),
    [
        (0, 1, 4864, A100_40GB, "1g.5gb"),
        (2, 3, 19968, A100_40GB, "3g.20gb"),
        (4, 7, 40192, A100_40GB, "7g.40gb"),
        (9, 1, 9856, A100_40GB, "1g.10gb"),
        (0, 1, 9728, A100_80GB, "1g.10gb"),
        (2, 3, 40192, A100_80GB, "3g.40gb"),
        (7, 1, 9728, A100_80GB, "1g.10gb+me"),
        (0, 1, 9856, H100_80GB, "1g.10gb"),
        (9, 1, 19968, H100_80GB, "1g.20gb"),
        (0xF, 1, 9856, H100_80GB, "1g.10gb+me.all"),
        (0xD, 1, 9856, H100_80GB, "1g.10gb-me"),
        (2, 1, 40192, A100_80GB, "1c.3g.40gb"),
    ],
)
def test_mig_profile_names_match_nvidia_smi(
    profile_enum: int, compute_slices: int, memory_mib: int, device_bytes: int, name: str
) -> None:
    assert driver_names.mig_profile_name(profile_enum, compute_slices, memory_mib, device_bytes) == name


def test_device_names_use_the_minor_number_profile_id_and_placement() -> None:
    assert driver_names.gpu_device_name(3) == "gpu-3"
    assert driver_names.mig_device_name(0, "1g.10gb", 19, 6) == "gpu-0-mig-1g10gb-19-6"
    # '+' is not allowed in a DNS label: the driver turns it into '-'.
    assert driver_names.mig_device_name(1, "1g.10gb+me", 20, 0) == "gpu-1-mig-1g10gb-me-20-0"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (81559 * MiB, "81559Mi"),
        (40 * 1024 * MiB, "40Gi"),
        (4864 * MiB, "4864Mi"),
        (98, "98"),
        (0, "0"),
        (1, "1"),
        (1000, "1k"),  # below 1024 Kubernetes falls back to decimal SI
        (1500, "1500"),
        (2048, "2Ki"),
    ],
)
def test_capacities_are_canonical_kubernetes_quantities(value: int, text: str) -> None:
    assert binary_si(value) == text
