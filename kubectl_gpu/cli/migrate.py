"""`kubectl gpu migrate`: rewrite legacy GPU requests in manifests into DRA claims."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from kubectl_gpu.cli import exits
from kubectl_gpu.core import ApiVersion, IntegerGpuMode, Sharing, TranslateOptions
from kubectl_gpu.core.facts import DRA_VERSIONS
from kubectl_gpu.core.quantity import QuantityError, parse_quantity
from kubectl_gpu.manifests import (Format, InputError, MigrateOptions, MigrationResult, collect_sources,
                                   migrate_sources, unified_diff)
from kubectl_gpu.manifests.output import OutputError, WriteReport, join_stream, output_paths, write_files
from kubectl_gpu.manifests.report import print_report, print_write_failures

EXIT_OK = exits.OK
EXIT_CHANGES = exits.FINDINGS  # --check/--diff: something would change (kubectl diff exits 1 too)
EXIT_USAGE = exits.USAGE
EXIT_NOT_MIGRATED = exits.NOT_MIGRATED  # some input could not be migrated; the rest was still written

EPILOG = """\b
What migrate's exit codes mean (table below):
  0  everything migrated (or nothing needed to change)
  1  --check or --diff: some manifest would change (like kubectl diff)
  2  usage error (bad option, missing file); nothing was written
  3  some input was not migrated (a document that does not parse or repeats
     a key with different values, an invalid legacy value, one container
     mixing two GPU plugins' resources); everything else was still migrated
     and written, and the report on stderr says what to fix; or some file
     could not be written (the report lists which were and which were not;
     each file is replaced whole or not at all)
GPU requests migrate finds but cannot reach (inside strings, containers
outside a pod template) are warnings in the report: they leave the exit
code as it is, --check and --diff included.

\b
Examples:
  kubectl gpu migrate deploy.yaml > deploy-dra.yaml
  kubectl gpu migrate --diff k8s/
  kubectl gpu migrate --in-place --sharing mps k8s/
  kubectl gpu migrate --check k8s/        # in CI: fail while legacy GPU requests remain
  helm template my-chart | kubectl gpu migrate - | kubectl apply -f -

\b
Live clusters (see their --help):
  kubectl gpu migrate --from-cluster [--apply]   rewrite live workloads (server-side apply)
  kubectl gpu migrate nodes [NODE...] [--apply]  switch a wave of GPU nodes to DRA
"""


def _gpu_memory(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        if parse_quantity(value) <= 0:
            raise QuantityError("must be more than zero")
    except QuantityError as err:
        raise click.BadParameter(f"{value!r} is not a memory quantity like 80Gi ({err})") from err
    return value


@click.command(name="migrate", epilog=exits.epilog(EPILOG), context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("inputs", nargs=-1, required=True, metavar="FILE|DIR|-...")
@click.option("--in-place", is_flag=True, help="Rewrite the input files that change.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write every migrated file under DIR, mirroring the input paths.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print a unified diff per file instead of the migrated manifests.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 if any manifest would change (for CI).")
@click.option("-o", "--output", "output_format", type=click.Choice(["yaml", "json"]),
              help="Output format (default: the format of each input file).")
@click.option("--api-version", type=click.Choice(list(DRA_VERSIONS)), default="v1", show_default=True,
              help="resource.k8s.io version: v1 (Kubernetes 1.34+), v1beta2 (1.33), v1beta1 (1.32).")
@click.option("--sharing", type=click.Choice([s.value for s in Sharing]), default=Sharing.CONSUMABLE.value,
              show_default=True,
              help="Fractional GPUs: consumable capacity (KEP-5075), exclusive (whole GPUs), or one shared "
                   "claim per workload with timeslicing/mps.")
@click.option("--integer-gpus", type=click.Choice([m.value for m in IntegerGpuMode]),
              default=IntegerGpuMode.REWRITE.value, show_default=True,
              help="Plain nvidia.com/gpu: N: rewrite to claims, or leave it to a DeviceClass with "
                   "extendedResourceName (KEP-5004).")
@click.option("--gpu-memory", callback=_gpu_memory, metavar="QUANTITY",
              help="Memory of one GPU in the node pool (e.g. 80Gi): lets fractions become memory shares.")
@click.option("--aliyun-memory-unit", type=click.Choice(["GiB", "MiB"]), default="GiB", show_default=True,
              help="Unit of aliyun.com/gpu-mem (the gpushare plugin's --memory-unit).")
@click.option("-n", "--namespace", help="Namespace for objects that name none (claims go there too).")
def command(
    inputs: tuple[str, ...],
    in_place: bool,
    output_dir: Path | None,
    show_diff: bool,
    check: bool,
    output_format: str | None,
    api_version: str,
    sharing: str,
    integer_gpus: str,
    gpu_memory: str | None,
    aliyun_memory_unit: str,
    namespace: str | None,
) -> None:
    """Rewrite legacy GPU requests (nvidia.com/gpu, fractions, vcuda, MIG, HAMi, ACK gpushare,
    TPU) in manifests into DRA claims: ResourceClaimTemplates, or with --sharing timeslicing|mps
    one ResourceClaim per workload.

    Reads files, directories (recursively: *.yaml, *.yml, *.json) and '-' (stdin). Comments,
    key order and every untouched document survive; the DRA objects the rewritten pods need
    are added once, just before the first object that uses them. A report goes to stderr.
    """
    if in_place and output_dir is not None:
        raise click.UsageError("use either --in-place or --output-dir, not both")
    if (in_place or output_dir is not None) and "-" in inputs:
        raise click.UsageError("standard input ('-') can only be written to stdout; drop --in-place/--output-dir")
    options = MigrateOptions(
        translate=TranslateOptions(
            api_version=ApiVersion.parse(api_version),
            sharing=Sharing(sharing),
            integer_gpus=IntegerGpuMode(integer_gpus),
            gpu_memory=gpu_memory,
            aliyun_memory_unit=aliyun_memory_unit,
        ),
        namespace=namespace,
        self_contained_files=in_place or output_dir is not None or show_diff,
    )
    try:
        sources = collect_sources(inputs, sys.stdin)
    except InputError as err:
        raise click.UsageError(str(err)) from err
    result = migrate_sources(sources, options, Format(output_format) if output_format else None)
    rendered = [f.rendered for f in result.files]

    writes = WriteReport()
    if not check:
        if output_dir is not None:
            try:
                targets = output_paths(rendered, output_dir)
            except OutputError as err:
                raise click.UsageError(str(err)) from err
            writes = write_files([(target, file.text, file.source.path) for target, file in zip(targets, rendered)])
        elif in_place:
            writes = write_files([(file.source.path, file.text, file.source.path) for file in rendered
                                  if file.changed and file.source.path is not None])
        elif not show_diff:
            click.echo(join_stream(rendered), nl=False)
    if show_diff:
        click.echo("".join(unified_diff(f) for f in rendered if f.changed), nl=False)

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    print_report(result, console)
    if writes.failed:
        print_write_failures(writes, console)
        sys.exit(EXIT_NOT_MIGRATED)
    sys.exit(_exit_code(result, check or show_diff))


def _exit_code(result: MigrationResult, report_changes: bool) -> int:
    if result.not_migrated:
        return EXIT_NOT_MIGRATED
    if report_changes and result.changed:
        return EXIT_CHANGES
    return EXIT_OK
