"""`kubectl gpu migrate` streams (issues 12 and 14): each document is read, planned, rewritten,
written and dropped before the next is read, so `kubectl gpu migrate big/ | head -1` prints at
once and memory stays flat (scripts/bench_migrate.py measures it); a closed stdout ends the run
quietly, as it ends kubectl; progress shows on stderr only when stderr is a terminal."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubectl_gpu.cli import migrate as migrate_cli
from kubectl_gpu.cli.main import main
from kubectl_gpu.manifests import Source, loader, migrate_files, migrate_text

REPO = Path(__file__).resolve().parents[1]


def gpu_pod(index: int) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{index}\n  namespace: team\nspec:\n  containers:\n"
            f"  - name: c\n    image: cuda:{index}\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n")


def stream(documents: int) -> str:
    return "---\n".join(gpu_pod(i) for i in range(documents))


def counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many documents migrate has parsed so far (one entry, updated in place), by either reader
    (libyaml's for a document rewritten as text, ruamel's for the others)."""
    parsed = [0]
    read: set[int] = set()

    def counting(real):  # type: ignore[no-untyped-def]
        def parse(codec, chunk):  # type: ignore[no-untyped-def]
            if id(chunk) not in read:
                read.add(id(chunk))
                parsed[0] += 1
            return real(codec, chunk)
        return parse

    monkeypatch.setattr(loader, "parse_chunk", counting(loader.parse_chunk))
    monkeypatch.setattr(loader, "parse_for_text_edit", counting(loader.parse_for_text_edit))
    return parsed


def test_each_document_is_written_before_the_next_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = counting_parses(monkeypatch)
    [migration] = migrate_files([Source("big.yaml", stream(50))])
    seen: list[int] = []
    for _piece in migration.pieces():
        seen.append(parsed[0])
    # The first piece holds the claim template and the first pod, written after one parse.
    assert seen[0] == 1 and seen == list(range(1, 51))
    assert migration.result.rendered.text == migrate_text(stream(50)).rendered.text


def test_the_cli_writes_the_first_document_before_reading_the_second(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text(stream(20))
    parsed = counting_parses(monkeypatch)
    writes: list[tuple[int, str]] = []
    real_write = migrate_cli._stdout_write
    monkeypatch.setattr(migrate_cli, "_stdout_write", lambda text: (writes.append((parsed[0], text)),
                                                                    real_write(text)))
    result = CliRunner().invoke(main, ["migrate", str(tmp_path / "big.yaml")])
    assert result.exit_code == 0, result.output
    assert writes[0][0] == 1 and "name: p0" in writes[0][1] and "name: p1\n" not in writes[0][1]
    assert "".join(text for _, text in writes) == migrate_text(stream(20)).rendered.text


def test_a_cross_document_fact_is_found_before_streaming_starts() -> None:
    """A ResourceClaimTemplate the input already holds, after the pod that uses it, is not
    emitted a second time (it is found by a pre-scan before the first document is written)."""
    first = migrate_text(gpu_pod(0)).rendered.text
    template = first.split("---\n")[0]
    result = migrate_text(gpu_pod(1) + "---\n" + template)
    assert result.rendered.text.count("kind: ResourceClaimTemplate") == 1
    assert not result.plan.emissions


def _migrate_into_head(inputs: Path) -> tuple[bytes, bytes, int]:
    """`kubectl gpu migrate INPUTS | head -1`, as a shell runs it."""
    migrate = subprocess.Popen([sys.executable, "-m", "kubectl_gpu.cli.main", "migrate", str(inputs)],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.Popen(["head", "-1"], stdin=migrate.stdout, stdout=subprocess.PIPE)
    assert migrate.stdout is not None and migrate.stderr is not None
    migrate.stdout.close()  # head holds the only reading end, as in a shell pipeline
    first, _ = head.communicate(timeout=300)
    errors = migrate.stderr.read()
    return first, errors, migrate.wait(timeout=300)


def test_head_ends_migrate_quietly_with_sigpipes_exit_code(tmp_path: Path) -> None:
    """Unix tools die of SIGPIPE when their reader goes (so does kubectl: Go's runtime exits on
    EPIPE on stdout); a shell reports that as 128 + 13.  No traceback, no "BrokenPipeError"."""
    big = tmp_path / "big"
    big.mkdir()
    for index in range(40):  # far more than a pipe buffer (64 KiB) of output
        (big / f"{index:03}.yaml").write_text(stream(10))
    first, errors, code = _migrate_into_head(big)
    assert first == b"apiVersion: resource.k8s.io/v1\n"
    assert errors == b"", errors.decode()
    assert code == 128 + signal.SIGPIPE


def test_progress_goes_to_a_terminal_on_stderr_and_is_erased(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(stream(3))
    (tmp_path / "b.yaml").write_text(stream(3))
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", "migrate", "--check", str(tmp_path)],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=follower, timeout=300,
                              env={**os.environ, "TERM": "xterm", "NO_COLOR": "1"})
        os.close(follower)
        follower = -1
        screen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    assert done.returncode == 1  # --check: something would change
    text = screen.decode()
    assert "migrating: file 1/2" in text and "migrating: file 2/2" in text
    last = text[text.rindex("migrating:"):]
    assert last.index("\r\x1b[K") < last.index("\n")  # erased before the report is printed


def test_no_progress_when_stderr_is_piped(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(stream(3))
    done = subprocess.run([sys.executable, "-m", "kubectl_gpu.cli.main", "migrate", "--check", str(tmp_path)],
                          cwd=REPO, capture_output=True, timeout=300)
    assert b"migrating:" not in done.stderr and b"\r" not in done.stderr
