"""`kubectl gpu inventory --target-driver hami`: the ResourceSlice HAMi's DRA driver publishes for a node,
predicted from NVML as the driver builds it (Project-HAMi/k8s-dra-driver at
ebeaad97463a2af48dcc5f5a2603f65eaf792da8, cmd/hami-kubelet-plugin: hami_core.go ``HAMiGpuInfo.GetDevice``
and ``wrapHAMiCoreGpu``, nvlib.go ``GetPerGpuAllocatableDevices`` and ``getGpuInfo``, driver.go
``publishResources``).  The fake slices in tests/data/slices/hami-*.yaml are these predictions."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from kubectl_gpu.dra import hami
from tests.hami_slices import NODES, NVML, HamiNode, generate, recording_with_sysfs
from tests.strict_validation import RELEASES, assert_strictly_valid

H100 = next(node for node in NODES if node.fixture == "hami-h100-node.yaml")
A100_MIG = next(node for node in NODES if node.fixture == "hami-a100-node.yaml")


def published(node: HamiNode) -> dict:
    [document] = [d for d in yaml.safe_load_all(node.path.read_text()) if d]
    return document


def recorded_gpu(node: HamiNode) -> dict:
    [gpu] = json.loads(node.recording.read_text())["gpus"]
    return gpu


def inventory(*args: str):
    return CliRunner().invoke(main, ["inventory", "--target-driver", "hami", *args], catch_exceptions=False)


@pytest.mark.parametrize("node", NODES, ids=lambda n: n.fixture)
def test_the_fake_hami_slices_are_what_the_inventory_predicts(node):
    if not node.recording.is_file():
        pytest.skip(f"{node.recording.name} is not checked out (../shared beside the repository)")
    assert node.path.read_text() == generate(node), "run `python -m tests.hami_slices` and review the change"


@pytest.mark.parametrize("node", NODES, ids=lambda n: n.fixture)
def test_each_fake_slice_is_a_strictly_valid_v1_resource_slice(node):
    assert_strictly_valid(published(node), RELEASES["v1"])


def test_one_slice_in_a_pool_named_after_the_node_as_the_kubelet_plugin_publishes_it():
    # driver.go publishResources (HAMiCoreSupport excludes DynamicMIG): one slice of every device, pool = node;
    # k8s.io/dynamic-resource-allocation v0.34.1 (vendored) names it "<node>-<driver>-", the API server adds a suffix.
    document = published(H100)
    assert document["apiVersion"] == "resource.k8s.io/v1" and document["kind"] == "ResourceSlice"
    assert document["metadata"] == {"generateName": "hami-h100-node-hami-core-gpu.project-hami.io-"}
    assert document["spec"]["driver"] == hami.HAMI_DRIVER == "hami-core-gpu.project-hami.io"
    assert document["spec"]["nodeName"] == "hami-h100-node"
    assert document["spec"]["pool"] == {"name": "hami-h100-node", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in document["spec"]["devices"]] == ["hami-gpu-0"]  # CanonicalName: hami-gpu-<minor>


# hami_core.go GetDevice, attribute by attribute, against the H100's NVML recording.
@pytest.mark.parametrize("name, expected", [
    ("type", {"string": "hami-gpu"}),                                      # HAMiGpuDeviceType
    ("uuid", {"string": "GPU-4b7828e9-d6cf-1bb6-9018-02be0a309155"}),      # NVML's UUID
    ("minor", {"int": 0}),                                                 # NVML's minor, an int (NVIDIA's dropped it)
    ("productName", {"string": "NVIDIA H100 80GB HBM3"}),
    ("brand", {"string": "Nvidia"}),                                       # go-nvlib GetBrandAsString
    ("architecture", {"string": "Hopper"}),                                # go-nvlib GetArchitectureAsString
    ("cudaComputeCapability", {"version": "9.0.0"}),                       # semver.MustParse("9.0").String()
    ("driverVersion", {"version": "580.159.4"}),                           # 580.159.04, leading zero dropped
    ("cudaDriverVersion", {"version": "13.0.0"}),                          # 13000 -> "13.0" -> 13.0.0
    ("pcieBusID", {"string": "0000:18:00.0"}),                             # its own name, not the standard pciBusID
    ("resource.kubernetes.io/pcieRoot", {"string": "pci0000:17"}),         # deviceattribute, from sysfs
])
def test_a_hami_gpu_carries_each_attribute_of_get_device(name, expected):
    [device] = published(H100)["spec"]["devices"]
    assert device["attributes"][name] == expected


def test_a_hami_gpu_carries_no_other_attribute():
    """No addressingMode, numaNode, index or standard pciBusID: GetDevice writes none of them."""
    [device] = published(H100)["spec"]["devices"]
    assert set(device["attributes"]) == {hami.published_key(a) for a in hami.ATTRIBUTES}


def test_cores_and_memory_are_consumable_by_several_claims_with_the_drivers_request_policies():
    # GetDevice Capacity: cores 100 (DecimalSI, default 100, 0..100 step 1); memory NVML's total bytes
    # (BinarySI, default all, 1Mi..all step 1Mi); AllowMultipleAllocations true.
    [device] = published(H100)["spec"]["devices"]
    memory = recorded_gpu(H100)["memoryTotalBytes"]
    assert memory == 81559 * 2**20
    assert device["capacity"] == {
        "cores": {"value": "100", "requestPolicy": {"default": "100",
                                                    "validRange": {"min": "0", "max": "100", "step": "1"}}},
        "memory": {"value": "81559Mi", "requestPolicy": {"default": "81559Mi",
                                                         "validRange": {"min": "1Mi", "max": "81559Mi", "step": "1Mi"}}},
    }
    assert device["capacity"] == hami.published_capacity(memory)
    assert device["allowMultipleAllocations"] is True


def test_a_gpu_in_mig_mode_is_published_whole():
    """nvlib.go: with HAMiCoreSupport the GPU is wrapped as hami-gpu before MIG is looked at, so its
    live MIG devices are not announced (NVIDIA's driver would announce only them)."""
    [device] = published(A100_MIG)["spec"]["devices"]
    assert device["name"] == "hami-gpu-0" and device["attributes"]["type"] == {"string": "hami-gpu"}
    assert device["capacity"]["memory"]["value"] == "80Gi"
    assert recorded_gpu(A100_MIG)["migMode"] == [1, 1]


def test_several_gpus_are_several_devices_of_one_slice(tmp_path):
    recording = json.loads(recording_with_sysfs(H100, tmp_path).read_text())
    recording["gpus"].append({**recording["gpus"][0], "minor": 1, "uuid": "GPU-second", "pciBusId": "00000000:2a:00.0"})
    (tmp_path / "two.json").write_text(json.dumps(recording))
    result = inventory("--nvml-recording", str(tmp_path / "two.json"), "--node-name", "n", "-o", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [(d["name"], d["attributes"]["minor"]["int"]) for d in document["spec"]["devices"]] == [
        ("hami-gpu-0", 0), ("hami-gpu-1", 1)]


def test_a_gpu_without_a_pcie_root_is_named_as_one_the_driver_cannot_publish():
    """GetDevice reads pcieRootAttr.Name without the nil check deviceinfo.go has: the plugin would crash."""
    result = inventory("--nvml-recording", str(NVML / "h100-80gb-hbm3.json"), "--node-name", "n")
    assert result.exit_code == 3  # some devices could not be read
    assert "PCIe root" in result.output and "crash" in result.output


def test_the_table_shows_each_hami_gpu_with_its_memory(tmp_path):
    result = inventory("--nvml-recording", str(recording_with_sysfs(H100, tmp_path)), "--node-name", "n")
    assert result.exit_code == 0, result.output
    row = next(line.split() for line in result.output.splitlines() if line.startswith("hami-gpu-0"))
    assert row[:2] == ["hami-gpu-0", "hami-gpu"] and "81559Mi" in row


@pytest.mark.parametrize("option", [["--driver-version", "v25.12.0"], ["--driver-gates", "DynamicMIG=true"],
                                    ["--consumable-shares", "memory"], ["--kubernetes-version", "1.35"]])
def test_nvidia_driver_options_are_refused_for_hamis_driver(option, tmp_path):
    result = inventory("--nvml-recording", str(recording_with_sysfs(H100, tmp_path)), *option)
    assert result.exit_code == 2 and option[0] in result.output and "NVIDIA's driver" in result.output


def test_help_says_what_is_modelled_for_hamis_driver():
    text = " ".join(CliRunner().invoke(main, ["inventory", "--help"]).output.split())
    assert "--target-driver [hami|nvidia]" in text
    assert "hami-gpu" in text and "cores" in text and "allowMultipleAllocations" in text



def test_a_remote_nodes_hami_slice_is_owned_by_the_node(k8s_double, tmp_path, monkeypatch):
    """`--node NODE --target-driver hami`: the node's recording, read through its pod, previewed for HAMi's
    driver, owned by the Node as the vendored v0.34.1 controller owns it (kubeletplugin PublishResources)."""
    from tests import builders as b
    from tests import test_inventory_remote as remote

    monkeypatch.setattr(remote, "RECORDING", recording_with_sysfs(H100, tmp_path))
    k8s_double.seed(b.node("hami-h100-node"))
    uid = k8s_double.get("nodes", "hami-h100-node")["metadata"]["uid"]
    kubelet = remote.play_kubelet(k8s_double, [])
    result = inventory("--node", "hami-h100-node", "-o", "json", "--image", "example/kgpu:1",
                       "--kubeconfig", k8s_double.kubeconfig_path())
    kubelet.join(10)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "hami-h100-node", "uid": uid, "controller": True}]
    assert document["spec"] == published(H100)["spec"]
