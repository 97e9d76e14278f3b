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

from kubectl_gpu.cli.main import SUBCOMMANDS

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "nvidia-gpu-deployment.yaml"
CLUSTER_CLIENT = ("kubernetes", "aiohttp")

# Runs the CLI as `kubectl-gpu` does and prints, as its last line, which of the client's packages
# were loaded by the time the process exits.
PROBE = ("import atexit, sys, runpy\n"
         "atexit.register(lambda: print('LOADED', *sorted(m for m in sys.modules "
         f"if m.split('.')[0] in {CLUSTER_CLIENT!r})))\n"
         "sys.argv = ['kubectl-gpu', *sys.argv[1:]]\n"
         "runpy.run_module('kubectl_gpu.cli.main', run_name='__main__')\n")


def loaded_client_modules(*args: str, cwd: Path | None = None) -> list[str]:
    env = {**os.environ, "NO_COLOR": "1", "KUBECONFIG": os.devnull}
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env,
                            cwd=cwd, timeout=120)
    last = result.stdout.splitlines()[-1] if result.stdout else ""
    assert last.startswith("LOADED"), result.stdout[-2000:] + result.stderr[-2000:]
    return last.split()[1:]


HELPS = [[name, "--help"] for name in sorted(SUBCOMMANDS)] + [
    ["--help"], ["migrate", "nodes", "--help"], ["migrate", "--from-cluster", "--help"]]


@pytest.mark.parametrize("args", HELPS, ids=" ".join)
def test_help_of_every_command_loads_no_cluster_client(args):
    assert loaded_client_modules(*args) == []


def test_migrating_a_file_offline_loads_no_cluster_client(tmp_path):
    assert loaded_client_modules("migrate", str(EXAMPLE)) == []
    assert loaded_client_modules("migrate", "--check", str(EXAMPLE)) == []
