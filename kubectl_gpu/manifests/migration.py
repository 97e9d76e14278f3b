"""Migrate a file one document at a time: parse -> plan -> apply -> write -> drop.

A long YAML stream never holds more than one document's tree: each document's text comes out
(`FileMigration.pieces`) as soon as it is done, so `kubectl gpu migrate big/ | head -1` prints
at once and memory stays flat.  What a file's output depends on beyond one document is known
before it starts (the DRA objects the inputs already hold: plan.existing_dra_objects) or only
decided at the file's end, from small facts: JSON output (one JSON value per file: the plain
values are kept, not the trees), and whether the file changed at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .apply import AppliedDocument, apply_as_text, apply_document
from .loader import Format, ParsedDocument, Source, parse_chunk, open_source
from .nodes import to_plain
from .passthrough import objects_in
from .plan import Emission, FilePlan, Planner
from .serialize import RenderedFile, json_problem, json_text, yaml_of_unit, yaml_piece
from .stream import Chunk


@dataclass(frozen=True)
class FileResult:
    plan: FilePlan
    rendered: RenderedFile

    @property
    def changed(self) -> bool:
        return self.rendered.changed

    @property
    def not_migrated(self) -> bool:
        return (self.plan.not_migrated or self.rendered.fallback_reason is not None
                or bool(self.rendered.document_errors))


class FileMigration:
    """One input file, migrated document by document.  Iterate `pieces()` for the output text
    as it is produced (YAML written as YAML streams per document; anything written as JSON, or
    kept whole because it cannot be written as asked, comes as one piece at the end); then
    `result` holds the plan and the whole rendered text."""

    def __init__(self, source: Source, planner: Planner, output_format: Format | None = None) -> None:
        self.source = source
        self.planner = planner
        self.output_format = output_format
        self.documents = 0  # read so far (progress)
        self.format: Format | None = None  # what the output is written as, once the first piece is out
        self._result: FileResult | None = None

    @property
    def result(self) -> FileResult:
        if self._result is None:
            for _ in self.pieces():
                pass
        assert self._result is not None
        return self._result

    def pieces(self) -> Iterator[str]:
        if self._result is not None:
            yield self._result.rendered.text
            return
        opened = open_source(self.source)
        plan = FilePlan(self.source, opened.format)
        wanted = self.output_format or opened.format
        newline = "\r\n" if "\r\n" in self.source.text else "\n"
        # Every kind of output is built as it goes; only the one that is written is kept.
        streamed: list[str] = []  # YAML text (of YAML input; also the fallback when JSON is impossible)
        units: list[Any] = []  # plain values, for JSON output or YAML of JSON input
        errors: list[str] = []
        broken: str | None = None  # the first document that did not parse
        unjsonable: str | None = None
        touched = False  # some document was rewritten, failed, or got a new document before it
        stream_yaml = opened.format is Format.YAML and wanted is Format.YAML
        if stream_yaml:
            self.format = Format.YAML
        if opened.format is Format.JSON:
            broken = next((d.error for d in opened.parsed or () if d.error is not None), None)

        # Written as read, a document that names nothing migrate reacts to need not be parsed.
        unread = self.planner.unread if stream_yaml else None
        documents = opened.documents_to_rewrite(unread) if stream_yaml else opened.documents()
        for index, document in enumerate(documents):
            self.documents += 1
            if isinstance(document, Chunk):
                # Names nothing migrate rewrites or reports (passthrough.py): its bytes, unread.
                plan.objects_passed += objects_in(document)
                yield document.text
                streamed.append(document.text)
                continue
            first_template, first_emission = len(plan.templates), len(plan.emissions)
            first_quota, first_conversion = len(plan.quotas), len(plan.conversions)
            self.planner.plan_document(plan, index, document)
            changes = [*plan.templates[first_template:], *plan.quotas[first_quota:],
                       *plan.conversions[first_conversion:]]
            emitted = plan.emissions[first_emission:]
            applied: AppliedDocument | None = None
            if document.fast is not None:
                applied = apply_as_text(document, changes, emitted, opened.codec.indentation, newline)
                if applied is None:  # not as text: the same plan, on ruamel's tree of the same text
                    document, applied = _read_by_ruamel(opened.codec, document, emitted)
            if applied is None:
                applied = (apply_document(document, opened.format, changes, emitted) if document.tree is not None
                           else AppliedDocument())
            touched = touched or applied.changed or bool(applied.documents_before) or applied.failed is not None
            if opened.format is Format.YAML:
                piece, error = yaml_piece(opened.codec, newline, document, applied)
                if error is not None:
                    errors.append(error)
                    if applied.changed and document.chunk is not None:
                        # Partly patched: what is written (JSON too) is the document as read.
                        document = parse_chunk(opened.codec, document.chunk)
                if stream_yaml:
                    yield piece
                streamed.append(piece)
                if wanted is Format.JSON:
                    broken = broken or document.error
                    unjsonable = unjsonable or json_problem(document)
            elif applied.failed is not None:
                errors.append(applied.failed)
            if wanted is Format.JSON or opened.format is Format.JSON:
                units.extend(applied.documents_before)
                if document.tree is not None:
                    # A JSON tree is plain already (and its strings are strings: "yes" stays text).
                    units.append(to_plain(document.tree) if opened.format is Format.YAML else document.tree)
            # The document (and its tree) is dropped here.

        rendered = self._render(opened.format, wanted, opened.codec, opened.json_indent, streamed, units, errors,
                                broken, unjsonable, touched)
        self._result = FileResult(plan, rendered)
        self.format = rendered.format
        if not stream_yaml:
            yield rendered.text

    def _render(self, read: Format, wanted: Format, codec: Any, json_indent: int | str | None, streamed: list[str],
                units: list[Any], errors: list[str], broken: str | None, unjsonable: str | None,
                touched: bool) -> RenderedFile:
        source = self.source
        problems = tuple(errors)
        if read is Format.YAML and wanted is Format.YAML:
            return RenderedFile(source, "".join(streamed), Format.YAML, None, problems)
        if read is Format.JSON:
            if broken is not None:
                reason = ("not written as JSON: a document did not parse (" + broken + ")"
                          if wanted is Format.JSON else "not written as YAML: the JSON did not parse")
                return RenderedFile(source, source.text, Format.JSON, reason)
            if wanted is Format.JSON:
                if not touched:
                    return RenderedFile(source, source.text, Format.JSON, None, problems)
                return RenderedFile(source, json_text(units, json_indent), Format.JSON, None, problems)
            return RenderedFile(source, "---\n".join(yaml_of_unit(codec, unit) for unit in units), Format.YAML,
                                None, problems)
        # YAML read, JSON wanted.
        if broken is not None:
            return RenderedFile(source, "".join(streamed), Format.YAML,
                                f"not written as JSON: a document did not parse ({broken})", problems)
        if unjsonable is not None:
            return RenderedFile(source, "".join(streamed), Format.YAML,
                                f"not written as JSON: {unjsonable}; written as YAML instead", problems)
        return RenderedFile(source, json_text(units, json_indent), Format.JSON, None, problems)


def _read_by_ruamel(codec: Any, document: ParsedDocument, emitted: list[Emission]
                    ) -> tuple[ParsedDocument, AppliedDocument | None]:
    """The document read again by ruamel, for apply_document; libyaml read it, so ruamel refusing
    it is a disagreement between the two readers: the document is then written back as read."""
    assert document.chunk is not None
    again = parse_chunk(codec, document.chunk)
    if again.tree is not None:
        return again, None
    return document, AppliedDocument(
        documents_before=[emission.manifest for emission in emitted],
        failed=(f"line {document.line}: the rewrite could not be applied to this document (ruamel could not read "
                f"it: {again.error}); it is left exactly as it was: please report this as a kubectl-gpu bug "
                "with the document"))
