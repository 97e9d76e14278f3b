"""ruamel.yaml round-trip parsing and dumping of single documents.

Only documents that migrate changes are ever dumped; everything else is written back as
the exact text that was read, so ruamel's few normalisations (indentation, trailing
spaces) touch only what had to change anyway.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.emitter import RoundTripEmitter
from ruamel.yaml.scanner import RoundTripScanner, ScannerError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

from kubectl_gpu.input_text import number_too_long

from .nodes import reads_otherwise_in_yaml11


@dataclass(frozen=True)
class Indentation:
    """ruamel's `YAML.indent(mapping, sequence, offset)`, guessed from a file's text."""

    mapping: int = 2
    sequence: int = 2
    offset: int = 0


@dataclass(frozen=True)
class DuplicateKey:
    key: str
    line: int  # 1-based, within the parsed text
    same_value: bool  # both occurrences hold the same scalar


@dataclass
class ParseOutcome:
    tree: Any = None
    error: str | None = None
    error_line: int | None = None  # 1-based, within the parsed text
    duplicates: list[DuplicateKey] = field(default_factory=list)


class _ValueDoesNotFitTag(Exception):
    """A core tag on a value it cannot hold (`!!int abc`, `!!bool linux`, `!!omap 1`), at a line."""

    def __init__(self, line: int, node: Any) -> None:
        tag = str(getattr(node.tag, "value", node.tag) or "").replace("tag:yaml.org,2002:", "!!")
        value = node.value if isinstance(node.value, str) else f"a {node.id}"
        super().__init__(f"{tag} cannot hold {value!r}" if isinstance(node.value, str) else f"{tag} cannot hold {value}")
        self.line = line
        # A plain integer longer than Python reads has no tag to remove: say what to change instead.
        self.too_long = number_too_long(node.value) if tag == "!!int" and isinstance(node.value, str) else None


# What ruamel's constructors raise for a value that does not fit its tag.
_CONSTRUCTOR_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError)


class _TrackingConstructor(RoundTripConstructor):
    """Records duplicate keys instead of failing on the first one: Kubernetes' own decoder
    rejects them too, but identical duplicates (a copy-paste slip) are harmless to keep once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.duplicates: list[DuplicateKey] = []

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        # The node being built knows its line; ruamel's own error for it does not.
        try:
            return super().construct_object(node, deep=deep)
        except _ValueDoesNotFitTag:
            raise
        except _CONSTRUCTOR_ERRORS as exc:
            raise _ValueDoesNotFitTag(node.start_mark.line + 1, node) from exc

    def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
        if key in mapping:
            first = mapping.get(key)
            scalar = not isinstance(value, (dict, list)) and not isinstance(first, (dict, list))
            self.duplicates.append(
                DuplicateKey(str(key), key_node.start_mark.line + 1, scalar and first == value)
            )
            return False  # keep the first occurrence
        return True


class _FlowItemEmitter(RoundTripEmitter):
    """ruamel's emitter with one fix.  `no_newline` means "directly after `- `: the next block key
    goes on this line"; a flow collection written there (`- {name: proxy}  # sidecar`) uses that
    place but leaves the flag set, so after a comment under a commented key the next item's
    second key is glued onto its first line (`- name: c image: x`, which is invalid YAML)."""

    def expect_flow_sequence(self, *args: Any, **kwargs: Any) -> None:
        self.no_newline = False
        super().expect_flow_sequence(*args, **kwargs)

    def expect_flow_mapping(self, *args: Any, **kwargs: Any) -> None:
        self.no_newline = False
        super().expect_flow_mapping(*args, **kwargs)


