"""`kubectl gpu inventory` as an operator runs it on a GPU node (NVML faked with real device
values from tests/data/nvml)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner, Result

from kubectl_gpu.cli.inventory import command
from kubectl_gpu.cli.main import main
from tests.test_inventory_fake_nvml import FakeNvml

NODE = "gpu-node-1"
H100_UUID = "GPU-4b7828e9-d6cf-1bb6-9018-02be0a309155"
SECOND_H100_UUID = "GPU-b5d7ebb4-d438-1294-b4f0-69dbc8c05805"


def run(monkeypatch: pytest.MonkeyPatch, node: str, *args: str) -> tuple[Result, FakeNvml]:
    fake = FakeNvml.load(node).install(monkeypatch)
    result = CliRunner().invoke(main, ["inventory", "--node-name", NODE, *args])
    return result, fake


def table_line(output: str, first_cell: str) -> list[str]:
    for line in output.splitlines():
        cells = line.split()
        if cells and " ".join(cells).startswith(first_cell):
            return cells
    raise AssertionError(f"no table row for {first_cell!r} in:\n{output}")


def test_the_table_shows_an_h100_as_the_driver_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    result, fake = run(monkeypatch, "h100-80gb-hbm3")

    assert result.exit_code == 0, result.output
    assert table_line(result.stdout, "NAME") == ["NAME", "TYPE", "PRODUCT", "MEMORY", "PROFILE", "UUID"]
    assert table_line(result.stdout, "gpu-0") == [
        "gpu-0", "gpu", "NVIDIA", "H100", "80GB", "HBM3", "81559Mi", "-", H100_UUID,
    ]
    assert "driverVersion 580.159.4 (NVML: 580.159.04)" in result.stdout
    assert "cudaDriverVersion 13.0.0" in result.stdout
    assert result.stderr == ""
    assert fake.inits == 1 and fake.balanced


def test_mig_devices_replace_their_gpu_in_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = run(monkeypatch, "a100-sxm4-40gb-mig")

    assert result.exit_code == 0, result.output
    assert table_line(result.stdout, "gpu-0-mig-1g5gb-19-0") == [
        "gpu-0-mig-1g5gb-19-0", "mig", "NVIDIA", "A100-SXM4-40GB", "4864Mi", "1g.5gb",
        "MIG-632cb79b-c5c0-5f38-889a-0390f8f7eed3",
    ]
    assert table_line(result.stdout, "gpu-0-mig-3g20gb-9-4")[4:6] == ["19968Mi", "3g.20gb"]
    assert not any(line.split()[:1] == ["gpu-0"] for line in result.stdout.splitlines())


def test_yaml_is_the_resource_slice_the_driver_would_publish(monkeypatch: pytest.MonkeyPatch) -> None:
    result, fake = run(monkeypatch, "h100-80gb-hbm3", "-o", "yaml")

    assert result.exit_code == 0, result.output
    document = yaml.safe_load(result.stdout)
    assert document["apiVersion"] == "resource.k8s.io/v1"
    assert document["kind"] == "ResourceSlice"
    assert document["spec"]["driver"] == "gpu.nvidia.com"
    assert document["spec"]["nodeName"] == NODE
    assert document["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    [device] = document["spec"]["devices"]
    assert device == {
        "name": "gpu-0",
        "attributes": {
            "architecture": {"string": "Hopper"},
            "brand": {"string": "Nvidia"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "driverVersion": {"version": "580.159.4"},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "resource.kubernetes.io/pciBusID": {"string": "0000:18:00.0"},
            "type": {"string": "gpu"},
            "uuid": {"string": H100_UUID},
        },
        "capacity": {"memory": {"value": "81559Mi"}},
    }
    assert fake.balanced


def test_json_carries_the_mig_capacities_the_driver_publishes(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = run(monkeypatch, "a100-sxm4-80gb-mig", "-o", "json")

    assert result.exit_code == 0, result.output
    devices = {device["name"]: device for device in json.loads(result.stdout)["spec"]["devices"]}
    assert sorted(devices) == ["gpu-0-mig-1g10gb-19-6", "gpu-0-mig-3g40gb-9-0"]
    small = devices["gpu-0-mig-1g10gb-19-6"]
    assert small["attributes"]["profile"] == {"string": "1g.10gb"}
    assert small["attributes"]["parentUUID"] == {"string": "GPU-7d605647-f085-1f55-96de-0ad343e5c5a4"}
    assert small["attributes"]["type"] == {"string": "mig"}
    assert small["capacity"] == {
        "copyEngines": {"value": "1"},
        "decoders": {"value": "0"},
        "encoders": {"value": "0"},
        "jpegEngines": {"value": "0"},
        "memory": {"value": "9728Mi"},
        "memorySlice6": {"value": "1"},
        "multiprocessors": {"value": "14"},
        "ofaEngines": {"value": "0"},
    }
    large = devices["gpu-0-mig-3g40gb-9-0"]
    assert large["capacity"]["multiprocessors"] == {"value": "42"}
    assert large["capacity"]["decoders"] == {"value": "2"}
    assert large["capacity"]["memory"] == {"value": "40192Mi"}
    assert [name for name in large["capacity"] if name.startswith("memorySlice")] == [
        "memorySlice0", "memorySlice1", "memorySlice2", "memorySlice3",
    ]


def test_index_and_minor_are_never_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    for node in ("h100-80gb-hbm3", "a100-sxm4-40gb-mig"):
        result, _ = run(monkeypatch, node, "-o", "json")
        devices = json.loads(result.stdout)["spec"]["devices"]
        assert devices and all("uuid" in device["attributes"] for device in devices)
        for device in devices:
            assert not {"index", "minor"} & set(device["attributes"])


def test_an_nvml_error_on_one_gpu_does_not_hide_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    result, fake = run(monkeypatch, "h100-gpu-lost")

    assert result.exit_code == 3
    assert result.stderr == (
        f"error: GPU index 0 ({H100_UUID}): nvmlDeviceGetMemoryInfo failed: GPU is lost\n"
    )
    assert table_line(result.stdout, "gpu-1")[-1] == SECOND_H100_UUID
    assert table_line(result.stdout, "GPU index 0")[3:] == [
        "error", "nvmlDeviceGetMemoryInfo", "failed:", "GPU", "is", "lost", "-", "-", H100_UUID,
    ]
    assert fake.balanced


def test_the_partial_document_names_the_unreadable_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = run(monkeypatch, "h100-gpu-lost", "-o", "yaml")

    assert result.exit_code == 3
    document = yaml.safe_load(result.stdout)
    assert [device["name"] for device in document["spec"]["devices"]] == ["gpu-1"]
    unreadable = json.loads(document["metadata"]["annotations"]["kubectl-gpu.io/unreadable-devices"])
    assert unreadable == [
        {"device": "GPU index 0", "uuid": H100_UUID, "error": "nvmlDeviceGetMemoryInfo failed: GPU is lost"}
    ]


def test_an_nvml_error_on_one_mig_device_keeps_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml.load("a100-sxm4-40gb-mig")
    fake.node["gpus"][0]["migDevices"][0]["failingCalls"] = {"nvmlDeviceGetGpuInstanceId": "Unknown"}
    fake.install(monkeypatch)

    result = CliRunner().invoke(command, ["--node-name", NODE, "-o", "json"])

    assert result.exit_code == 3
    assert result.stderr == (
        "error: GPU index 0 MIG slot 0 (MIG-632cb79b-c5c0-5f38-889a-0390f8f7eed3): "
        "nvmlDeviceGetGpuInstanceId failed: Unknown Error\n"
    )
    names = [device["name"] for device in json.loads(result.stdout)["spec"]["devices"]]
    assert names == ["gpu-0-mig-3g20gb-9-4"]
    assert fake.balanced


def test_a_mig_device_the_driver_cannot_handle_is_reported_not_invented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # nvidia-smi mig -cgi 9 -cci 0: a 1-slice compute instance inside a 3g.20gb GPU instance.
    fake = FakeNvml.load("a100-sxm4-40gb-mig")
    fake.node["gpus"][0]["migDevices"][1]["computeInstanceProfileId"] = 0
    fake.install(monkeypatch)

    result = CliRunner().invoke(command, ["--node-name", NODE])

    assert result.exit_code == 3
    assert result.stderr.startswith(
        "error: GPU index 0 MIG slot 1 (MIG-d26a9f99-9288-507b-96a4-c1a785ffc541): "
        "its compute instance uses 1 of 3 slices of its GPU instance"
    )
    assert "gpu-0-mig-1g5gb-19-0" in result.stdout
    assert "3g.20gb" not in result.stdout


def test_mig_mode_without_mig_devices_warns_that_nothing_is_published(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeNvml.load("a100-sxm4-40gb-mig")
    fake.node["gpus"][0]["migDevices"] = []
    fake.install(monkeypatch)

    result = CliRunner().invoke(command, ["--node-name", NODE, "-o", "json"])

    assert result.exit_code == 0
    assert result.stderr == (
        "warning: gpu-0 (GPU-3f2b2851-216e-1917-bc37-0784812feea2) has MIG mode enabled but no "
        "MIG devices: the driver publishes nothing for it until MIG devices are created\n"
    )
    assert json.loads(result.stdout)["spec"]["devices"] == []


@pytest.mark.parametrize(
    ("node", "exit_code", "message"),
    [
        (
            "no-library",
            6,
            "error: no NVIDIA driver here: libnvidia-ml.so.1 was not found (run on a GPU node, "
            "or in a pod with the NVIDIA container runtime)\n",
        ),
        (
            "driver-not-loaded",
            7,
            "error: no usable GPU: the NVIDIA kernel driver is not loaded (NVML: Driver Not Loaded)\n",
        ),
        (
            "no-permission",
            7,
            "error: no usable GPU: NVML was denied access to the GPUs (run as root, or as a user "
            "that can open /dev/nvidiactl and /dev/nvidia*)\n",
        ),
        ("no-gpu", 7, "error: no usable GPU: the NVIDIA driver is loaded but NVML lists 0 GPUs\n"),
    ],
)
@pytest.mark.parametrize("output", ["table", "yaml", "json"])
def test_no_nvidia_library_or_no_gpu_is_one_line_and_an_exit_code(
    monkeypatch: pytest.MonkeyPatch, node: str, exit_code: int, message: str, output: str
) -> None:
    result, fake = run(monkeypatch, node, "-o", output)

    assert result.exit_code == exit_code
    assert result.stderr == message
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert fake.balanced  # shut down exactly when init succeeded (no-gpu), never otherwise


def test_nvml_is_shut_down_even_when_a_system_query_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml.load("h100-80gb-hbm3").install(monkeypatch)

    def broken() -> str:
        import pynvml

        raise pynvml.NVMLError_Unknown()

    monkeypatch.setattr("pynvml.nvmlSystemGetDriverVersion", broken)
    result = CliRunner().invoke(command, ["--node-name", NODE])

    assert result.exit_code == 8
    assert result.stderr == "error: NVML failed before listing GPUs: Unknown Error\n"
    assert fake.inits == 1 and fake.balanced


def test_the_node_name_defaults_to_node_name_env_then_hostname(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    FakeNvml.load("h100-80gb-hbm3").install(monkeypatch)
    monkeypatch.setenv("NODE_NAME", "ip-10-0-1-23.ec2.internal")
    from_env = CliRunner().invoke(command, ["-o", "json"])
    assert json.loads(from_env.stdout)["spec"]["nodeName"] == "ip-10-0-1-23.ec2.internal"

    monkeypatch.delenv("NODE_NAME")
    monkeypatch.setattr("socket.gethostname", lambda: "GPU-Worker-7")
    from_host = CliRunner().invoke(command, ["-o", "json"])
    assert json.loads(from_host.stdout)["spec"]["pool"]["name"] == "gpu-worker-7"


def test_a_node_name_kubernetes_would_reject_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml.load("h100-80gb-hbm3").install(monkeypatch)

    result = CliRunner().invoke(command, ["--node-name", "GPU_node", "-o", "yaml"])

    assert result.exit_code == 2
    assert "'GPU_node' is not a Kubernetes node name" in result.stderr
    assert fake.inits == 0


def test_help_documents_every_exit_code() -> None:
    result = CliRunner().invoke(main, ["inventory", "--help"])

    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for line in (
        "0 every GPU was read",
        "6 no NVIDIA driver library (libnvidia-ml.so.1)",
        "7 no usable GPU",
        "8 NVML failed",
        "3 some devices could not be read",
    ):
        assert line in text


def test_inventory_reads_a_recorded_node_for_support_bundles_and_demos(tmp_path) -> None:
    """docs/inventory.md: --nvml-recording FILE (or KUBECTL_GPU_NVML_RECORDING) serves a recorded
    node through pynvml instead of this machine's driver."""
    from pathlib import Path

    import pynvml

    recording = Path(__file__).parent / "data" / "nvml" / "a100-sxm4-40gb-mig.json"
    saved = {name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith("nvml")}
    try:
        for args, env in ((["--nvml-recording", str(recording)], None), ([], {"KUBECTL_GPU_NVML_RECORDING": str(recording)})):
            result = CliRunner().invoke(main, ["inventory", "--node-name", "demo", "-o", "json", *args], env=env)
            assert result.exit_code == 0, result.output
            devices = json.loads(result.stdout)["spec"]["devices"]
            assert devices and all(d["attributes"]["type"]["string"] == "mig" for d in devices)
    finally:
        for name, value in saved.items():
            setattr(pynvml, name, value)
    missing = CliRunner().invoke(main, ["inventory", "--nvml-recording", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "cannot read the NVML recording" in missing.output


def test_a_grace_hopper_gpu_publishes_its_addressing_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/nvlib.go and go-nvlib
    GetAddressingModeAsString: NVML_DEVICE_ADDRESSING_MODE_ATS/HMM/NONE -> "ATS"/"HMM"/"None" as the
    string attribute addressingMode (deviceinfo.go; MIG devices inherit it, mig.go).  The preview
    equals the fixture tests/data/driver/gh200.yaml but for pcieRoot, which comes from sysfs."""
    from pathlib import Path

    result, _ = run(monkeypatch, "gh200-480gb-ats", "-o", "yaml")
    assert result.exit_code == 0, result.output
    [device] = yaml.safe_load(result.stdout)["spec"]["devices"]
    fixture = Path(__file__).parent / "data" / "driver" / "gh200.yaml"
    [published] = yaml.safe_load(fixture.read_text())["spec"]["devices"]
    published["attributes"].pop("resource.kubernetes.io/pcieRoot")
    assert device == published


@pytest.mark.parametrize("failure", ["NotSupported", "FunctionNotFound"])
def test_no_addressing_mode_attribute_when_nvml_has_none(monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    """go-nvlib: a library without nvmlDeviceGetAddressingMode, or NOT_SUPPORTED (no coherent
    memory), gives "" and the driver publishes no addressingMode at all."""
    fake = FakeNvml.load("gh200-480gb-ats")
    fake.node["gpus"][0]["failingCalls"] = {"nvmlDeviceGetAddressingMode": failure}
    fake.install(monkeypatch)
    result = CliRunner().invoke(main, ["inventory", "--node-name", NODE, "-o", "yaml"])
    assert result.exit_code == 0, result.output
    [device] = yaml.safe_load(result.stdout)["spec"]["devices"]
    assert "addressingMode" not in device["attributes"]


def test_an_addressing_mode_the_driver_cannot_name_fails_that_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """go-nvlib answers an unknown mode with an error, and the driver does not enumerate the GPU."""
    fake = FakeNvml.load("gh200-480gb-ats")
    fake.node["gpus"][0]["addressingMode"] = 7
    fake.install(monkeypatch)
    result = CliRunner().invoke(main, ["inventory", "--node-name", NODE, "-o", "json"])
    assert "addressing mode" in result.output and "GPU-5eb470f7" in result.output


@pytest.fixture
def restore_pynvml():
    """--nvml-recording replaces pynvml's functions for the rest of the process: put them back."""
    import pynvml

    saved = {name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith("nvml")}
    yield
    for name, value in saved.items():
        setattr(pynvml, name, value)


def _recording(**changes) -> dict:
    """The A100 MIG recording with ``changes`` (``gpus__0__uuid=...``; KeyError as a value removes the key)."""
    from pathlib import Path

    from tests.json_places import REMOVED, with_value_at

    node = json.loads((Path(__file__).parent / "data" / "nvml" / "a100-sxm4-40gb-mig.json").read_text())
    for path, value in changes.items():
        node = with_value_at(node, path, REMOVED if value is KeyError else value, separator="__")
    return node


@pytest.mark.parametrize("node, says", [
    (_recording(gpus={"name": "x"}), "gpus: {'name': 'x'} is not of type 'array'"),
    (_recording(gpus__0="GPU-0"), "gpus[0]: 'GPU-0' is not of type 'object'"),
    (_recording(gpus__0__memoryTotalBytes="40GiB"), "gpus[0].memoryTotalBytes: '40GiB' is not of type 'integer'"),
    (_recording(gpus__0__migMode=1), "gpus[0].migMode: 1 is not of type 'array'"),
    (_recording(gpus__0__cudaComputeCapability=[8]), "gpus[0].cudaComputeCapability"),
    (_recording(gpus__0__gpuInstanceProfiles__0__sliceCount=[1]), "gpus[0].gpuInstanceProfiles[0].sliceCount"),
    (_recording(gpus__0__migDevices__0__placement="0-1"), "gpus[0].migDevices[0].placement"),
    (_recording(gpus__0__failingCalls={"nvmlDeviceGetUUID": "NoSuchError"}),
     "gpus[0].failingCalls.nvmlDeviceGetUUID: NoSuchError is not an NVML error name"),
    (_recording(nvmlInit="Broken"), "nvmlInit: Broken is not an NVML error name"),
    (_recording(cudaDriverVersion="12.4"), "cudaDriverVersion: '12.4' is not of type 'integer'"),
    (_recording(gpus__0__uuid=KeyError), "gpus[0] has no uuid, which nvmlDeviceGetUUID returns"),
])
def test_a_malformed_recording_names_the_field_to_fix_and_never_shows_a_traceback(
        tmp_path, restore_pynvml, node, says) -> None:
    """docs/inventory.md gives the recording's format; a file that breaks it (hand-edited, cut
    short) is a usage error naming the key, as a recording that is not JSON already is."""
    path = tmp_path / "node.json"
    path.write_text(json.dumps(node))
    result = CliRunner().invoke(main, ["inventory", "--node-name", "demo", "--nvml-recording", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.output.split()), result.output
