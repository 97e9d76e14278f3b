"""Parsed selectors are kept between runs (kubectl_gpu/cli/cel_parser_cache.py ParsedSelectorFiles,
through kubectl_gpu/cel/parser_hook.py): a run of `kubectl gpu explain` that meets only selectors
it has parsed before does not load cel-python, lark or pendulum, and answers exactly as a run that
parses them.  Everyday selectors never need it (kubectl_gpu/cel/quick_parser.py reads them without
cel-python): what is kept are the selectors it leaves to cel-python's grammar, such as those below
with a hex number or a bytes literal.

What a user can rely on: an entry is used only for the exact text it was parsed from and only by
the parser that wrote it (an upgrade of cel-python or lark, or another kubectl-gpu, parses again);
a damaged, half-written or foreign file is parsed again, never a traceback; concurrent runs never
read half a file; feature gates are applied on every compile, never kept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from kubectl_gpu.cel import CelCompileError, compile_selector
from kubectl_gpu.dra.devices import make_device
from kubectl_gpu.cel import parser as cel_parser
from kubectl_gpu.cel import selector as cel_selector
from kubectl_gpu.cel.parser_hook import set_parsed_store
from kubectl_gpu.cel.syntax import from_json, to_json
from kubectl_gpu.cli import cel_parser_cache
from kubectl_gpu.cli.cel_parser_cache import ParsedSelectorFiles, parser_identity
from tests.test_cel_differential import expressions
from tests.test_cel_parser_cache import CLAIM, SELECTOR_CLAIM, SLICES

# 0x0 and 0x1: hex numbers, which quick_parser leaves to cel-python's grammar
MEMORY = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0x0"
MULTI = "device.allowMultipleAllocations && 0x1 == 1"


def _parse(expression: str):
    return cel_parser.to_ast(cel_parser.parse(expression), expression)


MEMORY_AST, MULTI_AST = _parse(MEMORY), _parse(MULTI)
H100 = make_device("gpu.nvidia.com", "gpu-0", attributes={"productName": "NVIDIA H100"}, capacity={"memory": "80Gi"})


def run_explain(cache_home: Path, *claims: str) -> subprocess.CompletedProcess:
    """The CLI as a user runs it, with -X importtime so the modules it loads can be read."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), "NO_COLOR": "1"}
    command = [sys.executable, "-X", "importtime", "-m", "kubectl_gpu.cli.main", "explain", "--slices", SLICES,
               "-o", "json"]
    for claim in claims:
        command += ["-f", claim]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def loaded(result: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def answer(result: subprocess.CompletedProcess) -> tuple[int, str, list[str]]:
    errors = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    return result.returncode, result.stdout, errors


def ast_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "kubectl-gpu").glob("cel-ast-*.json"))


@pytest.fixture
def store(tmp_path):
    """A store in a private temporary directory, used by compile_selector for one test."""
    directory = tmp_path / "kubectl-gpu"
    directory.mkdir(mode=0o700)
    files = ParsedSelectorFiles(directory, parser_identity())
    set_parsed_store(files)
    cel_selector._compile.cache_clear()
    yield files
    set_parsed_store(None)
    cel_selector._compile.cache_clear()


@pytest.fixture
def no_parsing(monkeypatch):
    """Parsing fails loudly: what compiles now came from the store."""
    def refuse(expression):
        raise AssertionError(f"parsed again: {expression}")

    monkeypatch.setattr(cel_parser, "parse", refuse)


def test_a_second_run_with_the_same_selectors_does_not_load_cel_python_and_answers_the_same(tmp_path):
    claim = tmp_path / "shapes.yaml"
    claim.write_text(SELECTOR_CLAIM)
    cold = run_explain(tmp_path / "cache", CLAIM, str(claim))
    assert cold.returncode == 0, cold.stderr
    assert {"celpy", "lark", "pendulum"} <= loaded(cold)
    # the shapes claim's selector, which needs cel-python's grammar; the class's selector is read
    # by quick_parser and never kept
    assert len(ast_files(tmp_path / "cache")) == 1
    warm = run_explain(tmp_path / "cache", CLAIM, str(claim))
    assert answer(warm) == answer(cold)
    assert not {"celpy", "lark", "pendulum"} & loaded(warm)


def test_a_selector_not_seen_before_is_parsed_and_kept(store):
    assert store.get(MEMORY) is None
    assert compile_selector(MEMORY).matches(H100) is True
    assert from_json(store.get(MEMORY)) == MEMORY_AST


def test_a_kept_selector_compiles_without_parsing(store, no_parsing):
    store.put(MEMORY, to_json(MEMORY_AST))
    assert compile_selector(MEMORY).matches(H100) is True


def test_feature_gates_apply_to_a_kept_selector_as_to_a_parsed_one(store, no_parsing):
    """Kubernetes compiles a new claim's `device.allowMultipleAllocations` only with
    DRAConsumableCapacity on (dynamic-resource-allocation/cel: the field is declared under the
    gate); parsing does not depend on gates, so what is kept is checked again under each."""
    store.put(MULTI, to_json(MULTI_AST))
    with pytest.raises(CelCompileError, match="undefined field 'allowMultipleAllocations'"):
        compile_selector(MULTI, gates=frozenset())
    assert compile_selector(MULTI, gates=frozenset({"DRAConsumableCapacity"})).matches(H100) is False


