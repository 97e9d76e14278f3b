"""What a command loads before it answers: `--help` and `migrate FILE` work offline, so they must
not pay for the Kubernetes client (the kubernetes package and aiohttp, ~0.5-1 s of imports) that
only a command reaching a cluster needs.  The speed itself is scripts/bench_migrate.py's (start-up
next to `python -c pass`); these tests pin what is imported, which is what makes it slow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.main import SUBCOMMANDS
from tests import builders as b

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "nvidia-gpu-deployment.yaml"
CLUSTER_CLIENT = ("kubernetes", "aiohttp")

# Runs the CLI as `kubectl-gpu` does and prints, as its last line, which of the client's packages
# were loaded by the time the process exits.
PROBE = ("import atexit, sys, runpy\n"
         "packages = sys.argv[1].split(',')\n"
         "atexit.register(lambda: print('LOADED', *sorted(p for p in packages if p in sys.modules)))\n"
         "sys.argv = ['kubectl-gpu', *sys.argv[2:]]\n"
         "runpy.run_module('kubectl_gpu.cli.main', run_name='__main__')\n")


def loaded_client_modules(*args: str, packages: tuple[str, ...] = CLUSTER_CLIENT) -> list[str]:
    env = {**os.environ, "NO_COLOR": "1", "KUBECONFIG": os.devnull}
    result = subprocess.run([sys.executable, "-c", PROBE, ",".join(packages), *args], capture_output=True,
                            text=True, env=env, timeout=120)
    last = result.stdout.splitlines()[-1] if result.stdout else ""
    assert last.startswith("LOADED"), result.stdout[-2000:] + result.stderr[-2000:]
    return last.split()[1:]


HELPS = [[name, "--help"] for name in sorted(SUBCOMMANDS)] + [
    ["--help"], ["migrate", "nodes", "--help"], ["migrate", "--from-cluster", "--help"]]


@pytest.mark.parametrize("args", HELPS, ids=" ".join)
def test_help_of_every_command_loads_no_cluster_client(args):
    assert loaded_client_modules(*args) == []


def test_migrating_a_file_offline_loads_no_cluster_client():
    assert loaded_client_modules("migrate", str(EXAMPLE)) == []
    assert loaded_client_modules("migrate", "--check", str(EXAMPLE)) == []


def test_migrating_without_a_cluster_profile_does_not_load_explain():
    """explain checks claims against a profile's devices.  (PyYAML is loaded: its libyaml reader reads
    the documents migrate rewrites as text, manifests/fast_read.py; scripts/bench_migrate.py checks
    the start-up it costs.)"""
    assert loaded_client_modules("migrate", str(EXAMPLE), packages=("kubectl_gpu.explain",)) == []


def test_migrating_without_a_cluster_profile_loads_no_profile_allocator_or_cel():
    """The profile (and its slice reader) and the allocator serve a cluster migrate was given; the CEL
    environment compiles device selectors, which a whole GPU's claim has none of (issue 29: one small
    file migrated within 0.3 s of CPU, scripts/bench_migrate.py)."""
    packages = ("kubectl_gpu.cluster.profile", "kubectl_gpu.dra.devices", "kubectl_gpu.allocator", "kubectl_gpu.cel")
    assert loaded_client_modules("migrate", str(EXAMPLE), packages=packages) == []


# What `describe` has no use for, although modules it loads once pulled each in (issue 29: describe
# of 1,000 nodes within 0.25x `kubectl get pods -A -o json`, scripts/bench_describe.py): the
# translation's data model (reading legacy requests needs only its notes), the runner of an exec
# credential plugin (and subprocess) for a user that has none, the temporary files of inline client
# certificates, concurrent.futures (which loads logging) for four list threads, and PyYAML for a
# kubeconfig that yaml-rs reads as PyYAML would (kubectl_gpu/input_text.py).
NOT_FOR_DESCRIBE = ("kubectl_gpu.core.model", "kubectl_gpu.k8s.exec_credential", "subprocess", "tempfile",
                    "concurrent.futures", "logging", "yaml")


def test_describing_a_cluster_loads_only_what_describe_uses(k8s_double):
    k8s_double.seed(*b.nvidia_device_classes(), b.dra_node("dra-a"), b.gpu_slice("dra-a", 2),
                    b.node("plugin-a", legacy={"nvidia.com/gpu": "4"}),
                    b.pod("legacy", node_name="plugin-a", limits={"nvidia.com/gpu": 1}))
    env = {**os.environ, "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-c", PROBE, ",".join(NOT_FOR_DESCRIBE), "describe", "--kubeconfig",
                             k8s_double.kubeconfig_path()], capture_output=True, text=True, env=env, timeout=120)
    *table, loaded = result.stdout.splitlines()
    assert result.returncode == 0 and any(line.startswith("plugin-a") for line in table), result.stdout + result.stderr
    assert loaded == "LOADED"


# The executable's own start: `--help` from the user's cache (kubectl_gpu/cli/launch.py).
LAUNCH_PROBE = ("import atexit, sys\n"
                "atexit.register(lambda: sys.stderr.write('CLICK %s\\n' % ('click' in sys.modules)))\n"
                "sys.argv = ['kubectl-gpu', *sys.argv[1:]]\n"
                "from kubectl_gpu.cli.launch import run\nrun()\n")


def launch(cache: Path, *args: str, columns: str = "100") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "COLUMNS": columns, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", LAUNCH_PROBE, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def loaded_click(result: subprocess.CompletedProcess[str]) -> bool:
    return result.stderr.splitlines()[-1] == "CLICK True"


@pytest.mark.parametrize("args", [["migrate", "--help"], ["migrate", "nodes", "-h"], ["--help"]], ids=" ".join)
def test_help_is_rendered_once_then_printed_from_the_cache_without_click(tmp_path, args):
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    direct = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", *args], capture_output=True, text=True,
                            env=env, timeout=120)
    first, second = launch(tmp_path, *args), launch(tmp_path, *args)
    assert first.returncode == second.returncode == direct.returncode == 0
    assert first.stdout == second.stdout == direct.stdout
    assert "Usage: kubectl gpu" in second.stdout
    assert loaded_click(first) and not loaded_click(second)


def test_a_kept_help_is_not_used_for_another_terminal_width_or_when_damaged(tmp_path):
    narrow = launch(tmp_path, "describe", "--help", columns="60")
    wide = launch(tmp_path, "describe", "--help", columns="100")
    assert loaded_click(wide) and narrow.stdout != wide.stdout
    for kept in (tmp_path / "kubectl-gpu").glob("help-*"):
        kept.write_text("not a stamp\nstale help\n")
    again = launch(tmp_path, "describe", "--help", columns="100")
    assert loaded_click(again) and again.stdout == wide.stdout


def test_what_is_not_a_plain_help_request_runs_the_command(tmp_path):
    bad = launch(tmp_path, "nosuch", "--help")
    assert bad.returncode == exits.USAGE and "unknown command \"nosuch\"" in bad.stderr
    assert not list((tmp_path / "kubectl-gpu").glob("help-*"))  # a usage error is not kept
    migrated = launch(tmp_path, "migrate", str(EXAMPLE))
    assert migrated.returncode == 0 and "kind: ResourceClaimTemplate" in migrated.stdout
    with_file = launch(tmp_path, "migrate", str(EXAMPLE), "--help")
    assert with_file.returncode == 0 and "Usage: kubectl gpu migrate" in with_file.stdout
    assert not list((tmp_path / "kubectl-gpu").glob("help-*"))  # a file name is no cache key
