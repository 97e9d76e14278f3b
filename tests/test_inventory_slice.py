"""The preview document: a ResourceSlice Kubernetes accepts (strict schema, 1.34 and 1.35),
reachable from Python for `kubectl gpu explain --local`."""

from __future__ import annotations

import os
from pathlib import Path

import kubernetes_validate
import pytest

from kubectl_gpu.inventory import (
    ExitCode,
    InventoryUnavailable,
    local_inventory,
    local_resource_slices,
    plan_inventory,
    resource_slice,
)
from kubectl_gpu.inventory.readings import GpuReading, NodeReadings
from tests.test_inventory_fake_nvml import DATA, FakeNvml

# Every fake node that has GPUs to show.
NODES = sorted(path.stem for path in DATA.glob("*.json") if FakeNvml.load(path.stem).node.get("gpus"))


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("kubernetes", ["1.34", "1.35"])
def test_every_preview_is_a_valid_v1_resource_slice(
    monkeypatch: pytest.MonkeyPatch, node: str, kubernetes: str
) -> None:
    FakeNvml.load(node).install(monkeypatch)

    [document] = local_resource_slices("gpu-node-1")

    kubernetes_validate.validate(document, kubernetes, strict=True)


def test_strict_validation_would_catch_a_v1beta1_shaped_device() -> None:
    # Guards the test above: the schema check really looks at device shape.
    document = resource_slice(plan_inventory(_one_gpu()), "gpu-node-1")
    device = document["spec"]["devices"][0]
    document["spec"]["devices"][0] = {"name": device["name"], "basic": {"attributes": device["attributes"]}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(document, "1.34", strict=True)


def test_local_resource_slices_uses_the_hostname_without_a_node_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    FakeNvml.load("h100-80gb-hbm3").install(monkeypatch)
    monkeypatch.setattr("socket.gethostname", lambda: "Worker-3")

    [document] = local_resource_slices()

    assert document["spec"]["nodeName"] == "worker-3"
    # resourceslicecontroller.go: "<index>-<driver>-<node>-", the API server appends a random suffix.
    assert document["metadata"]["generateName"] == "00000-gpu.nvidia.com-worker-3-"


def test_local_resource_slices_raises_a_one_line_error_without_nvidia_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeNvml.load("no-library").install(monkeypatch)

    with pytest.raises(InventoryUnavailable) as raised:
        local_resource_slices("gpu-node-1")

    assert raised.value.exit_code is ExitCode.NO_NVML_LIBRARY
    assert "\n" not in str(raised.value)
    assert fake.inits == 0 and fake.shutdowns == 0


def test_the_real_pynvml_on_a_machine_without_nvidia_driver() -> None:
    # This machine has no libnvidia-ml.so.1: the unpatched library must give the same answer.
    if Path("/proc/driver/nvidia").exists():
        pytest.skip("an NVIDIA driver is installed here")
    with pytest.raises(InventoryUnavailable) as raised:
        local_resource_slices("gpu-node-1")
    assert raised.value.exit_code is ExitCode.NO_NVML_LIBRARY


def test_pcie_root_comes_from_sysfs_like_the_drivers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    device_dir = tmp_path / "devices" / "pci0000:17" / "0000:17:01.0" / "0000:18:00.0"
    device_dir.mkdir(parents=True)
    links = tmp_path / "bus" / "pci" / "devices"
    links.mkdir(parents=True)
    os.symlink(device_dir, links / "0000:18:00.0")
    FakeNvml.load("h100-80gb-hbm3").install(monkeypatch)

    inventory = local_inventory("gpu-node-1", sysfs_root=tmp_path)

    attributes = inventory.slices[0]["spec"]["devices"][0]["attributes"]
    assert attributes["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:17"}
    assert attributes["resource.kubernetes.io/pciBusID"] == {"string": "0000:18:00.0"}


def test_without_sysfs_there_is_no_pcie_root_rather_than_a_guess(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    FakeNvml.load("h100-80gb-hbm3").install(monkeypatch)

    inventory = local_inventory("gpu-node-1", sysfs_root=tmp_path)

    attributes = inventory.slices[0]["spec"]["devices"][0]["attributes"]
    assert "resource.kubernetes.io/pcieRoot" not in attributes
    assert attributes["resource.kubernetes.io/pciBusID"] == {"string": "0000:18:00.0"}  # NVML still says it


def test_device_names_follow_the_minor_number_not_the_nvml_index() -> None:
    # NVML orders GPUs by PCI bus; /dev/nvidiaN minors need not follow that order.
    readings = _one_gpu(minor=5)

    [device] = resource_slice(plan_inventory(readings), "n")["spec"]["devices"]

    assert device["name"] == "gpu-5"


def test_a_gpu_without_memory_information_has_no_memory_capacity() -> None:
    [device] = resource_slice(plan_inventory(_one_gpu(memory_bytes=None)), "n")["spec"]["devices"]

    assert "capacity" not in device
    assert device["attributes"]["productName"] == {"string": "NVIDIA H100 80GB HBM3"}


def test_a_gpu_the_driver_cannot_name_is_a_failure_not_a_made_up_device() -> None:
    plan = plan_inventory(_one_gpu(architecture=14))

    assert plan.devices == ()
    [failure] = plan.failures
    assert failure.where == "GPU index 0"
    assert "NVML architecture 14 has no name in the NVIDIA DRA driver" in failure.message


def _one_gpu(**changes: object) -> NodeReadings:
    gpu = {
        "index": 0,
        "minor": 0,
        "uuid": "GPU-4b7828e9-d6cf-1bb6-9018-02be0a309155",
        "product_name": "NVIDIA H100 80GB HBM3",
        "brand": 14,
        "architecture": 9,
        "compute_capability": (9, 0),
        "memory_bytes": 81559 * 1024 * 1024,
        "pci_bus_id": "0000:18:00.0",
        "pcie_root": None,
        "mig_enabled": False,
    }
    gpu.update(changes)
    return NodeReadings(
        driver_version="580.159.04", cuda_driver_version=13000, gpus=(GpuReading(**gpu),)  # type: ignore[arg-type]
    )
