"""The shared corpus of real public manifests, found beside the repository (`../shared/corpus`).

A clean clone has no `../shared`: tests that read the corpus skip with the one reason below,
and everything that must always be tested has its own small fixture in `tests/data`.
Nothing here names a machine path: the corpus is found relative to this repository.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPUS = REPO.parent / "shared" / "corpus"
MISSING = "the shared corpus (../shared/corpus beside the repository) is not checked out"

requires_corpus = pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason=MISSING)

# The repository's own small DRA manifests, for what must be tested from a clean clone.
CLAIM_FIXTURES = REPO / "tests" / "data" / "manifests" / "claims"


def claim_fixture(name: str) -> Path:
    """tests/data/manifests/claims/<name>.yaml (always present)."""
    return CLAIM_FIXTURES / f"{name}.yaml"


def corpus_dir(kind: str) -> Path:
    """`legacy`, `dra` or `admission` under the corpus (it may not exist: see `corpus_files`)."""
    return SHARED_CORPUS / kind


def corpus_files(kind: str, pattern: str = "*") -> list[Path]:
    """The corpus files of one kind matching `pattern`, sorted; empty when there is no corpus."""
    directory = corpus_dir(kind)
    return sorted(p for p in directory.glob(pattern) if p.is_file()) if directory.is_dir() else []


def corpus_file(kind: str, fragment: str) -> Path:
    """The one corpus file whose name contains `fragment`; skips the calling test when the
    corpus is absent, fails it when the corpus no longer holds exactly one such file."""
    if not SHARED_CORPUS.is_dir():
        pytest.skip(MISSING)
    matches = [p for p in corpus_files(kind) if fragment in p.name]
    assert len(matches) == 1, f"expected one corpus file named *{fragment}* in {kind}/, found {matches}"
    return matches[0]


def corpus_params(params: Iterable[Any]) -> list[Any]:
    """Parameters for a test run once per corpus item; without the corpus, one skipped case
    that says why (rather than pytest's "got empty parameter set")."""
    found = list(params)
    if found or SHARED_CORPUS.is_dir():
        return found
    return [pytest.param(None, marks=pytest.mark.skip(reason=MISSING), id="no-corpus")]
