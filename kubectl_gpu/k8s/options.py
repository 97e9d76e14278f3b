"""kubectl's connection and scope flags, for click commands that talk to a cluster:
--kubeconfig, --context, --request-timeout, -n/--namespace, -A/--all-namespaces, -l/--selector,
-o/--output.

They are accepted on a group and on its subcommands alike (`describe --context x node n` and
`describe node n --context x`); a value given on the subcommand wins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import re

import click

from kubectl_gpu.k8s.timeouts import REQUEST_TIMEOUT_SECONDS

OUTPUT_FORMATS = ("table", "wide", "json", "yaml", "name")


@dataclass(frozen=True)
class ClusterOptions:
    """kubectl's connection, scope and output flags as one command received them."""

    kubeconfig: str | None = None
    context: str | None = None
    request_timeout: float | None = None  # seconds; None: the default; 0 means no limit, as in kubectl
    namespace: str | None = None  # None: the context's namespace
    all_namespaces: bool = False
    selector: str | None = None
    output: str = "table"
    no_headers: bool = False

    def merged(self, override: "ClusterOptions") -> "ClusterOptions":
        changes = {k: v for k, v in override.__dict__.items() if v not in (None, False, "table")}
        return replace(self, **changes)

    def connect(self):
        """A kubectl_gpu.k8s.Connection for these options."""
        from kubectl_gpu.k8s.kubeconfig import connect

        timeout = REQUEST_TIMEOUT_SECONDS if self.request_timeout is None else self.request_timeout
        return connect(self.kubeconfig, self.context, timeout or None)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_request_timeout(value: str) -> float:
    """kubectl's --request-timeout: a bare number of seconds, or a duration such as 30s, 1m, 1m30s;
    0 waits forever."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"{value!r} is not a duration; use seconds or a unit, e.g. 30s, 2m, 1m30s, "
                             "or 0 to wait forever") from None
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    if seconds < 0:
        raise ValueError(f"{value!r} is negative; use 0 to wait forever")
    return seconds


def request_timeout_callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_request_timeout(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def cluster_options(func: Callable[..., Any] | None = None, *, outputs: tuple[str, ...] = OUTPUT_FORMATS) -> Any:
    """The flags above; `outputs`: the -o forms the command prints (-o name only where it lists objects)."""
    if func is None:
        return lambda f: cluster_options(f, outputs=outputs)
    names = " name: KIND/NAME per object, as kubectl -o name." if "name" in outputs else ""
    decorators = [
        click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                     help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."),
        click.option("--context", default=None, help="The kubeconfig context to use."),
        click.option("--request-timeout", callback=request_timeout_callback, metavar="DURATION", default=None,
                     help=f"How long to wait for each answer of the API server (e.g. 10s, 1m; 0: forever). "
                          f"Nothing is retried.  [default: {REQUEST_TIMEOUT_SECONDS:g}s]"),
        click.option("-n", "--namespace", default=None,
                     help="Namespace (default: the context's namespace)."),
        click.option("-A", "--all-namespaces", is_flag=True, default=False,
                     help="Look in all namespaces."),
        click.option("-l", "--selector", default=None,
                     help="Label selector, e.g. -l app=web or -l 'pool in (a100,h100)'."),
        click.option("-o", "--output", type=click.Choice(outputs), default="table",
                     show_default=True, help="table/wide for people; json/yaml (stable keys) for scripts;" + names),
        click.option("--no-headers", is_flag=True, default=False,
                     help="Tables without their header line (as kubectl --no-headers)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func

