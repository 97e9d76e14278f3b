"""Options and helpers the fleet commands share (plan, migrate --from-cluster, migrate nodes, rollback)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from kubectl_gpu.core import ApiVersion, IntegerGpuMode, Sharing, TargetDriver, TranslateOptions
from kubectl_gpu.dra.facts import DRA_VERSIONS

from kubectl_gpu.cli import exits
from kubectl_gpu.cli.options import gpu_memory_quantity, target_driver_option

EXIT_REFUSED = exits.FINDINGS  # the answer is no: a wave or node switch is refused, nothing changed
EXIT_STOPPED = exits.NOT_MIGRATED  # a write or rollout failed: what came before stays applied

FIELD_MANAGER = "kubectl-gpu"  # server-side apply field manager of every fleet write


# kubectl's --dry-run values (k8s.io/kubectl/pkg/cmd/util/helpers.go GetDryRunStrategy); a bare
# --dry-run is its deprecated spelling of client.
DRY_RUN_VALUES = ("none", "server", "client")
_BARE_DRY_RUN = "unchanged"


def dry_run_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """--apply and --dry-run=none|server|client: without either, a server dry run."""
    func = click.option("--dry-run", metavar="none|server|client", default=None, is_flag=False,
                        flag_value=_BARE_DRY_RUN,
                        help="none: write (as --apply); server: send every write with dryRun=All, so the API "
                             "server checks it (the default); client: send no write, only show what would be "
                             "sent.")(func)
    return click.option("--apply", "do_apply", is_flag=True, help="Write (as --dry-run=none).")(func)


def dry_run_mode(do_apply: bool, dry_run: str | None) -> Any:
    """The kubectl_gpu.fleet.dry_run.DryRun the two flags ask for; a usage error for a value kubectl
    refuses too, or for --apply beside a dry run."""
    from kubectl_gpu.fleet.dry_run import DryRun

    if dry_run == _BARE_DRY_RUN:
        click.echo("warning: --dry-run is deprecated and can be replaced with --dry-run=client.", err=True)
        dry_run = DryRun.CLIENT.value
    if dry_run is not None and dry_run not in DRY_RUN_VALUES:
        raise click.UsageError(f'Invalid dry-run value ({dry_run}). Must be "none", "server", or "client".')
    if do_apply and dry_run not in (None, DryRun.NONE.value):
        raise click.UsageError(f"use either --apply or --dry-run={dry_run}, not both")
    if do_apply:
        return DryRun.NONE
    return DryRun(dry_run) if dry_run else DryRun.SERVER


def dry_run_api(api: Any, mode: Any) -> Any:
    """The client the writes go through: the cluster's, or one that keeps them here (client dry run)."""
    from kubectl_gpu.fleet.dry_run import ClientDryRun, DryRun

    return ClientDryRun(api) if mode is DryRun.CLIENT else api


def list_selected(api: Any, path: str, selector: str) -> list[dict[str, Any]]:
    """The collection's objects with these labels.  The API server reads the selector, as for kubectl
    get/drain -l (one parser, the server's: =, ==, !=, in, notin, key, !key); one it cannot parse is
    a usage error that quotes it."""
    from kubectl_gpu.k8s import ApiError, list_objects

    try:
        return list_objects(api, path, label_selector=selector)
    except ApiError as exc:
        if exc.status == 400:
            raise click.UsageError(f"-l {selector!r}: {exc.message}") from None
        raise


