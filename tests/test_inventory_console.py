"""`kubectl gpu inventory` as a real process: the installed `kubectl-gpu` console script when
there is one, and `python -m kubectl_gpu.cli.main` always."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CONSOLE_SCRIPT = shutil.which("kubectl-gpu")

ENTRY_POINTS = [
    pytest.param([sys.executable, "-m", "kubectl_gpu.cli.main"], id="python-m"),
    pytest.param(
        [CONSOLE_SCRIPT or "kubectl-gpu"],
        id="console-script",
        marks=pytest.mark.skipif(CONSOLE_SCRIPT is None, reason="kubectl-gpu is not installed"),
    ),
]

# Loaded by the child interpreter before anything else: serves a fake node through pynvml.
SITECUSTOMIZE = """
import os
from tests.test_inventory_fake_nvml import FakeNvml
FakeNvml.load(os.environ["KUBECTL_GPU_TEST_NVML_NODE"]).install_permanently()
"""


def run(entry: list[str], *args: str, fake_node: str | None = None, tmp_path: Path | None = None):
    env = {key: value for key, value in os.environ.items() if key != "NODE_NAME"}
    paths = [str(REPO)]
    if fake_node is not None:
        assert tmp_path is not None
        (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
        paths.insert(0, str(tmp_path))
        env["KUBECTL_GPU_TEST_NVML_NODE"] = fake_node
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    return subprocess.run(
        [*entry, "inventory", *args], capture_output=True, text=True, env=env, timeout=60, cwd=REPO
    )


@pytest.mark.skipif(Path("/proc/driver/nvidia").exists(), reason="an NVIDIA driver is installed here")
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_without_nvidia_driver_the_command_says_so_in_one_line(entry: list[str]) -> None:
    result = run(entry, "-o", "yaml")

    assert result.returncode == 6
    assert result.stderr.startswith("error: no NVIDIA driver here: libnvidia-ml.so.1 was not found")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_gpu_node_prints_its_resource_slice(entry: list[str], tmp_path: Path) -> None:
    result = run(
        entry, "-o", "json", "--node-name", "gpu-node-1", fake_node="a100-sxm4-40gb-mig", tmp_path=tmp_path
    )

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [device["name"] for device in document["spec"]["devices"]] == [
        "gpu-0-mig-1g5gb-19-0",
        "gpu-0-mig-3g20gb-9-4",
    ]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_piped_table_rows_are_not_wrapped(entry: list[str], tmp_path: Path) -> None:
    result = run(entry, "--node-name", "gpu-node-1", fake_node="h100-gpu-lost", tmp_path=tmp_path)

    assert result.returncode == 3
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()]
    assert ["gpu-1", "gpu", "NVIDIA", "H100", "80GB", "HBM3", "81559Mi", "-",
            "GPU-b5d7ebb4-d438-1294-b4f0-69dbc8c05805"] in rows
    assert result.stderr.startswith("error: GPU index 0 (GPU-4b7828e9-d6cf-1bb6-9018-02be0a309155)")
