"""The consoles every command prints through: one colour and width policy.

- Colour only when the stream is a terminal, and never with NO_COLOR set to anything non-empty
  (https://no-color.org) or TERM=dumb: not even bold, so the output is exactly the text.
- Progress of long runs goes to stderr, only when stderr is a terminal, and is erased when done:
  stdout stays exactly the report, piped or not.
- Nothing is wrapped or cropped to the terminal's width, piped or not: tables lay themselves out
  (kubectl_gpu/kubetable.py) and a terminal narrower than a line wraps it, as for kubectl.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager, nullcontext
from typing import ContextManager, Iterator, TextIO

from rich.console import Console


def colour_allowed(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def console(stream: TextIO | None = None) -> Console:
    stream = stream or sys.stdout
    colour = colour_allowed(stream)
    return Console(file=stream, color_system="auto" if colour else None, force_terminal=colour or None,
                   soft_wrap=True, highlight=False, markup=False, emoji=False)


def stderr_console() -> Console:
    return console(sys.stderr)


def progress(message: str, stream: TextIO | None = None) -> ContextManager[object]:
    """A spinner with `message` on stderr while a long step runs (listing a large cluster), only
    when stderr is a terminal (not TERM=dumb); nothing otherwise."""
    stream = stream or sys.stderr
    try:
        interactive = stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        return nullcontext()
    return _spinner(message, stream)


@contextmanager
def _spinner(message: str, stream: TextIO) -> Iterator[object]:
    out = Console(file=stream, force_terminal=True, color_system=None if os.environ.get("NO_COLOR") else "auto",
                  highlight=False, markup=False, emoji=False)
    with out.status(message, spinner="line") as status:
        yield status
