"""Turn applied documents back into text: YAML (untouched documents byte for byte, changed ones
dumped by ruamel with the file's indentation) or JSON (one object, or a List of several)."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from .apply import AppliedDocument
from .loader import Format, ParsedDocument, Source
from .stream import Chunk
from .yamlio import YamlCodec
from .nodes import to_plain, to_round_trip
from .objects import is_list


@dataclass(frozen=True)
class RenderedFile:
    source: Source
    text: str
    format: Format
    # Set when the requested format could not be produced (a document that did not parse
    # has no JSON form): the file is written as it was read, in YAML.
    fallback_reason: str | None = None
    # Documents written back unchanged because their rewrite could not be written faithfully.
    document_errors: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.text != self.source.text


def yaml_piece(codec: YamlCodec, newline: str, document: ParsedDocument, applied: AppliedDocument
               ) -> tuple[str, str | None]:
    """The text of one YAML document as migrate writes it (the new documents that go before it
    included), and the error when its rewrite could not be written (it is then written back
    exactly as read)."""

    def dump(tree: Any) -> str:
        text = codec.dump(tree)
        return text.replace("\n", newline) if newline != "\n" else text

    chunk = document.chunk
    assert chunk is not None  # YAML documents always keep their text
    pieces: list[str] = []
    for manifest in applied.documents_before:
        body = dump(to_round_trip(manifest))
        # Keep exactly one `---` between the new document and the one it precedes; a
        # document with directives must follow an explicitly ended one (`...`).
        if chunk.directives:
            pieces.append("---" + newline + body + "..." + newline)
        elif chunk.opens_with_marker:
            pieces.append("---" + newline + body)
        else:
            pieces.append(body + "---" + newline)
    error = applied.failed
    if error is None and applied.text is not None:
        pieces.append(chunk.header + applied.text + chunk.trailer)  # the body keeps its own `---`
        return "".join(pieces), None
    if error is None and applied.changed:
        # A `---` carrying content (`--- !!map`, `--- {...}`) was part of the body: the
        # dumped document needs its own marker back, or it would merge into the one before.
        marker = "---" + newline if not chunk.header and chunk.opens_with_marker else ""
        text = dump(document.tree)
        problem = _unfaithful(codec, chunk, text, document.tree)
        if problem is None:
            pieces.append(chunk.header + marker + text + chunk.trailer)
            return "".join(pieces), None
        error = (f"line {document.line}: the rewritten document could not be written back faithfully "
                 f"({problem}); it is left exactly as it was: please report this as a kubectl-gpu "
                 "bug with the document")
    pieces.append(chunk.text)
    return "".join(pieces), error


def _unfaithful(codec: YamlCodec, chunk: Chunk, text: str, tree: Any) -> str | None:
    """Why `text` (a dumped document) does not read back as `tree`, or None.  The YAML writer
    has corner cases (comments on flow-style items) where it writes text that parses as
    something else; a document holding such a construct is only ever replaced by text proven
    to mean the same (re-reading every document would cost more than the rewrite itself)."""
    if not _flow_with_comments(tree):
        return None
    outcome = codec.parse(chunk.directives + "---\n" + text if chunk.directives else text)
    if outcome.error is not None:
        return f"the YAML writer produced text that does not parse: {outcome.error}"
    if _comparable(outcome.tree) != _comparable(tree):
        return "the YAML writer produced text that reads back differently"
    return None


def _flow_with_comments(tree: Any) -> bool:
    """The tree holds a flow-style collection that carries or is followed by a comment: where
    ruamel's writer is known to go wrong (`- {name: proxy}  # sidecar` then a block item)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, (CommentedMap, CommentedSeq)):
            continue
        keys = node.keys() if isinstance(node, CommentedMap) else range(len(node))
        items = node.ca.items
        for key in keys:
            child = node[key]
            if isinstance(child, (CommentedMap, CommentedSeq)):
                if child.fa.flow_style() and (items.get(key) or child.ca.items or child.ca.comment):
                    return True
                stack.append(child)
    return False


def _comparable(node: Any) -> Any:
    if isinstance(node, dict):
        return {repr(_comparable(k)): _comparable(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_comparable(v) for v in node]
    if node is None or isinstance(node, bool):
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return repr(float(node))  # NaN equals itself this way
    return str(node)


def json_problem(document: ParsedDocument) -> str | None:
    """Why a document has no JSON form (a custom tag like `!Ref` or `!Sub` on a scalar, a list
    or a map, `!!binary`, `!!set`, a mapping used as a key, .nan), naming its line; None when
    it has one (or holds nothing)."""
    if document.tree is None:
        return None
    problem = _tagged_collection(document.tree) or _unjsonable(to_plain(document.tree))
    if problem is None:
        return None
    return f"the document at line {document.line} holds {problem}, which JSON cannot represent"


def _tagged_collection(tree: Any) -> str | None:
    """A list or map with an application tag (`!Sub [...]`, `!If {...}`): its plain form would
    silently drop the tag, so it has no faithful JSON form."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (CommentedMap, CommentedSeq)):
            tag = getattr(getattr(node, "tag", None), "value", None)
            if tag is not None and not tag.startswith("tag:yaml.org,2002:"):
                return f"a {'map' if isinstance(node, CommentedMap) else 'list'} tagged {tag}"
            stack.extend(node.values() if isinstance(node, CommentedMap) else node)
    return None


def _unjsonable(value: Any) -> str | None:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    return f"a {type(key).__name__} used as a key"
                stack.append(item)
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, float):
            if node != node or node in (float("inf"), float("-inf")):
                return f"the number {node!r}"
        elif not (node is None or isinstance(node, (str, int, bool))):
            tag = getattr(getattr(node, "tag", None), "value", None) or type(node).__name__
            return f"a value tagged {tag}" if tag.startswith("!") else f"a {tag} value"
    return None


def json_text(units: list[Any], indent: int | str | None) -> str:
    if len(units) == 1:
        value = units[0]
    else:
        items: list[Any] = []
        for unit in units:
            items.extend(unit["items"] if is_list(unit) else [unit])
        value = {"apiVersion": "v1", "kind": "List", "items": items}
    text = json.dumps(value, indent=indent if indent is not None else 2, ensure_ascii=False) + "\n"
    # A lone surrogate (YAML's "\ud800" escape) cannot be written as UTF-8; RFC 8259 spells any
    # code unit \uXXXX, and a surrogate can only stand inside a JSON string.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if not text.isascii() else text


_SURROGATE = re.compile("[\ud800-\udfff]")


def yaml_of_unit(codec: YamlCodec, unit: Any) -> str:
    return codec.dump(to_round_trip(unit))


def unified_diff(rendered: RenderedFile) -> str:
    before = rendered.source.text.splitlines(keepends=True)
    after = rendered.text.splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, rendered.source.display, rendered.source.display + " (migrated)")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
