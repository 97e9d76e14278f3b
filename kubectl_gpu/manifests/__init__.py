"""Manifests: load YAML/JSON, find pod templates, apply the core's patches, write them back.

parse (loader) -> plan (pure: plan) -> apply (apply) -> text (serialize), one document at a
time (migration.py).  `migrate_files` runs the pipeline over a set of inputs lazily, file by
file; DRA objects are shared across all of them (or kept per file with self_contained_files).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from kubectl_gpu.core import translate_pod_template

from .loader import Format, InputError, ParsedFile, Source, collect_sources, is_stream, parse_source
from .migration import FileMigration, FileResult
from .passthrough import PassThrough
from .plan import DraTarget, Emission, FilePlan, MigrateOptions, Planner, TemplatePlan, Translator, scan_inputs
from .serialize import RenderedFile, unified_diff
from .stream import Chunk

# Makes the test of which YAML documents are written back unparsed, one per run (passthrough.py):
# right for the core's translation and any translator that wraps it; one that reacts to other text
# passes None (every document read).
Unread = Callable[[], Callable[[Chunk], bool]] | None


@dataclass(frozen=True)
class MigrationResult:
    files: tuple[FileResult, ...]

    @property
    def changed(self) -> bool:
        return any(f.changed for f in self.files)

    @property
    def not_migrated(self) -> bool:
        return any(f.not_migrated for f in self.files)

    @property
    def legacy_left(self) -> bool:
        return any(f.plan.legacy_left for f in self.files)


def migrate_files(
    sources: Sequence[Source],
    options: MigrateOptions = MigrateOptions(),
    output_format: Format | None = None,
    translate: Translator = translate_pod_template,
    unread: Unread = PassThrough,
) -> Iterator[FileMigration]:
    """One FileMigration per source, in order, each to be run (its `pieces()` or `result`)
    before the next is taken.  The DRA objects and claims the inputs already hold are found
    first (a cheap scan: only documents whose text names such a kind are parsed)."""
    facts = scan_inputs(sources, options.namespace, options.dra_target)
    given = options.known_claims  # the cluster's (migrate --from-cluster)
    options = replace(options, known_claims={ns: tuple(given.get(ns, ())) + facts.known_claims.get(ns, ())
                                             for ns in {*given, *facts.known_claims}},
                      translate=replace(options.translate, gpu_device_classes=options.translate.gpu_device_classes
                                        | facts.gpu_device_classes))
    passing = unread() if unread is not None else None  # one for the run: what it learns holds for all files
    if options.self_contained_files:
        for source in sources:
            present = scan_inputs([source], options.namespace, options.dra_target).present
            yield FileMigration(source, Planner(options, translate, present, unread=passing), output_format)
        return
    planner = Planner(options, translate, facts.present, unread=passing)
    for source in sources:
        yield FileMigration(source, planner, output_format)


def migrate_sources(
    sources: Sequence[Source],
    options: MigrateOptions = MigrateOptions(),
    output_format: Format | None = None,
    translate: Translator = translate_pod_template,
    unread: Unread = PassThrough,
) -> MigrationResult:
    return MigrationResult(tuple(m.result for m in migrate_files(sources, options, output_format, translate, unread)))


def migrate_text(
    text: str,
    options: MigrateOptions = MigrateOptions(),
    output_format: Format | None = None,
    name: str = "<text>",
    translate: Translator = translate_pod_template,
    unread: Unread = PassThrough,
) -> FileResult:
    """Migrate one YAML/JSON stream held in memory."""
    return migrate_sources([Source(name, text)], options, output_format, translate, unread).files[0]


__all__ = [
    "DraTarget", "Emission", "FileMigration", "FilePlan", "FileResult", "Format", "InputError", "MigrateOptions",
    "MigrationResult", "ParsedFile", "RenderedFile", "Source", "TemplatePlan", "collect_sources", "is_stream",
    "migrate_files", "migrate_sources", "migrate_text", "parse_source", "unified_diff",
]