class _BoundedScanner(RoundTripScanner):
    """ruamel's scanner, linear in nesting depth.  It keeps one possible simple key per open
    flow collection and goes through all of them before every token, so `[[[...]]]` costs
    depth² (300 levels: 0.6 s per parse).  Collections nested deeper than MAX_DEPTH are refused
    where they open, and only the oldest key is looked at when that answers for all."""

    def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:  # noqa: N803 - ruamel's name
        if self.flow_level >= MAX_DEPTH:
            raise ScannerError(None, None, _TOO_DEEP, self.reader.get_mark())
        super().fetch_flow_collection_start(TokenClass, to_push)

    # Keys are saved in the order of their position (a key saved again is removed first): the
    # first one in the table is the oldest, with the smallest token number.

    def next_possible_simple_key(self) -> Any:
        keys = self.possible_simple_keys
        return next(iter(keys.values())).token_number if keys else None

    def stale_possible_simple_keys(self) -> None:
        # When the oldest key is on this line and within 1024 characters, every other one is too.
        # Asked before every token: no key (most of a block document) is answered without a call.
        keys = self.possible_simple_keys
        if not keys:
            return
        oldest = next(iter(keys.values()))
        if oldest.line == self.reader.line and self.reader.index - oldest.index <= 1024:
            return
        super().stale_possible_simple_keys()


class YamlCodec:
    """One configured ruamel instance for one file (its indentation)."""

    def __init__(self, indentation: Indentation = Indentation()) -> None:
        self.indentation = indentation
        self._yaml = YAML(typ="rt")
        self._yaml.Constructor = _TrackingConstructor
        self._yaml.Emitter = _FlowItemEmitter
        self._yaml.Scanner = _BoundedScanner
        self._yaml.allow_duplicate_keys = True
        self._yaml.preserve_quotes = True
        self._yaml.width = 1 << 16  # never fold long lines the author wrote on one line
        self._yaml.indent(
            mapping=indentation.mapping, sequence=indentation.sequence, offset=indentation.offset
        )

    def parse(self, text: str) -> ParseOutcome:
        constructor = self._yaml.constructor
        constructor.duplicates = []
        try:
            tree = self._yaml.load(text)
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            if exc.context_mark is not None and mark is not None and mark.line >= text.count("\n"):
                # Found only at the end of the text (an unclosed bracket or quote): the line
                # where the unfinished construct starts is the one to fix.
                mark = exc.context_mark
            line = mark.line + 1 if mark is not None else None
            what = "; ".join(part for part in (exc.context, exc.problem) if part) or str(exc)
            return ParseOutcome(error=_one_line(what), error_line=line)
        except YAMLError as exc:
            return ParseOutcome(error=_one_line(str(exc)))
        except RecursionError:
            return ParseOutcome(error=f"nested deeper than {MAX_DEPTH} levels; no Kubernetes object does "
                                      "(check the generator that wrote it)")
        except _ValueDoesNotFitTag as exc:
            if exc.too_long:
                return ParseOutcome(error=exc.too_long, error_line=exc.line)
            return ParseOutcome(error=f"a value does not fit its tag ({_one_line(str(exc))}); remove the tag or "
                                      "fix the value", error_line=exc.line)
        except _CONSTRUCTOR_ERRORS as exc:
            # Raised while a collection is filled in, after its node was left: no line.
            return ParseOutcome(error=f"a value does not fit its tag ({type(exc).__name__}: {_one_line(str(exc))}); "
                                      "remove the tag or fix the value")
        finally:
            self._yaml.doc_infos.clear()  # one per load otherwise: grows with the stream
            # A `%YAML`/`%TAG` directive read here must not leak into the next document or into
            # dumps: the renderer writes each document's own directives back in its header.
            self._yaml._version = None
            self._yaml.tags = None
        line = _too_deep(tree)
        if line is not None:
            return ParseOutcome(error=f"nested deeper than {MAX_DEPTH} levels; no Kubernetes object does "
                                      "(check the generator that wrote it)", error_line=line)
        return ParseOutcome(tree=tree, duplicates=list(constructor.duplicates))

    def dump(self, tree: Any) -> str:
        out = io.StringIO()
        self._yaml.dump(tree, out)
        return out.getvalue()


