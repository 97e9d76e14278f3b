"""The consoles every command prints through: one colour and width policy.

- Colour only when the stream is a terminal, and never with NO_COLOR set to anything non-empty
  (https://no-color.org) or TERM=dumb: not even bold, so the output is exactly the text.  Without
  colour, what describe, doctor and explain print is written by kubectl_gpu/kubetable.py's
  PlainConsole (the same characters rich's console prints), and rich is not loaded.
- Progress of long runs goes to stderr, only when stderr is a terminal, and is erased when done:
  stdout stays exactly the report, piped or not.
- Tables are never wrapped or cropped to the terminal's width, piped or not: they lay themselves
  out (kubectl_gpu/kubetable.py) and a terminal narrower than a line wraps it, as for kubectl.
  Sentences (findings, notes, what a step did) are wrapped to a terminal's width, words whole
  (echo_wrapped, kubectl_gpu/prose.py); piped, each stays one line.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, ContextManager, Iterable, Iterator, TextIO

from kubectl_gpu.kubetable import PlainConsole, Printable

if TYPE_CHECKING:  # rich is loaded by the consoles that draw in colour
    from rich.console import Console


def colour_allowed(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def console(stream: TextIO | None = None) -> Console:
    from rich.console import Console

    stream = stream or sys.stdout
    colour = colour_allowed(stream)
    return Console(file=stream, color_system="auto" if colour else None, force_terminal=colour or None,
                   soft_wrap=True, highlight=False, markup=False, emoji=False)


def text_console(stream: TextIO | None = None) -> Console | PlainConsole:
    """For commands that print only text lines and KubeTables (explain, describe, doctor): rich's
    console where colour is allowed; otherwise a PlainConsole, which prints the same characters
    without loading rich."""
    stream = stream or sys.stdout
    return console(stream) if colour_allowed(stream) else PlainConsole(stream)


def print_lines(items: Iterable[Printable], stream: TextIO | None = None) -> None:
    """Tables, lines and sentences for people (kubectl_gpu/kubetable.py), one after another, on
    text_console(): rich's console draws them in colour, a PlainConsole writes the same characters."""
    out = text_console(stream)
    if isinstance(out, PlainConsole):
        for item in items:
            out.print(item)
        return
    from rich.console import Group

    out.print(Group(*items))


def echo_wrapped(line: str, err: bool = False) -> None:
    """A sentence for people on stdout (or stderr), wrapped to the terminal's width where it is
    one, the lines after the first indented under it (kubectl_gpu/prose.py); piped, one line."""
    import click

    from kubectl_gpu.prose import wrapped

    stream = sys.stderr if err else sys.stdout
    width = None
    if _interactive(stream):
        import shutil  # only on a terminal: it loads bz2, lzma and zlib

        width = shutil.get_terminal_size((80, 24)).columns
    for part in wrapped(line, width, " " * (len(line) - len(line.lstrip(" ")) + 4)):
        click.echo(part, err=err)


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
    from rich.console import Console

    out = Console(file=stream, force_terminal=True, color_system=None if os.environ.get("NO_COLOR") else "auto",
                  highlight=False, markup=False, emoji=False)
    with out.status(message, spinner="line") as status:
        yield status


def _interactive(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class _Progress:
    """One line on stderr rewritten in place (`\\r`), at most ten times a second, erased when
    done.  Not a rich Live display: that would capture stdout, which migrate streams."""

    def __init__(self, stream: TextIO | None, total_files: int) -> None:
        self._stream = stream
        self._total = total_files
        self._files = 0
        self._documents = 0
        self._name = ""
        self._migration: object | None = None
        self._shown = 0.0

    def file(self, migration: object) -> None:
        """A new file starts (a manifests.FileMigration: its `source.display` and `documents`)."""
        self._finish_file()
        self._files += 1
        self._migration = migration
        self._name = getattr(getattr(migration, "source", None), "display", "")
        self._draw(force=True)

    def counting(self, pieces: Iterator[str]) -> Iterator[str]:
        for piece in pieces:
            self._draw()
            yield piece
        self._draw()

    def _finish_file(self) -> None:
        if self._migration is not None:
            self._documents += getattr(self._migration, "documents", 0)
            self._migration = None

    def _draw(self, force: bool = False) -> None:
        if self._stream is None:
            return
        now = time.monotonic()
        if not force and now - self._shown < 0.1:
            return
        self._shown = now
        documents = self._documents + getattr(self._migration, "documents", 0)
        line = f"migrating: file {self._files}/{self._total}, {documents:,} document(s): {self._name}"
        import shutil  # here, not at the top: explain's tables never need it (it loads bz2, lzma, zlib)

        width = shutil.get_terminal_size((80, 24)).columns - 1
        self._stream.write("\r" + line[:width] + "\x1b[K")
        self._stream.flush()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.write("\r\x1b[K")
            self._stream.flush()


@contextmanager
def migrate_progress(total_files: int, *, writes_stdout: bool, stream: TextIO | None = None,
                     quiet: bool = False) -> Iterator[_Progress]:
    """Progress of a long migrate on stderr: files and documents done, and the file at hand.
    Shown only when stderr is a terminal and stdout does not print onto that same terminal
    (there, the manifests themselves show the progress); piped or redirected, or -q: nothing."""
    stream = stream or sys.stderr
    shown = not quiet and _interactive(stream) and not (writes_stdout and _interactive(sys.stdout))
    progress = _Progress(stream if shown else None, total_files)
    try:
        yield progress
    finally:
        progress.close()
