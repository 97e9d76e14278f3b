"""The change report migrate prints on stderr: per file and object, what changed and why,
what needs a person's attention, and totals.  Rich colours on a terminal, plain text
otherwise (rich drops styling by itself when stderr is not a TTY)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from kubectl_gpu.core import Severity
from kubectl_gpu.prose import wrapped

from . import FileResult, MigrationResult
from .objects import ObjectRef
from .output import WriteReport

_STYLE = {Severity.INFO: "green", Severity.WARNING: "yellow", Severity.ERROR: "bold red"}


@dataclass(frozen=True)
class Totals:
    files: int
    objects: int
    changed_files: int
    templates_migrated: int
    objects_added: int
    quotas_changed: int
    versions_changed: int
    warnings: int
    errors: int


def totals(result: MigrationResult) -> Totals:
    warnings = errors = 0
    for file in result.files:
        for severity in _severities(file):
            warnings += severity is Severity.WARNING
            errors += severity is Severity.ERROR
    return Totals(
        files=len(result.files),
        objects=sum(len(f.plan.objects) + f.plan.objects_passed for f in result.files),
        changed_files=sum(f.changed for f in result.files),
        templates_migrated=sum(t.changed for f in result.files for t in f.plan.templates),
        objects_added=sum(len(f.plan.emissions) for f in result.files),
        quotas_changed=sum(q.changed for f in result.files for q in f.plan.quotas),
        versions_changed=sum(len(f.plan.conversions) for f in result.files),
        warnings=warnings,
        errors=errors,
    )


def _severities(file: FileResult) -> Iterable[Severity]:
    plan = file.plan
    yield from (n.severity for t in plan.templates for n in t.notes)
    yield from (n.severity for n in plan.object_notes)
    yield from (n.severity for q in plan.quotas for n in q.notes)
    yield from (n.severity for c in plan.conversions for n in c.notes)
    yield from (i.severity for i in plan.issues)
    if file.rendered.fallback_reason:
        yield Severity.ERROR
    for _ in file.rendered.document_errors:
        yield Severity.ERROR


def print_report(result: MigrationResult, console: Console, written: bool = True, quiet: bool = False) -> None:
    """``written``: False for --check and --diff, which write no manifest, so the report says what
    would change.  A warning whose words recur (the same --sharing consequence in 600 files) is
    printed once, where it first occurs, with its count ("(x600)").  ``quiet`` (-q): only the
    errors, each under its file and object, and no totals."""
    # Each file's notes are gathered once: counting the repeats needs them all before the first is printed.
    groups = [list(_file_lines(file)) for file in result.files]
    repeats = Counter(text for file_groups in groups for _, lines in file_groups
                      for _, severity, text in lines if severity is Severity.WARNING)
    shown: set[str] = set()
    width = console.width if console.is_terminal else None
    for file, file_groups in zip(result.files, groups):
        lines = _kept(file_groups, repeats, shown, quiet, width)
        if lines:
            console.print(f"[bold]{escape(file.rendered.source.display)}[/bold]{_file_status(file, written)}")
            for line in lines:
                console.print(line)
    if quiet:
        return
    t = totals(result)
    migrated, added = ("migrated", "added") if written else ("to migrate", "to add")
    console.print(
        f"[bold]{t.files} file(s), {t.changed_files} changed:[/bold] {t.objects} object(s) read, "
        f"{t.templates_migrated} pod template(s) {migrated}, {t.objects_added} DRA object(s) {added}, "
        + (f"{t.quotas_changed} quota object(s) given DRA caps, " if t.quotas_changed else "")
        + (f"{t.versions_changed} DRA object(s) rewritten to a served version, " if t.versions_changed else "") +
        f"[{_STYLE[Severity.WARNING]}]{t.warnings} warning(s)[/], [{_STYLE[Severity.ERROR]}]{t.errors} error(s)[/]"
    )


# One line of a file's report: its indent, its severity (None: what changed, not a note) and its
# text (a note's as written; the others' rich markup).
_Line = tuple[int, "Severity | None", str]


def _kept(groups: Iterable[tuple[str | None, list[_Line]]], repeats: Counter[str], shown: set[str],
          quiet: bool, width: int | None) -> list[str]:
    """The lines to print of one file's groups (see print_report).  On a terminal (``width``) a note
    is wrapped to it, the lines after the first indented under its text, words never split (as the
    findings of describe and doctor); on a pipe each note stays one line."""
    out: list[str] = []
    for header, entries in groups:
        kept = []
        for indent, severity, text in entries:
            if quiet and severity is not Severity.ERROR:
                continue
            if severity is Severity.WARNING and repeats[text] > 1:
                if text in shown:
                    continue
                shown.add(text)
                text += f" (x{repeats[text]})"
            if severity is None:
                kept.append(f"{' ' * indent}{text}")
                continue
            lead = f"{' ' * indent}{severity.value}: "
            first, *rest = wrapped(lead + text, width, " " * len(lead))
            kept.append(f"{' ' * indent}[{_STYLE[severity]}]{severity.value}:[/] {escape(first[len(lead):])}")
            kept.extend(escape(line) for line in rest)
        if quiet and not kept:
            continue
        if header is not None:
            out.append(header)
        out.extend(kept)
    return out


def _file_status(file: FileResult, written: bool = True) -> str:
    if file.not_migrated:
        return " [bold red](not fully migrated)[/]" if written else " [bold red](cannot be fully migrated)[/]"
    if file.changed:
        return " [green](migrated)[/]" if written else " [yellow](would be migrated)[/]"
    return " (unchanged)"


def _line(indent: int, severity: Severity, text: str) -> str:
    return f"{' ' * indent}[{_STYLE[severity]}]{severity.value}:[/] {escape(text)}"


def _note(indent: int, severity: Severity, text: str) -> _Line:
    return indent, severity, text


def _file_lines(file: FileResult) -> Iterable[tuple[str | None, list[_Line]]]:
    """The file's report in groups: (the object's line, or None for the file's own notes; its lines)."""
    plan = file.plan
    own = [_note(2, issue.severity, issue.message) for issue in plan.issues]
    if file.rendered.fallback_reason:
        own.append(_note(2, Severity.ERROR, file.rendered.fallback_reason))
    own.extend(_note(2, Severity.ERROR, error) for error in file.rendered.document_errors)
    yield None, own
    by_object: dict[ObjectRef, list[_Line]] = {}
    for template in plan.templates:
        if not template.notes and not template.changed:
            continue
        lines = by_object.setdefault(template.obj, [])
        where = template.site.pointer or "/"
        status = "rewritten" if template.changed else "not changed"
        lines.append((4, None, f"{escape(template.site.label)} {escape(where)}: {status}"))
        lines.extend(_note(6, note.severity, note.render()) for note in template.notes)
    for quota in plan.quotas:
        lines = by_object.setdefault(quota.obj, [])
        lines.append((4, None, f"quota: {'added ' + escape(', '.join(quota.added)) if quota.changed else 'not changed'}"))
        lines.extend(_note(6, note.severity, note.render()) for note in quota.notes)
    for conversion in plan.conversions:
        lines = by_object.setdefault(conversion.obj, [])
        lines.append((4, None, f"apiVersion: {escape(conversion.source)} -> {escape(conversion.target)}"))
        lines.extend(_note(6, note.severity, note.render()) for note in conversion.notes)
    for note in plan.object_notes:
        by_object.setdefault(note.obj, []).append(_note(4, note.severity, note.message))
    for emission in plan.emissions:
        where = f"{emission.namespace}/" if emission.namespace else ""
        by_object.setdefault(emission.before, []).append(
            (4, None, f"[cyan]+ {emission.kind} {escape(where + emission.name)}[/] added before it"))
    for obj, lines in by_object.items():
        yield f"  [bold]{escape(obj.label)}[/]", lines


def print_write_failures(writes: WriteReport, console: Console, quiet: bool = False) -> None:
    """Which files were written and which were not (each one whole or not at all); ``quiet``: only
    those that were not."""
    for path, reason in writes.failed:
        console.print(_line(0, Severity.ERROR, f"{path}: not written ({reason}); it is left as it was"))
    if quiet:
        return
    if writes.written:
        console.print(f"written: {escape(', '.join(str(p) for p in writes.written))}")
    console.print(f"[bold]{len(writes.written)} file(s) written, {len(writes.failed)} not written[/bold]")
