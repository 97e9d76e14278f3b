"""The hook through which a face keeps cel-python's parser tables between processes
(kubectl_gpu/cli/cel_parser_cache.py).  Apart from syntax.py so that a command can set it without
loading cel-python, lark and pendulum, which only the first selector it parses needs; this layer
does no I/O itself.
"""

from __future__ import annotations

from collections.abc import Callable

_builder: Callable[[], None] | None = None


def set_parser_builder(build: Callable[[], None] | None) -> None:
    """Called once before cel-python makes its parser (``CELParser.CEL_PARSER``)."""
    global _builder
    _builder = build


def take_parser_builder() -> Callable[[], None] | None:
    """The builder, once: whatever it does, it is not called again."""
    global _builder
    build, _builder = _builder, None
    return build
