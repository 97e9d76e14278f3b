"""`kubectl gpu ...` through kubectl's real plugin discovery: an executable `kubectl-gpu` on PATH."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests import builders as b

REPO = Path(__file__).resolve().parent.parent
KUBECTL = shutil.which("kubectl")

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@pytest.fixture
def plugin_path(tmp_path: Path) -> dict[str, str]:
    """PATH with a directory holding `kubectl-gpu`, a wrapper running this checkout's CLI."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, call in (("kubectl-gpu", "-m kubectl_gpu.cli.main"),
                       ("kubectl_complete-gpu", "-c 'from kubectl_gpu.cli.completion import kubectl_complete; "
                                                "kubectl_complete()'")):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}${{PYTHONPATH:+:$PYTHONPATH}}" '
                           f'exec "{sys.executable}" {call} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = dict(os.environ)
    # Exactly one kubectl-gpu on PATH: kubectl refuses (exit 1) when one plugin shadows another,
    # e.g. the console script that scripts/bootstrap installs into .venv/bin.
    others = [d for d in env.get("PATH", "").split(os.pathsep)
              if d and not (Path(d) / "kubectl-gpu").exists() and not (Path(d) / "kubectl_complete-gpu").exists()]
    env["PATH"] = os.pathsep.join([str(bin_dir), *others])
    env.pop("KUBECONFIG", None)
    env["HOME"] = str(tmp_path)  # no stray ~/.kube/config
    return env


def kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=120)


def test_kubectl_plugin_list_finds_kubectl_gpu(plugin_path):
    result = kubectl(plugin_path, "plugin", "list")
    assert result.returncode == 0, result.stderr
    assert any(line.endswith("/kubectl-gpu") for line in result.stdout.splitlines()), result.stdout


def test_kubectl_gpu_describe_and_doctor_through_kubectl(plugin_path, k8s_double):
    k8s_double.seed(*b.nvidia_device_classes(), b.dra_node("dra-a", legacy={"nvidia.com/gpu": "8"}),
                    b.gpu_slice("dra-a", 2),
                    b.claim("c", allocated=[("gpu", "gpu-1")], node_name="dra-a", reserved_for=["p"]))
    kubeconfig = k8s_double.kubeconfig_path()

    summary = kubectl(plugin_path, "gpu", "describe", "--kubeconfig", kubeconfig, "-o", "json")
    assert summary.returncode == 0, summary.stderr
    data = json.loads(summary.stdout)
    assert data["totals"]["gpus"] == 2 and data["totals"]["allocated"] == 1
    assert data["findings"][0]["code"] == "double-counting"

    node = kubectl(plugin_path, "gpu", "describe", "node", "dra-a", "--kubeconfig", kubeconfig, "-o", "wide")
    assert node.returncode == 0, node.stderr
    assert "default/c" in node.stdout and b.gpu_uuid("dra-a", 1) in node.stdout

    doctor = kubectl(plugin_path, "gpu", "doctor", "--kubeconfig", kubeconfig)
    assert doctor.returncode == 1  # kubectl passes the plugin's exit status through
    assert "double-counting" in doctor.stdout or "handed out twice" in doctor.stdout


def test_kubeconfig_from_the_environment_like_kubectl(plugin_path, k8s_double):
    k8s_double.seed(b.dra_node("dra-a"), b.gpu_slice("dra-a", 1))
    env = dict(plugin_path, KUBECONFIG=k8s_double.kubeconfig_path())
    result = kubectl(env, "gpu", "describe", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["totals"]["gpus"] == 1


def test_kubectl_completes_the_plugin_through_kubectl_complete_gpu(plugin_path, k8s_double):
    """kubectl 1.26+ (kubernetes/kubernetes#105867) completes `kubectl gpu ...` by running the
    kubectl_complete-gpu executable from PATH and reading Cobra's __complete answer."""
    k8s_double.seed(b.dra_node("dra-a"), b.dra_node("dra-b"), b.gpu_slice("dra-a", 1))
    env = dict(plugin_path, KUBECONFIG=k8s_double.kubeconfig_path())

    def completions(*words: str) -> list[str]:
        result = kubectl(env, "__complete", "gpu", *words)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        return [line.split("\t")[0] for line in lines if not line.startswith(":")]

    assert {"describe", "doctor", "explain", "migrate", "completion"} <= set(completions(""))
    assert {"node", "pod", "claim"} <= set(completions("describe", ""))
    assert "--request-timeout" in completions("describe", "--req")
    assert completions("describe", "-o", "") == ["table", "wide", "json", "yaml", "name"]
    assert completions("describe", "node", "dra-") == ["dra-a", "dra-b"]


def test_completion_scripts_complete_the_kubectl_gpu_command(plugin_path):
    """`source <(kubectl-gpu completion bash)` then <TAB> after `kubectl-gpu des`."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = ('source <(kubectl-gpu completion bash); COMP_WORDS=(kubectl-gpu des); COMP_CWORD=1; '
              '_kubectl_gpu_completion kubectl-gpu; printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run([bash, "-c", script], env=plugin_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "describe" in result.stdout.split()
    for shell, marker in (("zsh", "#compdef kubectl-gpu"), ("fish", "complete --no-files --command kubectl-gpu")):
        source = subprocess.run(["kubectl-gpu", "completion", shell], env=plugin_path, capture_output=True,
                                text=True, timeout=60)
        assert source.returncode == 0 and marker in source.stdout, source.stderr


def test_migrate_nodes_completes_the_nodes_a_wave_can_switch(plugin_path, k8s_double):
    """`kubectl gpu migrate nodes <TAB>`: the GPU nodes still on the device plugin; not a node
    without GPUs nor one already labelled as a DRA node (migrate nodes refuses both)."""
    k8s_double.seed(b.node("legacy-a", legacy={"nvidia.com/gpu": "4"}), b.node("legacy-b", legacy={"nvidia.com/gpu": "8"}),
                    b.dra_node("dra-a"), b.node("cpu-1"))
    env = dict(plugin_path, KUBECONFIG=k8s_double.kubeconfig_path())
    result = kubectl(env, "__complete", "gpu", "migrate", "nodes", "")
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if not line.startswith(":")] == ["legacy-a", "legacy-b"]
    result = kubectl(env, "__complete", "gpu", "migrate", "nodes", "legacy-a", "legacy-")
    assert [line for line in result.stdout.splitlines() if not line.startswith(":")] == ["legacy-b"]
