"""`kubectl gpu inventory --record FILE` writes what NVML and sysfs said; `--nvml-recording FILE`
anywhere gives exactly the slices the node gave (docs/inventory.md), and the sysfs facts the driver
reads beside NVML (cmd/gpu-kubelet-plugin/nvlib.go getGpuInfo: pcieRoot, numa_node) travel with it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.cli.main import main
from kubectl_gpu.inventory import DriverSettings, local_inventory
from kubectl_gpu.inventory.recorded_nvml import RecordedNvml, recording_problem
from kubectl_gpu.inventory.sysfs import LiveSysfs
from tests.mig_tables import MISSING, SHARED_NVML, with_placements
from tests.test_inventory_dynamic_mig import load


def sysfs_tree(root: Path, devices: dict[str, tuple[str, int | None]]) -> LiveSysfs:
    """/sys/devices/<pcie root>/<bdf> with numa_node, and the /sys/bus/pci/devices/<bdf> link."""
    links = root / "bus" / "pci" / "devices"
    links.mkdir(parents=True, exist_ok=True)
    for bdf, (pcie_root, numa) in devices.items():
        device = root / "devices" / pcie_root / bdf
        device.mkdir(parents=True, exist_ok=True)
        if numa is not None:
            (device / "numa_node").write_text(f"{numa}\n")
        os.symlink(device, links / bdf)
    return LiveSysfs(root)


def inventory_json(node: dict, sysfs, settings: DriverSettings = DriverSettings()) -> tuple[str, dict]:
    from kubectl_gpu.inventory.recording import recording_of

    recorded = RecordedNvml(node)
    inventory = local_inventory("gpu-node-1", sysfs, settings, nvml=recorded.module())
    return json.dumps(list(inventory.slices), indent=2), recording_of(inventory.readings, "recorded")


def replay_json(recording: dict, settings: DriverSettings = DriverSettings()) -> str:
    recorded = RecordedNvml(recording)
    inventory = local_inventory("gpu-node-1", recorded.sysfs, settings, nvml=recorded.module())
    return json.dumps(list(inventory.slices), indent=2)


def test_numa_node_and_pcie_root_come_from_sysfs_and_survive_a_replay(tmp_path):
    sysfs = sysfs_tree(tmp_path, {"0000:18:00.0": ("pci0000:17", 1)})

    live, recording = inventory_json(load("h100-80gb-hbm3"), sysfs)

    attributes = json.loads(live)[0]["spec"]["devices"][0]["attributes"]
    assert attributes["resource.kubernetes.io/numaNode"] == {"int": 1}
    assert attributes["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:17"}
    assert recording["gpus"][0]["sysfs"] == {"pcieRoot": "pci0000:17", "numaNode": 1}
    assert replay_json(recording) == live


def test_with_the_drivers_list_attributes_gate_numa_node_is_a_one_element_list(tmp_path):
    sysfs = sysfs_tree(tmp_path, {"0000:18:00.0": ("pci0000:17", 0)})
    settings = DriverSettings.parse(gates="DRAListTypeAttributes=true")

    live, _ = inventory_json(load("h100-80gb-hbm3"), sysfs, settings)

    assert json.loads(live)[0]["spec"]["devices"][0]["attributes"]["resource.kubernetes.io/numaNode"] == {
        "ints": [0]}


@pytest.mark.parametrize("numa, release", [(-1, "v0.5.0"), (None, "v0.5.0"), (1, "v0.4.1")])
def test_no_numa_node_without_affinity_without_sysfs_or_before_v0_5_0(tmp_path, numa, release):
    sysfs = sysfs_tree(tmp_path, {"0000:18:00.0": ("pci0000:17", numa)})

    live, _ = inventory_json(load("h100-80gb-hbm3"), sysfs, DriverSettings.parse(release))

    assert "resource.kubernetes.io/numaNode" not in json.loads(live)[0]["spec"]["devices"][0]["attributes"]


def test_mig_devices_carry_their_gpus_numa_node(tmp_path):
    sysfs = sysfs_tree(tmp_path, {"0000:07:00.0": ("pci0000:00", 3)})

    live, _ = inventory_json(load("a100-sxm4-40gb-mig"), sysfs)

    for device in json.loads(live)[0]["spec"]["devices"]:
        assert device["attributes"]["resource.kubernetes.io/numaNode"] == {"int": 3}


# --- the property: any fake node and sysfs tree, recorded then replayed, gives the same bytes -------

_PROFILES = with_placements(load("a100-sxm4-40gb-mig")["gpus"][0]["gpuInstanceProfiles"])
_MIGS = load("a100-sxm4-40gb-mig")["gpus"][0]["migDevices"]


@st.composite
def nodes(draw):
    """1-4 GPUs: H100- or A100-like, MIG off, on (with some of the A100 fixture's MIG devices) or not
    capable, with or without NUMA and PCIe root in sysfs."""
    gpus, sysfs = [], {}
    for index in range(draw(st.integers(1, 4))):
        bus = f"0000:{0x10 + index:02x}:00.0"
        gpu = {"name": draw(st.sampled_from(["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA L4"])),
               "uuid": f"GPU-{index:08x}-0000-0000-0000-000000000000", "minor": draw(st.integers(0, 15)),
               "brand": 14, "architecture": draw(st.sampled_from([7, 8, 9, 10, 13])),
               "cudaComputeCapability": [9, 0], "memoryTotalBytes": draw(st.integers(2**30, 2**37)),
               "pciBusId": "0000" + bus.upper()}
        if draw(st.booleans()):
            gpu["addressingMode"] = draw(st.integers(0, 2))
        capable = draw(st.sampled_from(["off", "on", "none"]))
        if capable != "none":
            gpu["memoryTotalBytes"] = 42949672960
            gpu["gpuInstanceProfiles"] = _PROFILES
            gpu["migMode"] = [1, 1] if capable == "on" else [0, 0]
        if capable == "on":
            chosen = draw(st.lists(st.sampled_from(range(len(_MIGS))), unique=True, max_size=len(_MIGS)))
            gpu["migDevices"] = [_MIGS[i] for i in sorted(chosen)]
            gpu["maxMigDeviceCount"] = 7
            gpu["computeInstanceProfiles"] = load("a100-sxm4-40gb-mig")["gpus"][0]["computeInstanceProfiles"]
        gpus.append(gpu)
        if draw(st.booleans()):
            sysfs[bus] = (f"pci0000:{index:02x}", draw(st.one_of(st.none(), st.integers(-1, 3))))
    minors = [g["minor"] for g in gpus]
    if len(set(minors)) != len(minors):  # the kernel gives each GPU its own minor
        for i, gpu in enumerate(gpus):
            gpu["minor"] = i
    return {"driverVersion": "580.159.04", "cudaDriverVersion": 13000, "gpus": gpus}, sysfs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node=nodes(), gates=st.sampled_from(["", "DynamicMIG=true", "DRAListTypeAttributes=true"]))
def test_record_then_replay_gives_the_same_slices_byte_for_byte(tmp_path_factory, node, gates):
    fake, devices = node
    sysfs = sysfs_tree(tmp_path_factory.mktemp("sys"), devices)
    settings_ = DriverSettings.parse(gates=gates)

    live, recording = inventory_json(fake, sysfs, settings_)

    assert recording_problem(recording) is None  # what --record writes, --nvml-recording accepts
    assert replay_json(recording, settings_) == live


def test_the_cli_records_and_replays_the_same_slices(tmp_path):
    source = tmp_path / "node.json"
    source.write_text(json.dumps(load("a100-sxm4-40gb-mig")))
    record = tmp_path / "recorded.json"
    runner = CliRunner()

    first = runner.invoke(main, ["inventory", "--nvml-recording", str(source), "--node-name", "n1",
                                 "-o", "json", "--record", str(record)])
    again = runner.invoke(main, ["inventory", "--nvml-recording", str(record), "--node-name", "n1", "-o", "json"])

    assert first.exit_code == 0 and again.exit_code == 0, first.output + again.output
    assert again.stdout == first.stdout


def test_the_real_h200_recording_replays_to_the_slice_its_machine_gave():
    """../shared/nvml/README.md: on the H200 machine, live NVML and --nvml-recording gave the same
    ResourceSlice but for pcieRoot (pci0000:00, sysfs); a recording with the sysfs facts gives it all."""
    if not SHARED_NVML.is_dir():
        pytest.skip(MISSING)
    node = json.loads((SHARED_NVML / "h200-141gb-real.json").read_text())
    node["gpus"][0]["sysfs"] = {"pcieRoot": "pci0000:00"}

    [document] = json.loads(replay_json(node))

    [device] = document["spec"]["devices"]
    assert device["name"] == "gpu-0"
    assert device["attributes"] == {
        "type": {"string": "gpu"}, "uuid": {"string": "GPU-0a6a6cf3-0de7-480e-2faf-bc571f3dc900"},
        "productName": {"string": "NVIDIA H200"}, "brand": {"string": "Nvidia"},
        "architecture": {"string": "Hopper"}, "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "580.159.4"}, "cudaDriverVersion": {"version": "13.0.0"},
        "addressingMode": {"string": "None"},
        "resource.kubernetes.io/pciBusID": {"string": "0000:00:06.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}}
    # ../shared/nvml/h200-nvidia-smi-q.txt: "FB Memory Usage / Total: 143771 MiB", "Addressing Mode: None",
    # "Product Architecture: Hopper", "Bus Id: 00000000:00:06.0".
    assert device["capacity"] == {"memory": {"value": "143771Mi"}}
