"""The hooks through which a face keeps parsing work between processes: cel-python's parser
tables and the parsed selectors themselves (kubectl_gpu/cli/cel_parser_cache.py).

Apart from parser.py so that a command can set them without loading cel-python, lark and
pendulum: with the parsed selectors kept, a run that meets only selectors it has seen before
never loads them (about 0.1 s of every `kubectl gpu explain`).  This layer does no I/O itself: a
face gives it a :class:`ParsedStore`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

_builder: Callable[[], None] | None = None


def set_parser_builder(build: Callable[[], None] | None) -> None:
    """Called once before cel-python makes its parser (``CELParser.CEL_PARSER``)."""
    global _builder
    _builder = build


def take_parser_builder() -> Callable[[], None] | None:
    """The builder, once: whatever it does, it is not called again."""
    global _builder
    _set_up()
    build, _builder = _builder, None
    return build


class ParsedStore(Protocol):
    """Parsed expressions kept by their exact text: ``get`` answers what ``put`` was given for the
    same text by this same parser (None when it has nothing, or nothing it can vouch for); the
    store, not this layer, makes sure an entry written by another parser is never answered."""

    def get(self, expression: str) -> str | None: ...

    def put(self, expression: str, parsed: str) -> None: ...


_store: ParsedStore | None = None
_setup: Callable[[], None] | None = None


def set_parsed_store(store: ParsedStore | None) -> None:
    """Where selector.py looks up an expression's AST (as kubectl_gpu.cel.syntax.to_json wrote it)
    before parsing it, and keeps the ASTs it parses."""
    global _store
    _store = store


def set_up_before_reference_parsing(setup: Callable[[], None] | None) -> None:
    """``setup`` (which sets the builder and the store) runs the first time cel-python's parser or
    the store is needed (kubectl_gpu/cel/quick_parser.py reads everyday selectors without either):
    a run that meets none pays nothing for them, not even finding the cache directory."""
    global _setup
    _setup = setup


def parsed_store() -> ParsedStore | None:
    _set_up()
    return _store


def _set_up() -> None:
    """The face's set-up, once, before the store or the builder is first asked for: parsing with
    the reference or evaluating with cel-python (a selector the fast path leaves to it) alike."""
    global _setup
    if _setup is not None:
        setup, _setup = _setup, None
        setup()
