"""Where migrated manifests go: one stream (stdout, written as each document is done), back
over the inputs, or a mirror directory (each file written whole once it is done, after every
destination was checked)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

from .loader import Format, encode
from .objects import is_list
from .serialize import RenderedFile, json_text


class OutputError(Exception):
    """The requested destination cannot take the output (nothing was written)."""


def join_stream(files: Sequence[RenderedFile]) -> str:
    """All files as one stream: YAML documents with `---` between files; JSON values one
    after another (kubectl reads a stream of JSON objects too)."""
    pieces: list[str] = []
    for rendered in files:
        text = rendered.text
        if not text.strip():
            continue
        if pieces and not pieces[-1].endswith("\n"):
            pieces.append("\n")
        if pieces and rendered.format is Format.YAML and not text.startswith("---"):
            pieces.append("---\n")
        pieces.append(text)
    return "".join(pieces)


class StreamJoiner:
    """`join_stream` for files that arrive piece by piece: each file's pieces are written as
    they come, with the same separators `join_stream` puts between whole files."""

    def __init__(self, write: Callable[[str], None], after_text: bool = False) -> None:
        self._write = write
        self._last = "\n" if after_text else ""  # the last character written ("" before the first)

    def file(self, pieces: Iterable[str], file_format: Callable[[], Format]) -> None:
        """Write one file's pieces; `file_format` says (once its first content is there) whether
        it is written as YAML (a `---` goes between it and the file before)."""
        held: list[str] = []  # blank pieces at the file's start: a blank file writes nothing
        started = False
        for piece in pieces:
            if not started:
                held.append(piece)
                text = "".join(held)
                if not text.strip():
                    continue
                started = True
                piece = text
                if self._last and self._last != "\n":
                    self._emit("\n")
                if self._last and file_format() is Format.YAML and not piece.startswith("---"):
                    self._emit("---\n")
            self._emit(piece)

    def _emit(self, text: str) -> None:
        if text:
            self._write(text)
            self._last = text[-1]


class JsonList:
    """-o json on stdout: one JSON value however many files, as kubectl prints several objects: an
    object alone as itself (the file's text as it was), several as one v1 List whose items are every
    file's objects (a file's own List flattened), written as they come.  A file that could not be
    written as JSON (its report says why) follows the List, as it was."""

    _HEAD = '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [\n'
    _TAIL = "\n  ]\n}\n"

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._held: str | None = None  # the first value's text, written whole if no other follows
        self._open = False
        self._left: list[RenderedFile] = []

    def file(self, rendered: RenderedFile) -> None:
        if not rendered.text.strip():
            return
        if rendered.format is not Format.JSON or rendered.fallback_reason is not None:
            self._left.append(rendered)
        else:
            self.value_text(rendered.text)

    def value_text(self, text: str) -> None:
        if self._held is None and not self._open:
            self._held = text
            return
        self._start()
        self._items(json.loads(text))

    def value(self, value: Any) -> None:
        self.value_text(json_text([value], 2))

    def close(self) -> None:
        if self._open:
            self._write(self._TAIL)
        elif self._held is not None:
            self._write(self._held)
        if self._left:
            joiner = StreamJoiner(self._write, after_text=self._open or self._held is not None)
            for rendered in self._left:
                joiner.file([rendered.text], lambda r=rendered: r.format)

    def _start(self) -> None:
        if self._open:
            return
        self._write(self._HEAD)
        self._open, held, self._held = True, self._held, None
        self._first = True
        self._items(json.loads(held))

    def _items(self, value: Any) -> None:
        for item in value["items"] if is_list(value) else [value]:
            text = json_text([item], 2).rstrip("\n").replace("\n", "\n    ")
            self._write(("    " if self._first else ",\n    ") + text)
            self._first = False


def output_paths(files: Sequence[RenderedFile], directory: Path) -> list[Path]:
    targets: dict[Path, str] = {}
    result: list[Path] = []
    for rendered in files:
        relative = rendered.source.relative
        if relative is None:
            raise OutputError(f"{rendered.source.display}: has no path to mirror under {directory}")
        target = directory / relative
        if rendered.format is Format.JSON and target.suffix.lower() != ".json":
            target = target.with_suffix(".json")
        elif rendered.format is Format.YAML and target.suffix.lower() == ".json":
            target = target.with_suffix(".yaml")
        if target in targets:
            raise OutputError(f"{rendered.source.display} and {targets[target]} would both be written to {target}")
        targets[target] = rendered.source.display
        result.append(target)
    return result


@dataclass
class WriteReport:
    """What a batch of writes did: every file is either written whole or left as it was."""

    written: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def write_files(jobs: Sequence[tuple[Path, str, Path | None, str]]) -> WriteReport:
    """Write each (path, text, like, encoding) atomically; a failure (a full disk, a directory that cannot
    be written, a path under a file) is recorded and the next file is still attempted."""
    report = WriteReport()
    for path, text, like, encoding in jobs:
        try:
            write_file(path, text, like, encoding)
        except OSError as err:
            report.failed.append((path, err.strerror or str(err)))
        else:
            report.written.append(path)
    return report


def write_file(path: Path, text: str, like: Path | None = None, encoding: str = "utf-8") -> None:
    """Write atomically (a reader never sees half a manifest), keeping the mode of `like`, in
    `encoding` (the one the input was read in, see loader.encode).
    A symbolic link is followed: the file it points to is rewritten and the link stays."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(encode(text, encoding))
        if like is not None and like.exists():
            os.chmod(temporary, like.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
