"""The allocation picture of `kubectl gpu describe`: per node a bar of GPUs in use, MIG devices
drawn inside their GPU, device-plugin nodes showing what their pods hold, double-counted nodes
marked; and `describe --tree`: node -> GPU -> pod."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kubectl_gpu.cli.main import main
from tests import builders as b


@pytest.fixture
def fleet(k8s_double):
    migs = [b.mig_device("a100", 1, slot) for slot in range(7)]
    k8s_double.seed(
        *b.nvidia_device_classes(),
        b.dra_node("a100"), b.gpu_slice("a100", devices=[b.gpu_device("a100", 0), *migs]),
        b.claim("c", allocated=[("gpu", migs[0]["name"])], node_name="a100", reserved_for=["p"]),
        b.pod("p", node_name="a100", claims=[{"name": "gpu", "resourceClaimName": "c"}]),
        b.dra_node("dra-bad", legacy={"nvidia.com/gpu": "2"}), b.gpu_slice("dra-bad", 2),
        b.node("legacy-1", legacy={"nvidia.com/gpu": "4"}),
        b.pod("old-job", node_name="legacy-1", limits={"nvidia.com/gpu": 2}),
        b.pod("half", node_name="legacy-1", limits={"nvidia.com/gpu": "500m"}),
    )
    return k8s_double


def describe(double, *args: str) -> str:
    result = CliRunner().invoke(main, ["describe", *args, "--kubeconfig", double.kubeconfig_path()],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_each_node_has_a_bar_of_gpus_in_use(fleet):
    """DRA USE pictures the DRA devices, LEGACY USE the device plugin's GPUs: never one column."""
    rows = {line.split()[0]: line.split() for line in describe(fleet).splitlines() if line.strip()}
    assert rows["NODE"][4:8] == ["DRA", "USE", "LEGACY", "USE"]
    # 2 GPUs: one whole and free, one split into 7 MIG devices of which 1 is in use.
    assert rows["a100"][3:6] == ["░[■□□□□□□]", "1/2", "-"]
    # Both GPUs are offered by DRA and the device plugin: each side pictured, both marked.
    assert rows["dra-bad"][3:9] == ["░░", "0/2", "!", "░░", "0/2", "!"]
    # A device-plugin node shows what its pods hold (2 whole GPUs and half of one), not 0/0.
    assert rows["legacy-1"][3:6] == ["-", "██▓░", "3/4"]


def test_tree_shows_node_gpu_pod_with_mig_devices_under_their_gpu(fleet):
    lines = describe(fleet, "--tree").splitlines()
    start = lines.index(next(line for line in lines if line.startswith("a100 ")))
    block = lines[start:lines.index("", start)]
    assert block[1].startswith("├── gpu-0 ") and block[1].endswith("free")
    assert block[2].startswith("└── GPU GPU-") and block[2].endswith("MIG: 7 device(s)")
    assert block[3].startswith("    ├── gpu-1-mig-1g-10gb-0 ") and block[3].endswith("allocated")
    assert block[4] == "    │   └── pod default/p  (claim default/c, request gpu)"
    assert len(block) == 1 + 2 + 7 + 1
    legacy = describe(fleet, "node", "legacy-1", "--tree").splitlines()
    assert legacy[0].startswith("legacy-1  device plugin  ██▓░ 3/4")
    assert "└── pod default/old-job  nvidia.com/gpu=2 (device plugin)" in legacy