# The YAML 1.2 resolver the round-trip reader and writer use: what a plain scalar reads as.
RESOLVER = VersionedResolver(version=(1, 2))
STR_TAG = "tag:yaml.org,2002:str"


def resolve_plain(text: str) -> str:
    """The tag ruamel gives `text` written plain (`tag:yaml.org,2002:int` for `12`)."""
    return RESOLVER.resolve(ScalarNode, text, (True, False))


class _ScalarAnalyser(RoundTripEmitter):
    """Only for `analyze_scalar`: which styles ruamel's writer allows for a string (YAML 1.2, as
    the codec writes; the emitter otherwise asks its serializer for the version)."""

    serializer = SimpleNamespace(use_version=None)


_ANALYSER = _ScalarAnalyser(None, allow_unicode=True)


def written_scalar(value: Any, *, key: bool = False, flow: bool = False) -> str | None:
    """The text the codec's writer gives a plain value a patch brings in (a string, integer or
    boolean; in block context, or inside a flow collection), or None where that would not be one
    line written plain or in single quotes (double quotes, a block scalar, a float or null: left to
    the writer itself).  Follows ruamel's Emitter.choose_scalar_style, and to_round_trip's quoting
    of YAML 1.1 words."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if type(value) is not str:
        return None
    analysis = _ANALYSER.analyze_scalar(value)
    if not reads_otherwise_in_yaml11(value) and resolve_plain(value) == STR_TAG:
        plain = analysis.allow_flow_plain if flow else analysis.allow_block_plain
        if plain and not (key and (analysis.empty or analysis.multiline)):
            return value
        if "'" in value or "\n" in value:
            return None  # ruamel writes it double-quoted
    if analysis.allow_single_quoted and not analysis.multiline:
        return "'" + value.replace("'", "''") + "'"
    return None


# Kubernetes objects nest a few dozen levels (a CRD's OpenAPI schema the most); the readers
# and writers here recurse once or more per level, so depth is bounded well below Python's limit.
MAX_DEPTH = 100
_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels; no Kubernetes object does (check the generator that wrote it)"


def _too_deep(tree: Any) -> int | None:
    """The 1-based line of a collection nested deeper than MAX_DEPTH, or None (iterative: a deep
    tree must not exhaust the stack while being checked)."""
    stack: list[tuple[Any, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = list(node.values())
        elif isinstance(node, list):
            children = list(node)
        else:
            continue
        if depth > MAX_DEPTH:
            line = getattr(getattr(node, "lc", None), "line", None)
            return line + 1 if isinstance(line, int) else 1
        stack.extend((child, depth + 1) for child in children)
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


_KEY_ONLY = re.compile(r"^( *)(?:- +)?[^\s#][^#]*:[ \t]*(?:#.*)?$")
_DASH = re.compile(r"^( *)-( +)\S")


def guess_indentation(text: str) -> Indentation:
    """The most common mapping indent and sequence dash offset in `text` (ruamel cannot keep
    a mix; the majority style is what most of the file looks like)."""
    mapping_votes: Counter[int] = Counter()
    offset_votes: Counter[tuple[int, int]] = Counter()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for current, following in zip(lines, lines[1:]):
        match = _KEY_ONLY.match(current)
        if not match:
            continue
        key_indent = len(match.group(1))
        if current.lstrip().startswith("-"):
            key_indent = len(current) - len(current.lstrip("- "))
        next_indent = len(following) - len(following.lstrip(" "))
        dash = _DASH.match(following)
        if dash:
            offset = next_indent - key_indent
            if offset >= 0:
                offset_votes[(offset, offset + 1 + len(dash.group(2)))] += 1
        elif next_indent > key_indent:
            mapping_votes[next_indent - key_indent] += 1
    mapping = mapping_votes.most_common(1)[0][0] if mapping_votes else 2
    offset, sequence = offset_votes.most_common(1)[0][0] if offset_votes else (0, 2)
    return Indentation(mapping=mapping, sequence=max(sequence, offset + 2), offset=offset)