def test_an_entry_is_answered_only_for_its_exact_text(store):
    store.put(MEMORY, to_json(MEMORY_AST))
    assert store.get(MEMORY + " ") is None
    assert store.get(MEMORY.replace("40Gi", "40G")) is None


def test_another_parser_version_does_not_read_the_entries(tmp_path, store):
    store.put(MEMORY, to_json(MEMORY_AST))
    upgraded = ParsedSelectorFiles(store.directory, "another parser")
    assert upgraded.get(MEMORY) is None


def test_the_parser_identity_changes_with_any_file_the_parse_depends_on(tmp_path, monkeypatch):
    """A new cel-python grammar, lark version or AST builder: every kept selector is a miss."""
    package = tmp_path / "fake_celpy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cel.lark").write_text("start: expr\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cel_parser_cache, "_PARSER_SOURCES",
                        (("fake_celpy", "cel.lark"), *cel_parser_cache._PARSER_SOURCES[1:]))
    before = parser_identity()
    (package / "cel.lark").write_text("start: expr | other\n")
    assert parser_identity() not in (None, before)
    (package / "cel.lark").unlink()
    assert parser_identity() is None  # a source that cannot be read: nothing is kept


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # half-written (a full disk, a crash)
    lambda data: b"",
    lambda data: b"not json at all\n{",
    lambda data: data.replace(b"40Gi", b"80Gi"),  # a changed byte: the digest no longer matches
    lambda data: data.split(b"\n", 1)[1],  # no digest line
])
def test_a_damaged_file_is_parsed_again_and_rewritten(store, damage):
    compile_selector(MEMORY)
    (kept,) = store.directory.glob("cel-ast-*.json")
    kept.write_bytes(damage(kept.read_bytes()))
    assert store.get(MEMORY) is None
    cel_selector._compile.cache_clear()
    assert compile_selector(MEMORY).matches(H100) is True
    assert from_json(store.get(MEMORY)) == MEMORY_AST


def test_a_file_that_holds_another_expression_under_this_name_is_a_miss(store):
    """Names are hashes: a collision (or a file copied by hand) must not answer another text."""
    other = "device.driver == 'gpu.nvidia.com'"
    store.put(other, to_json(_parse(other)))
    (kept,) = store.directory.glob("cel-ast-*.json")
    kept.rename(store._path(MEMORY))
    assert store.get(MEMORY) is None


@pytest.mark.parametrize("text", ["", "[]", '{"Lit": [1, "int"]}', '{"Nope": []}', '{"Call": "x"}',
                                  '{"bytes": "zz"}', '"device"', "{" * 5000])
def test_text_that_is_not_an_ast_reads_as_none(text):
    assert from_json(text) is None


def test_while_concurrent_runs_rewrite_an_entry_readers_always_find_it_whole(store):
    """Each write goes to a temporary file renamed over the entry: a reader sees the old file or
    the new one, never a missing or half-written one (that would be a miss: parsing again)."""
    parsed = to_json(MEMORY_AST)
    store.put(MEMORY, parsed)
    seen: list[str | None] = []

    def write() -> None:
        for _ in range(200):
            store.put(MEMORY, parsed)

    def read() -> None:
        for _ in range(400):
            seen.append(store.get(MEMORY))

    threads = [threading.Thread(target=write) for _ in range(3)] + [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(seen) == {parsed}
    assert [p.name for p in store.directory.iterdir()] == [store._path(MEMORY).name]  # no temporary left


def test_an_unwritable_directory_is_no_error(store):
    store.directory.chmod(0o500)
    try:
        store.put(MEMORY, to_json(MEMORY_AST))
        assert compile_selector(MEMORY).matches(H100) is True
    finally:
        store.directory.chmod(0o700)


def test_a_cache_directory_others_can_write_keeps_no_selector(tmp_path, monkeypatch):
    shared = tmp_path / "kubectl-gpu"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ParsedSelectorFiles.in_user_cache() is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=expressions())
def test_every_ast_reads_back_from_json_exactly(expression):
    try:
        ast = _parse(expression)
    except CelCompileError:
        return
    text = to_json(ast)
    again = from_json(text)
    assert again == ast
    assert to_json(again) == text  # literal types too (1 and 1.0 and True compare equal in Python)
    json.loads(text)


def test_the_parser_tables_are_kept_when_cel_python_is_first_needed_to_evaluate(monkeypatch):
    """The face's set-up (its cache of cel-python's parser tables) runs the first time anything
    needs cel-python: a selector the quick parser reads but the fast path leaves to cel-python
    makes the parser without asking parsed_store() first, and must still get the kept tables."""
    from kubectl_gpu.cel import parser_hook

    made: list[str] = []
    monkeypatch.setattr(parser_hook, "_builder", None)
    monkeypatch.setattr(parser_hook, "_store", None)
    parser_hook.set_up_before_reference_parsing(
        lambda: parser_hook.set_parser_builder(lambda: made.append("kept tables")))
    build = parser_hook.take_parser_builder()
    assert build is not None
    build()
    assert made == ["kept tables"]
    parser_hook.set_up_before_reference_parsing(None)
