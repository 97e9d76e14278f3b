"""The `kubectl-gpu` executable keeps cel-python's CEL parser tables in the user's cache directory
(kubectl_gpu/cli/cel_parser_cache.py): lark builds them in 0.27 s, loads them in 0.03 s.  Only a
selector that kubectl_gpu/cel/quick_parser.py leaves to cel-python's grammar makes the parser, so
every run here explains SELECTOR_CLAIM, which has one (a bytes literal).

What a user can rely on (lark's documented ``cache=`` behaviour, lark/lark.py: the file carries a
hash of grammar, options and versions, and a file that does not load is rebuilt): the answers are
the same with or without the file, a damaged file changes nothing, and a cache directory others
can write is never loaded from (lark's cache is a pickle).
"""

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.corpus import claim_fixture

SLICES = str(Path(__file__).parent / "data" / "slices" / "nvidia-h100-node.yaml")
CLAIM = str(claim_fixture("gpu-test1-single-gpu"))
# A selector of every kind of syntax the grammar has, so a wrongly loaded parser cannot pass.
SELECTOR_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shapes, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
        selectors:
        - cel:
            expression: >-
              device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('h100') &&
              device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0 &&
              (has(device.attributes['gpu.nvidia.com'].addressingMode) ? true : 1 + 2 * 3 % 4 - -5 > 0) &&
              ['a', 'b'].exists(x, x == 'a') && {'k': 1}['k'] == 1 && !(2.5 < 1.0) && b'\\x00' != b'' &&
              cel.bind(g, device.attributes['gpu.nvidia.com'], g.type in ['gpu', "mig"])
"""


def explain(cache_home: Path, *files: str) -> subprocess.CompletedProcess:
    """The installed executable, as a user runs it, with its own cache directory."""
    executable = Path(sys.executable).parent / "kubectl-gpu"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), "NO_COLOR": "1"}
    args = [str(executable)] if executable.exists() else [sys.executable, "-m", "kubectl_gpu.cli.main"]
    command = [*args, "explain", "--slices", SLICES, "-o", "json"]
    for name in files:
        command += ["-f", name]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def cache_files(cache_home: Path) -> list[Path]:
    directory = cache_home / "kubectl-gpu"
    return sorted(directory.glob("cel-parser-*")) if directory.is_dir() else []


def test_the_parser_is_kept_in_a_private_directory_and_answers_the_same(tmp_path):
    claim = tmp_path / "shapes.yaml"
    claim.write_text(SELECTOR_CLAIM)
    cold = explain(tmp_path / "cache", CLAIM, str(claim))
    assert cold.returncode == 0, cold.stderr
    (kept,) = cache_files(tmp_path / "cache")
    assert stat.S_IMODE((tmp_path / "cache" / "kubectl-gpu").stat().st_mode) == 0o700
    warm = explain(tmp_path / "cache", CLAIM, str(claim))
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert '"allocatable": true' in warm.stdout
    assert cache_files(tmp_path / "cache") == [kept]


def shapes_claim(tmp_path: Path) -> str:
    claim = tmp_path / "shapes.yaml"
    claim.write_text(SELECTOR_CLAIM)
    return str(claim)


def test_a_damaged_cache_file_changes_nothing(tmp_path):
    shapes = shapes_claim(tmp_path)
    first = explain(tmp_path / "cache", CLAIM, shapes)
    (kept,) = cache_files(tmp_path / "cache")
    kept.write_bytes(kept.read_bytes()[:200])  # a half-written file (a full disk)
    for parsed in (tmp_path / "cache" / "kubectl-gpu").glob("cel-ast-*.json"):
        parsed.unlink()  # so that the selector is parsed again, with the damaged tables
    damaged = explain(tmp_path / "cache", CLAIM, shapes)
    assert (damaged.returncode, damaged.stdout, damaged.stderr) == (first.returncode, first.stdout, first.stderr)
    kept.write_bytes(b"not a pickle at all\n")
    for parsed in (tmp_path / "cache" / "kubectl-gpu").glob("cel-ast-*.json"):
        parsed.unlink()
    garbage = explain(tmp_path / "cache", CLAIM, shapes)
    assert (garbage.returncode, garbage.stdout, garbage.stderr) == (first.returncode, first.stdout, first.stderr)


def test_a_cache_directory_others_can_write_is_not_used(tmp_path):
    shared = tmp_path / "cache" / "kubectl-gpu"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    result = explain(tmp_path / "cache", CLAIM, shapes_claim(tmp_path))
    assert result.returncode == 0, result.stderr
    assert cache_files(tmp_path / "cache") == []


def test_an_unwritable_cache_home_is_no_error(tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    result = explain(blocked, CLAIM, shapes_claim(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_a_relative_cache_home_writes_nothing_beside_the_user(tmp_path):
    """The XDG Base Directory spec: a relative $XDG_CACHE_HOME is invalid and ignored; with no home
    either, no cache is kept rather than one written under the current directory."""
    work = tmp_path / "work"
    work.mkdir()
    executable = Path(sys.executable).parent / "kubectl-gpu"
    args = [str(executable)] if executable.exists() else [sys.executable, "-m", "kubectl_gpu.cli.main"]
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    env.update({"XDG_CACHE_HOME": "relative-cache", "NO_COLOR": "1"})
    result = subprocess.run([*args, "explain", "--slices", SLICES, "-f", CLAIM, "-f", shapes_claim(tmp_path), "-o",
                             "json"], cwd=work,
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert list(work.iterdir()) == []


def test_a_run_whose_selectors_need_no_cel_python_keeps_nothing(tmp_path):
    """Everyday selectors (the driver's classes', the bench's) are read by kubectl_gpu/cel/quick_parser.py:
    the run neither makes cel-python's parser nor looks for the cache directory, let alone creates it."""
    result = explain(tmp_path / "cache", CLAIM)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "cache").exists()