def translate_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The translation choices of `kubectl gpu migrate`, with the same defaults."""
    decorators = [
        click.option("--api-version", type=click.Choice(DRA_VERSIONS), default=None,
                     help="resource.k8s.io version of the claim templates (default: the newest the cluster "
                          "serves; v1 for files without DRA objects)."),
        click.option("--sharing", type=click.Choice([s.value for s in Sharing]), default=Sharing.AUTO.value,
                     show_default=True,
                     help="How fractional GPUs become claims, as in migrate: auto gives consumable shares where "
                          "the cluster's GPUs advertise allowMultipleAllocations and DRAConsumableCapacity is on, "
                          "else whole GPUs."),
        click.option("--integer-gpus", type=click.Choice([m.value for m in IntegerGpuMode]),
                     default=IntegerGpuMode.REWRITE.value, show_default=True,
                     help="Plain nvidia.com/gpu: N: rewrite, or leave to a KEP-5004 DeviceClass."),
        click.option("--gpu-memory", callback=gpu_memory_quantity, metavar="QUANTITY",
                     help="Memory of one GPU (e.g. 80Gi): lets fractions become memory shares (default: the "
                          "size every published GPU has)."),
        click.option("--kubernetes-version", metavar="1.MINOR",
                     help="Kubernetes version of the cluster (its DRA feature gate defaults); default: the live "
                          "cluster's, or the oldest that serves the files' resource.k8s.io version."),
        click.option("--feature-gates", metavar="NAME=BOOL,...",
                     help="DRA feature gates that differ from the version's defaults, as kube-apiserver takes "
                          "them (e.g. DRAConsumableCapacity=true)."),
        target_driver_option,
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


@dataclass(frozen=True)
class ProfileChoices:
    """--kubernetes-version and --feature-gates, parsed (a usage error says what is wrong)."""
    kubernetes_minor: int | None
    gate_overrides: dict[str, bool] | None

    @classmethod
    def parse(cls, kubernetes_version: str | None, feature_gates: str | None) -> "ProfileChoices":
        from kubectl_gpu.cluster import ProfileError, parse_feature_gates, parse_kubernetes_version

        try:
            return cls(parse_kubernetes_version(kubernetes_version) if kubernetes_version else None,
                       parse_feature_gates(feature_gates) if feature_gates else None)
        except ProfileError as err:
            raise click.UsageError(str(err)) from err

    def check_live(self, profile: Any) -> None:
        if self.kubernetes_minor is not None and profile is not None \
                and profile.kubernetes_minor != self.kubernetes_minor:
            raise click.UsageError(f"--kubernetes-version 1.{self.kubernetes_minor}, but the cluster runs "
                                   f"1.{profile.kubernetes_minor}")


def fitted_translate_options(snapshot: Any, api_version: str | None, sharing: str, integer_gpus: str,
                             gpu_memory: str | None, target_driver: str = TargetDriver.NVIDIA.value,
                             driver_shares: int | None = None,
                             **_profile_choices: Any) -> tuple[TranslateOptions, list[str]]:
    """The translation options fitted to the snapshot's cluster profile exactly as
    ``migrate --cluster/--from-cluster`` fits them (kubectl_gpu.cluster.fit_options: served
    version, sharing the GPUs allow, whole GPUs kept whole, firstAvailable where served), and the
    lines that say which profile and what was decided from it (migrate's report prints them).
    ``driver_shares``: the integer shares the predicted NVIDIA driver publishes per GPU (plan's
    --consumable-shares N with ConsumableShares on)."""
    from kubectl_gpu.cluster import fit_options

    fitted = fit_options(TranslateOptions(api_version=ApiVersion.parse(api_version or "v1"), sharing=Sharing(sharing),
                                          integer_gpus=IntegerGpuMode(integer_gpus), gpu_memory=gpu_memory,
                                          target_driver=TargetDriver(target_driver)),
                         snapshot.profile, api_version_given=api_version is not None, driver_shares=driver_shares)
    lines = [snapshot.profile.describe()] if snapshot.profile is not None else []
    return fitted.options, [*lines, *fitted.notes]


def fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def read_files(paths: tuple[str, ...]) -> list[Any]:
    """Every YAML/JSON document of the files (kubectl get ... -o yaml output), `-` for stdin.

    A document that does not parse is left out with a warning on stderr naming the file and
    line (a directory of manifests often holds a template or two); the rest are planned."""
    import json

    import yaml

    from kubectl_gpu.manifests import InputError, collect_sources
    from kubectl_gpu.manifests.stream import split_stream
    from kubectl_gpu.input_text import load_all

    try:
        sources = collect_sources(paths, sys.stdin)
    except InputError as err:
        raise click.UsageError(str(err)) from err
    documents: list[Any] = []
    for source in sources:
        if source.text.lstrip().startswith(("{", "[")):
            try:
                documents.append(json.loads(source.text))
                continue
            except ValueError:
                pass  # YAML that happens to start with a flow mapping
        for chunk in split_stream(source.text):
            try:
                documents.extend(d for d in load_all(chunk.body) if d is not None)
            except yaml.YAMLError as err:
                mark = getattr(err, "problem_mark", None)
                line = chunk.body_line + (mark.line if mark is not None else 0)
                click.echo(f"warning: {source.display}:{line}: not YAML or JSON "
                           f"({getattr(err, 'problem', None) or err}): left out of the plan", err=True)
    return documents
