"""When stdout cannot take the output, every command says so in kubectl's way, never with a traceback.

* The reader went away (`| head`): kubectl dies of SIGPIPE, which a shell reports as 141; every
  command exits 141 quietly (migrate already did: tests/test_migrate_streaming.py).  `explain -o json`
  exited 0 and `explain -o wide` 1, so a script could not tell a lost output from an answer.
* The output cannot be written (a full disk, /dev/full, an I/O error): one `error:` line on stderr
  and exit 74, sysexits.h's EX_IOERR ("an error occurred while doing I/O on some file"); it printed
  a Python traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SLICES = REPO / "tests" / "data" / "slices" / "nvidia-h100-node.yaml"


def kubectl_gpu(*args: str, **kwargs) -> list[str]:
    return [sys.executable, "-m", "kubectl_gpu.cli.main", *args]


@pytest.fixture(scope="module")
def big_explain(tmp_path_factory) -> list[str]:
    """explain over 8,000 devices: `-o wide` prints a row each, ~0.5 MB, far more than a pipe holds
    (64 KiB), so the command is still writing when its reader leaves."""
    folder = tmp_path_factory.mktemp("explain")
    slices = [d for d in yaml.safe_load_all(SLICES.read_text()) if d]
    many = []
    for index in range(1000):
        for item in slices:
            copy = json.loads(json.dumps(item))
            copy["metadata"]["name"] = f"{copy['metadata']['name']}-{index}"
            copy["spec"]["nodeName"] = f"node-{index}"
            copy["spec"]["pool"]["name"] = f"node-{index}"
            many.append(copy)
    (folder / "slices.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": many}))
    (folder / "claim.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}))
    return ["explain", "-f", str(folder / "claim.yaml"), "--slices", str(folder / "slices.json")]


def into_closed_pipe(args: list[str]) -> tuple[int, str]:
    process = subprocess.Popen(kubectl_gpu(*args), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()
    errors = process.stderr.read().decode()
    return process.wait(timeout=300), errors


def test_explain_into_a_closed_pipe_exits_141_quietly(big_explain) -> None:
    """The wide table is written row by row, so the reader's going is seen at once.  (The short
    table fits in the pipe and may be written whole before the reader leaves: exit 0 is right then.
    `-o json|yaml` is one write of the whole document: on Linux it fails with EPIPE the same way,
    but some sandboxed kernels complete a write into a pipe whose reader left.)"""
    code, errors = into_closed_pipe([*big_explain, "-o", "wide"])
    assert code == 141 and errors == "", (code, errors)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", [
    ["migrate", "examples/"],
    ["explain", "-f", str(REPO / "tests" / "data" / "manifests" / "claims" / "gpu-test5-multiple-gpus.yaml"),
     "--slices", str(SLICES), "-o", "json"],
    ["--help"],
], ids=["migrate", "explain", "help"])
def test_a_full_disk_is_one_error_line_and_exit_74(args) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(kubectl_gpu(*args), cwd=REPO, stdout=full, stderr=subprocess.PIPE, timeout=300)
    errors = done.stderr.decode()
    assert done.returncode == 74, errors
    assert "Traceback" not in errors
    assert errors.strip().splitlines()[-1] == "error: cannot write the output: No space left on device", errors
