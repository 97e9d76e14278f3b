"""Options and helpers the fleet commands share (plan, migrate --from-cluster, migrate nodes, rollback)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from kubectl_gpu.core import ApiVersion, IntegerGpuMode, Sharing, TranslateOptions

from kubectl_gpu.cli import exits

EXIT_REFUSED = exits.FINDINGS  # the answer is no: a wave or node switch is refused, nothing changed
EXIT_STOPPED = exits.NOT_MIGRATED  # a write or rollout failed: what came before stays applied

FIELD_MANAGER = "kubectl-gpu"  # server-side apply field manager of every fleet write


def translate_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The translation choices of `kubectl gpu migrate`, with the same defaults."""
    from kubectl_gpu.cli.migrate import _gpu_memory

    decorators = [
        click.option("--api-version", type=click.Choice(["v1", "v1beta2", "v1beta1"]), default=None,
                     help="resource.k8s.io version of the claim templates (default: the newest the cluster "
                          "serves; v1 for files)."),
        click.option("--sharing", type=click.Choice([s.value for s in Sharing]), default=Sharing.CONSUMABLE.value,
                     show_default=True, help="How fractional GPUs become claims (as in migrate)."),
        click.option("--integer-gpus", type=click.Choice([m.value for m in IntegerGpuMode]),
                     default=IntegerGpuMode.REWRITE.value, show_default=True,
                     help="Plain nvidia.com/gpu: N: rewrite, or leave to a KEP-5004 DeviceClass."),
        click.option("--gpu-memory", callback=_gpu_memory, metavar="QUANTITY",
                     help="Memory of one GPU (e.g. 80Gi): lets fractions become memory shares."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def build_translate_options(api_version: str | None, sharing: str, integer_gpus: str,
                            gpu_memory: str | None, served: str | None = None) -> TranslateOptions:
    """``served``: the newest resource.k8s.io version the cluster serves, used unless
    --api-version says otherwise (a v1 claim is refused by a 1.32/1.33 API server)."""
    return TranslateOptions(api_version=ApiVersion.parse(api_version or served or "v1"), sharing=Sharing(sharing),
                            integer_gpus=IntegerGpuMode(integer_gpus), gpu_memory=gpu_memory)


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
                documents.extend(d for d in yaml.safe_load_all(chunk.body) if d is not None)
            except yaml.YAMLError as err:
                mark = getattr(err, "problem_mark", None)
                line = chunk.body_line + (mark.line if mark is not None else 0)
                click.echo(f"warning: {source.display}:{line}: not YAML or JSON "
                           f"({getattr(err, 'problem', None) or err}): left out of the plan", err=True)
    return documents
