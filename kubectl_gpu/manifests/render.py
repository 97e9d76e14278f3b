"""Turn an applied file back into text: YAML (untouched documents byte for byte, changed ones
dumped by ruamel with the file's indentation) or JSON (one object, or a List of several)."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

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

    @property
    def changed(self) -> bool:
        return self.text != self.source.text


def render_file(applied: AppliedFile, output_format: Format | None = None) -> RenderedFile:
    parsed = applied.plan.file
    wanted = output_format or parsed.format
    unchanged = not applied.changed_documents and not applied.documents_before
    if wanted is parsed.format and unchanged:
        return RenderedFile(parsed.source, parsed.source.text, wanted)
    if wanted is Format.JSON:
        broken = [d for d in parsed.documents if d.error is not None]
        if broken:
            reason = f"not written as JSON: a document did not parse ({broken[0].error})"
            if parsed.format is Format.YAML:
                return RenderedFile(parsed.source, _yaml_of_yaml(applied), Format.YAML, reason)
            return RenderedFile(parsed.source, parsed.source.text, Format.JSON, reason)
        return RenderedFile(parsed.source, _json_text(_units(applied), parsed.json_indent), Format.JSON)
    if parsed.format is Format.YAML:
        return RenderedFile(parsed.source, _yaml_of_yaml(applied), Format.YAML)
    if any(d.error is not None for d in parsed.documents):
        return RenderedFile(parsed.source, parsed.source.text, Format.JSON,
                            "not written as YAML: the JSON did not parse")
    return RenderedFile(parsed.source, _yaml_of_units(parsed, _units(applied)), Format.YAML)


def _yaml_of_yaml(applied: AppliedFile) -> str:
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
            # Keep exactly one `---` between the new document and the one it precedes.
            pieces.append("---" + newline + body if chunk.header else body + "---" + newline)
        if index in applied.changed_documents:
            pieces.append(chunk.header + dump(document.tree) + chunk.trailer)
        else:
            pieces.append(chunk.text)
    return "".join(pieces)


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
