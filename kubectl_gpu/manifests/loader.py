"""Read manifests: files, directories (recursively), stdin; YAML streams and JSON.

A document that does not parse is kept (its exact text) with the reason and line, so
writing the output never loses it and the other documents still migrate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from kubectl_gpu.input_error import InputError  # raised for an argument that cannot be read at all
from kubectl_gpu.input_text import NotText, decode, encode, number_too_long_in  # encode: manifests' face

from .fast_read import FastRead, read_fast
from .stream import Chunk, is_blank, split_leading_comments, split_stream
from .yamlio import MAX_DEPTH, DuplicateKey, YamlCodec, _too_deep, guess_indentation

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


class Format(str, Enum):
    YAML = "yaml"
    JSON = "json"


@dataclass(frozen=True)
class Source:
    display: str  # how reports name it: the path as given, or "<stdin>"
    text: str
    path: Path | None = None  # None for stdin
    relative: PurePosixPath | None = None  # where --output-dir mirrors it
    encoding: str = "utf-8"  # as read: "utf-8", or "utf-8-sig"/"utf-16-le"/"utf-16-be" (with a byte order mark)


@dataclass
class ParsedDocument:
    chunk: Chunk | None  # its YAML text; None for a JSON file
    tree: Any  # the parsed value; None for an empty document or one that did not parse
    line: int  # 1-based line of its first content line in the file
    error: str | None = None  # why it did not parse, with the line
    duplicates: list[DuplicateKey] = field(default_factory=list)
    # Read by libyaml, to be rewritten as edits of its text (text_edit.py); `tree` is then plain.
    fast: FastRead | None = None

    @property
    def is_object(self) -> bool:
        return self.tree is not None or self.error is not None


@dataclass
class ParsedFile:
    source: Source
    format: Format
    documents: list[ParsedDocument]
    codec: YamlCodec
    json_indent: int | str | None = None


@dataclass
class OpenedFile:
    """A file ready to be read document by document: YAML documents are parsed only when
    asked for (and may be dropped after), so a long stream never holds all its trees at once.
    A JSON file is parsed whole (plain values are small; one JSON value cannot be cut)."""

    source: Source
    format: Format
    codec: YamlCodec
    json_indent: int | str | None = None
    chunks: list[Chunk] | None = None  # YAML
    parsed: list[ParsedDocument] | None = None  # JSON

    def documents(self) -> Iterator[ParsedDocument]:
        if self.parsed is not None:
            yield from self.parsed
            return
        assert self.chunks is not None
        for chunk in self.chunks:
            yield parse_chunk(self.codec, chunk)

    def documents_to_rewrite(self, unread: Callable[[Chunk], bool] | None) -> Iterator[ParsedDocument | Chunk]:
        """The documents in order, for rewriting: a YAML document libyaml reads exactly comes read by
        it, to be rewritten as text (parse_for_text_edit), except that one for which `unread` is
        true comes as its Chunk, never parsed."""
        if self.parsed is not None:
            yield from self.parsed
            return
        assert self.chunks is not None
        for chunk in self.chunks:
            yield chunk if unread is not None and unread(chunk) else parse_for_text_edit(self.codec, chunk)

    def documents_naming(self, texts: Iterable[str]) -> Iterator[ParsedDocument]:
        """The documents whose text contains one of `texts` (every document of a JSON file)."""
        if self.parsed is not None:
            yield from self.parsed
            return
        assert self.chunks is not None
        texts = tuple(texts)
        for chunk in self.chunks:
            if any(text in chunk.body for text in texts):
                yield parse_chunk(self.codec, chunk)


def is_stream(argument: str) -> bool:
    """Whether ``argument`` names standard input, a pipe or a device: read as a file, never rewritten."""
    path = Path(argument)
    return argument == STDIN or (path.exists() and not path.is_dir() and not path.is_file())


def collect_sources(arguments: Iterable[str], stdin: TextIO | None = None,
                    top_level_only: Collection[str] = ()) -> list[Source]:
    """Every manifest named by `arguments`, in order: a directory's files and those of its
    subdirectories, or only its own for a directory in `top_level_only` (kubectl's `-f DIR`
    without -R).  Raises InputError for a path that does not exist, a directory or file that
    cannot be read, or a file that is not text: one error naming every such path (nothing is
    migrated while part of the input is unseen)."""
    sources: list[Source] = []
    problems: list[str] = []
    for argument in arguments:
        if argument == STDIN:
            if stdin is None:
                raise InputError("'-' given but there is no standard input")
            buffer = getattr(stdin, "buffer", None)
            if buffer is not None:
                text, encoding = _decode(buffer.read(), "<stdin>")
            else:
                text, encoding = stdin.read().removeprefix("\ufeff"), "utf-8"
            sources.append(Source("<stdin>", text, None, PurePosixPath("stdin.yaml"), encoding))
            continue
        path = Path(argument)
        try:
            if path.is_dir():
                for file in sorted(_manifests_under(path, problems, argument not in top_level_only)):
                    try:
                        sources.append(_read(file, file.as_posix(), PurePosixPath(file.relative_to(path).as_posix())))
                    except InputError as err:
                        problems.append(str(err))
            elif path.is_file():
                sources.append(_read(path, argument, _mirror_path(path)))
            elif path.exists():  # a pipe (the shell's <(...) is /dev/fd/N) or a device: read, never written
                sources.append(replace(_read(path, argument, _mirror_path(path)), path=None))
            elif path.is_symlink():
                problems.append(_dangling(path, argument))
            else:
                problems.append(f"{argument}: no such file or directory")
        except InputError as err:
            problems.append(str(err))
    if problems:
        raise InputError("\n".join(problems))
    return sources


def _manifests_under(directory: Path, problems: list[str], recursive: bool = True) -> list[Path]:
    def unreadable(err: OSError) -> None:
        # Skipping it would let `--check` pass over manifests nobody looked at.
        where = err.filename or directory
        problems.append(f"{where}: cannot read this directory ({err.strerror}); fix its permissions "
                        "or name only the directories migrate should read")

    found: list[Path] = []
    for root, dirs, files in os.walk(directory, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
        for name in files:
            path = Path(root) / name
            if not name.startswith(".") and path.suffix.lower() in MANIFEST_SUFFIXES:
                if path.is_file():
                    found.append(path)
                elif path.is_symlink():
                    problems.append(_dangling(path, path.as_posix()))
    return found


def _dangling(link: Path, display: str) -> str:
    return (f"{display}: a symbolic link to {os.readlink(link)}, which does not exist (or links back to itself); "
            "point it at a file or remove it")


def _mirror_path(path: Path) -> PurePosixPath:
    if path.is_absolute() or ".." in path.parts:
        return PurePosixPath(path.name)
    return PurePosixPath(path.as_posix())


def _read(path: Path, display: str, relative: PurePosixPath) -> Source:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"{display}: {err.strerror}") from err
    text, encoding = _decode(data, display)
    return Source(display, text, path, relative, encoding)


def _decode(data: bytes, display: str) -> tuple[str, str]:
    try:
        return decode(data, display)
    except NotText as err:
        raise InputError(str(err)) from None


def parse_source(source: Source) -> ParsedFile:
    """Every document of `source`, parsed (for reading a whole file back; migrate itself
    reads through `open_source`, one document at a time)."""
    opened = open_source(source)
    return ParsedFile(source, opened.format, list(opened.documents()), opened.codec, opened.json_indent)


def open_source(source: Source) -> OpenedFile:
    stripped = source.text.lstrip()
    looks_json = stripped.startswith(("{", "[")) or (source.path is not None and source.path.suffix == ".json")
    if looks_json:
        parsed = _parse_json(source)
        if parsed is not None:
            return OpenedFile(source, Format.JSON, parsed.codec, parsed.json_indent, parsed=parsed.documents)
    return _open_yaml(source)


class _DuplicateKeys:
    """json's object_pairs_hook: Kubernetes' decoder rejects duplicate keys, where Python's json
    would silently keep the last; record them as the YAML reader does."""

    def __init__(self) -> None:
        self.found: list[tuple[str, bool]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                first = result[key]
                scalar = not isinstance(value, (dict, list)) and not isinstance(first, (dict, list))
                self.found.append((key, scalar and first == value))
                continue  # keep the first, as the YAML reader does
            result[key] = value
        return result


def _parse_json(source: Source) -> ParsedFile | None:
    """One JSON value, or a stream of them one after another (what `migrate -o json` writes for
    several files, and what kubectl reads)."""
    text = source.text
    decoder = json.JSONDecoder(object_pairs_hook=(hook := _DuplicateKeys()))
    documents: list[ParsedDocument] = []
    position = len(text) - len(text.lstrip())
    try:
        while position < len(text):
            line = text.count("\n", 0, position) + 1
            hook.found = []
            tree, end = decoder.raw_decode(text, position)
            deep = _too_deep(tree)
            if deep is not None:
                document = ParsedDocument(None, None, line, error=f"line {line}: nested deeper than {MAX_DEPTH} "
                                                                  f"levels ({_DEPTH_HINT})")
                return ParsedFile(source, Format.JSON, [document], YamlCodec())
            duplicates = [DuplicateKey(key, line, same) for key, same in hook.found]
            documents.append(ParsedDocument(None, tree, line, duplicates=duplicates))
            position = end + (len(text) - end - len(text[end:].lstrip()))
    except json.JSONDecodeError as err:
        if source.path is not None and source.path.suffix == ".json":
            document = ParsedDocument(None, None, err.lineno, error=f"line {err.lineno}: invalid JSON: {err.msg}")
            return ParsedFile(source, Format.JSON, [document], YamlCodec())
        return None  # maybe flow-style YAML: let the YAML parser decide
    except RecursionError:
        document = ParsedDocument(None, None, 1, error=f"line 1: nested deeper than {MAX_DEPTH} levels ({_DEPTH_HINT})")
        return ParsedFile(source, Format.JSON, [document], YamlCodec())
    except ValueError:  # not JSON's own error: Python's, for an integer too long to read (no reader can)
        found = number_too_long_in(text)
        if found is None:
            raise
        line, problem = found
        document = ParsedDocument(None, None, line, error=f"line {line}: {problem}")
        return ParsedFile(source, Format.JSON, [document], YamlCodec())
    if not documents:
        return None
    return ParsedFile(source, Format.JSON, documents, YamlCodec(), _json_indent(text))


_DEPTH_HINT = "no Kubernetes object nests this deep: check the file for a generator loop"


def _json_indent(text: str) -> int | str | None:
    for line in text.splitlines()[1:]:
        if line.strip():
            if line.startswith("\t"):
                return "\t"
            indent = len(line) - len(line.lstrip(" "))
            return indent or None
    return None


def _open_yaml(source: Source) -> OpenedFile:
    codec = YamlCodec(guess_indentation(source.text))
    chunks = split_stream(source.text)
    first = chunks[0]
    if not first.header:
        # A licence header stays at the top of the file when a document is inserted first.
        lead, rest = split_leading_comments(first.body)
        if lead and rest:
            rest_line = first.body_line + lead.count("\n")
            chunks[0:1] = [Chunk("", lead, "", first.body_line), Chunk("", rest, first.trailer, rest_line)]
    return OpenedFile(source, Format.YAML, codec, chunks=chunks)


def parse_chunk(codec: YamlCodec, chunk: Chunk) -> ParsedDocument:
    if is_blank(chunk.body):
        return ParsedDocument(chunk, None, chunk.body_line)
    outcome = codec.parse(chunk.parse_text)
    offset = chunk.parse_offset
    if outcome.error is not None:
        line = chunk.body_line + (max(outcome.error_line - 1 - offset, 0) if outcome.error_line else 0)
        return ParsedDocument(chunk, None, chunk.body_line, error=f"line {line}: {outcome.error}")
    duplicates = [
        DuplicateKey(d.key, chunk.body_line + d.line - 1 - offset, d.same_value) for d in outcome.duplicates
    ]
    return ParsedDocument(chunk, outcome.tree, _first_content_line(chunk), duplicates=duplicates)


def parse_for_text_edit(codec: YamlCodec, chunk: Chunk) -> ParsedDocument:
    """The document read by libyaml when fast_read takes it (a plain tree, kept with its nodes),
    else by ruamel (parse_chunk)."""
    if not chunk.directives and not is_blank(chunk.body):
        fast = read_fast(chunk.body)
        if fast is not None:
            return ParsedDocument(chunk, fast.tree, _first_content_line(chunk), fast=fast)
    return parse_chunk(codec, chunk)


def _first_content_line(chunk: Chunk) -> int:
    for offset, line in enumerate(chunk.body.splitlines()):
        if line.strip() and not line.lstrip().startswith("#"):
            return chunk.body_line + offset
    return chunk.body_line
