"""The change report migrate prints on stderr: per file and object, what changed and why,
what needs a person's attention, and totals.  Rich colours on a terminal, plain text
otherwise (rich drops styling by itself when stderr is not a TTY)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from kubectl_gpu.core import Severity

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


def print_report(result: MigrationResult, console: Console, written: bool = True) -> None:
    """``written``: False for --check and --diff, which write no manifest, so the report says what
    would change."""
    for file in result.files:
        lines = list(_file_lines(file))
        if lines:
            console.print(f"[bold]{escape(file.rendered.source.display)}[/bold]{_file_status(file, written)}")
            for line in lines:
                console.print(line)
    t = totals(result)
    migrated, added = ("migrated", "added") if written else ("to migrate", "to add")
    console.print(
        f"[bold]{t.files} file(s), {t.changed_files} changed:[/bold] {t.objects} object(s) read, "
        f"{t.templates_migrated} pod template(s) {migrated}, {t.objects_added} DRA object(s) {added}, "
        + (f"{t.quotas_changed} quota object(s) given DRA caps, " if t.quotas_changed else "")
        + (f"{t.versions_changed} DRA object(s) rewritten to a served version, " if t.versions_changed else "") +
        f"[{_STYLE[Severity.WARNING]}]{t.warnings} warning(s)[/], [{_STYLE[Severity.ERROR]}]{t.errors} error(s)[/]"
    )


def _file_status(file: FileResult, written: bool = True) -> str:
    if file.not_migrated:
        return " [bold red](not fully migrated)[/]" if written else " [bold red](cannot be fully migrated)[/]"
    if file.changed:
        return " [green](migrated)[/]" if written else " [yellow](would be migrated)[/]"
    return " (unchanged)"


def _line(indent: int, severity: Severity, text: str) -> str:
    return f"{' ' * indent}[{_STYLE[severity]}]{severity.value}:[/] {escape(text)}"


def _file_lines(file: FileResult) -> Iterable[str]:
    plan = file.plan
    for issue in plan.issues:
        yield _line(2, issue.severity, issue.message)
    if file.rendered.fallback_reason:
        yield _line(2, Severity.ERROR, file.rendered.fallback_reason)
    for error in file.rendered.document_errors:
        yield _line(2, Severity.ERROR, error)
    by_object: dict[ObjectRef, list[str]] = {}
    for template in plan.templates:
        if not template.notes and not template.changed:
            continue
        lines = by_object.setdefault(template.obj, [])
        where = template.site.pointer or "/"
        status = "rewritten" if template.changed else "not changed"
        lines.append(f"    {escape(template.site.label)} {escape(where)}: {status}")
        lines.extend(_line(6, note.severity, note.render()) for note in template.notes)
    for quota in plan.quotas:
        lines = by_object.setdefault(quota.obj, [])
        lines.append(f"    quota: {'added ' + escape(', '.join(quota.added)) if quota.changed else 'not changed'}")
        lines.extend(_line(6, note.severity, note.render()) for note in quota.notes)
    for conversion in plan.conversions:
        lines = by_object.setdefault(conversion.obj, [])
        lines.append(f"    apiVersion: {escape(conversion.source)} -> {escape(conversion.target)}")
        lines.extend(_line(6, note.severity, note.render()) for note in conversion.notes)
    for note in plan.object_notes:
        by_object.setdefault(note.obj, []).append(_line(4, note.severity, note.message))
    for emission in plan.emissions:
        where = f"{emission.namespace}/" if emission.namespace else ""
        by_object.setdefault(emission.before, []).append(
            f"    [cyan]+ {emission.kind} {escape(where + emission.name)}[/] added before it")
    for obj, lines in by_object.items():
        yield f"  [bold]{escape(obj.label)}[/]"
        yield from lines


def print_write_failures(writes: WriteReport, console: Console) -> None:
    """Which files were written and which were not (each one whole or not at all)."""
    for path, reason in writes.failed:
        console.print(_line(0, Severity.ERROR, f"{path}: not written ({reason}); it is left as it was"))
    if writes.written:
        console.print(f"written: {escape(', '.join(str(p) for p in writes.written))}")
    console.print(f"[bold]{len(writes.written)} file(s) written, {len(writes.failed)} not written[/bold]")
