"""kubectl's connection and scope flags, for click commands that talk to a cluster:
--kubeconfig, --context, -n/--namespace, -A/--all-namespaces, -l/--selector, -o/--output.

They are accepted on a group and on its subcommands alike (`describe --context x node n` and
`describe node n --context x`); a value given on the subcommand wins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import click

OUTPUT_FORMATS = ("table", "wide", "json", "yaml")


@dataclass(frozen=True)
class ClusterOptions:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None  # None: the context's namespace
    all_namespaces: bool = False
    selector: str | None = None
    output: str = "table"

    def merged(self, override: "ClusterOptions") -> "ClusterOptions":
        changes = {k: v for k, v in override.__dict__.items() if v not in (None, False, "table")}
        return replace(self, **changes)


def cluster_options(func: Callable[..., Any]) -> Callable[..., Any]:
    decorators = [
        click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                     help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."),
        click.option("--context", default=None, help="The kubeconfig context to use."),
        click.option("-n", "--namespace", default=None,
                     help="Namespace (default: the context's namespace)."),
        click.option("-A", "--all-namespaces", is_flag=True, default=False,
                     help="Look in all namespaces."),
        click.option("-l", "--selector", default=None,
                     help="Label selector, e.g. -l app=web or -l 'pool in (a100,h100)'."),
        click.option("-o", "--output", type=click.Choice(OUTPUT_FORMATS), default="table",
                     show_default=True, help="table/wide for people; json/yaml (stable keys) for scripts."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func

