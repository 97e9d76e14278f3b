"""Manifests: load YAML/JSON, find pod templates, apply the core's patches, write them back.

parse (loader) -> plan (pure: plan) -> apply (apply) -> text (render).  `migrate_sources`
runs the whole pipeline over a set of inputs; DRA objects are shared across all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_gpu.core import translate_pod_template

from .apply import apply_plan
from .loader import Format, InputError, ParsedFile, Source, collect_sources, parse_source
from .plan import Emission, FilePlan, MigrateOptions, TemplatePlan, Translator, plan_migration
from .serialize import RenderedFile, render_file, unified_diff


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


@dataclass(frozen=True)
class MigrationResult:
    files: tuple[FileResult, ...]

    @property
    def changed(self) -> bool:
        return any(f.changed for f in self.files)

    @property
    def not_migrated(self) -> bool:
        return any(f.not_migrated for f in self.files)


def migrate_sources(
    sources: Sequence[Source],
    options: MigrateOptions = MigrateOptions(),
    output_format: Format | None = None,
    translate: Translator = translate_pod_template,
) -> MigrationResult:
    parsed: list[ParsedFile] = [parse_source(source) for source in sources]
    plans = plan_migration(parsed, options, translate)
    results = [FileResult(plan, render_file(apply_plan(plan), output_format)) for plan in plans]
    return MigrationResult(tuple(results))


def migrate_text(
    text: str,
    options: MigrateOptions = MigrateOptions(),
    output_format: Format | None = None,
    name: str = "<text>",
    translate: Translator = translate_pod_template,
) -> FileResult:
    """Migrate one YAML/JSON stream held in memory."""
    return migrate_sources([Source(name, text)], options, output_format, translate).files[0]


__all__ = [
    "Emission", "FilePlan", "FileResult", "Format", "InputError", "MigrateOptions", "MigrationResult",
    "RenderedFile", "Source", "TemplatePlan", "collect_sources", "migrate_sources", "migrate_text",
    "parse_source", "plan_migration", "unified_diff",
]
