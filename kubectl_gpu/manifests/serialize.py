"""Turn an applied file back into text: YAML (untouched documents byte for byte, changed ones
dumped by ruamel with the file's indentation) or JSON (one object, or a List of several)."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from .apply import AppliedFile
from .loader import Format, ParsedFile, Source
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


def render_file(applied: AppliedFile, output_format: Format | None = None) -> RenderedFile:
    parsed = applied.plan.file
    wanted = output_format or parsed.format
    unchanged = not applied.changed_documents and not applied.documents_before and not applied.failed_documents
    if wanted is parsed.format and unchanged:
        return RenderedFile(parsed.source, parsed.source.text, wanted)
    if wanted is Format.JSON:
        broken = [d for d in parsed.documents if d.error is not None]
        if broken:
            reason = f"not written as JSON: a document did not parse ({broken[0].error})"
            if parsed.format is Format.YAML:
                return RenderedFile(parsed.source, _yaml_of_yaml(applied), Format.YAML, reason)
            return RenderedFile(parsed.source, parsed.source.text, Format.JSON, reason)
        units = _units(applied)
        unjsonable = _json_problem(applied)
        if unjsonable is not None:
            reason = f"not written as JSON: {unjsonable}; written as YAML instead"
            if parsed.format is Format.YAML:
                errors: list[str] = []
                return RenderedFile(parsed.source, _yaml_of_yaml(applied, errors), Format.YAML, reason, tuple(errors))
            return RenderedFile(parsed.source, parsed.source.text, Format.JSON, reason)
        return RenderedFile(parsed.source, _json_text(units, parsed.json_indent), Format.JSON)
    if parsed.format is Format.YAML:
        errors: list[str] = []
        return RenderedFile(parsed.source, _yaml_of_yaml(applied, errors), Format.YAML, None, tuple(errors))
    if any(d.error is not None for d in parsed.documents):
        return RenderedFile(parsed.source, parsed.source.text, Format.JSON,
                            "not written as YAML: the JSON did not parse")
    return RenderedFile(parsed.source, _yaml_of_units(parsed, _units(applied)), Format.YAML)


def _yaml_of_yaml(applied: AppliedFile, errors: list[str] | None = None) -> str:
    parsed = applied.plan.file
    # ruamel writes "\n"; a file written with Windows line endings keeps them.
    newline = "\r\n" if "\r\n" in parsed.source.text else "\n"

    def dump(tree: Any) -> str:
        text = parsed.codec.dump(tree)
        return text.replace("\n", newline) if newline != "\n" else text

    pieces: list[str] = []
    for index, document in enumerate(parsed.documents):
        chunk = document.chunk
        assert chunk is not None  # YAML documents always keep their text
        for manifest in applied.documents_before.get(index, []):
            body = dump(to_round_trip(manifest))
            # Keep exactly one `---` between the new document and the one it precedes; a
            # document with directives must follow an explicitly ended one (`...`).
            if chunk.directives:
                pieces.append("---" + newline + body + "..." + newline)
            elif chunk.opens_with_marker:
                pieces.append("---" + newline + body)
            else:
                pieces.append(body + "---" + newline)
        if index in applied.failed_documents:
            if errors is not None:
                errors.append(applied.failed_documents[index])
            pieces.append(chunk.text)
        elif index in applied.changed_documents:
            # A `---` carrying content (`--- !!map`, `--- {...}`) was part of the body: the
            # dumped document needs its own marker back, or it would merge into the one before.
            marker = "---" + newline if not chunk.header and chunk.opens_with_marker else ""
            text = dump(document.tree)
            problem = _unfaithful(parsed, chunk, text, document.tree)
            if problem is None:
                pieces.append(chunk.header + marker + text + chunk.trailer)
                continue
            if errors is not None:
                errors.append(f"line {document.line}: the rewritten document could not be written back faithfully "
                              f"({problem}); it is left exactly as it was: please report this as a kubectl-gpu "
                              "bug with the document")
            pieces.append(chunk.text)
        else:
            pieces.append(chunk.text)
    return "".join(pieces)


def _unfaithful(parsed: ParsedFile, chunk: Any, text: str, tree: Any) -> str | None:
    """Why `text` (a dumped document) does not read back as `tree`, or None.  The YAML writer
    has corner cases (comments on flow-style items) where it writes text that parses as
    something else; a document holding such a construct is only ever replaced by text proven
    to mean the same (re-reading every document would cost more than the rewrite itself)."""
    if not _flow_with_comments(tree):
        return None
    outcome = parsed.codec.parse(chunk.directives + "---\n" + text if chunk.directives else text)
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


def _json_problem(applied: AppliedFile) -> str | None:
    """Why some document has no JSON form (a custom tag like `!Ref`, `!!binary`, `!!set`, a
    mapping used as a key, .nan), naming the document; None when all of them have one."""
    for document in applied.plan.file.documents:
        if document.tree is None:
            continue
        problem = _unjsonable(to_plain(document.tree))
        if problem is not None:
            return f"the document at line {document.line} holds {problem}, which JSON cannot represent"
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


def _units(applied: AppliedFile) -> list[Any]:
    """The file's top-level values, plain, with new objects in place."""
    units: list[Any] = []
    for index, document in enumerate(applied.plan.file.documents):
        units.extend(applied.documents_before.get(index, []))
        if document.tree is not None:
            units.append(to_plain(document.tree))
    return units


def _json_text(units: list[Any], indent: int | str | None) -> str:
    if len(units) == 1:
        value = units[0]
    else:
        items: list[Any] = []
        for unit in units:
            items.extend(unit["items"] if is_list(unit) else [unit])
        value = {"apiVersion": "v1", "kind": "List", "items": items}
    return json.dumps(value, indent=indent if indent is not None else 2, ensure_ascii=False) + "\n"


def _yaml_of_units(parsed: ParsedFile, units: list[Any]) -> str:
    return "---\n".join(parsed.codec.dump(to_round_trip(unit)) for unit in units)


def unified_diff(rendered: RenderedFile) -> str:
    before = rendered.source.text.splitlines(keepends=True)
    after = rendered.text.splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, rendered.source.display, rendered.source.display + " (migrated)")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
