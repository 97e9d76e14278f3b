"""kubectl's connection and scope flags, for click commands that talk to a cluster:
--kubeconfig, --context, --cluster, --user, --request-timeout, -n/--namespace, -A/--all-namespaces, -l/--selector,
-o/--output.

They are accepted on a group and on its subcommands alike (`describe --context x node n` and
`describe node n --context x`); a value given on the subcommand wins.
"""

from __future__ import annotations

import math

import re
from dataclasses import dataclass, replace
from typing import Any, Callable

import click

from kubectl_gpu.k8s.duration import format_duration, parse_duration
from kubectl_gpu.k8s.name_completion import complete_namespaces
from kubectl_gpu.k8s.timeouts import REQUEST_TIMEOUT_SECONDS

OUTPUT_FORMATS = ("table", "wide", "json", "yaml", "name")
_WHOLE_SECONDS = re.compile(r"[+-]?[0-9]+")
_MAX_SECONDS = 2**63 / 1e9  # the longest Go Duration, in seconds


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
    cluster: str | None = None  # the kubeconfig cluster to use instead of the context's (kubectl --cluster)
    user: str | None = None  # the kubeconfig user to use instead of the context's (kubectl --user)

    def merged(self, override: "ClusterOptions") -> "ClusterOptions":
        changes = {k: v for k, v in override.__dict__.items() if v not in (None, False, "table")}
        return replace(self, **changes)

    def connect(self):
        """A kubectl_gpu.k8s.Connection for these options."""
        from kubectl_gpu.k8s.kubeconfig import connect

        timeout = REQUEST_TIMEOUT_SECONDS if self.request_timeout is None else self.request_timeout
        return connect(self.kubeconfig, self.context, timeout or None, cluster=self.cluster, user=self.user)


def parse_request_timeout(value: str) -> float:
    """kubectl's --request-timeout (client-go's clientcmd.ParseTimeout): a whole number of seconds
    (strconv.ParseInt, so no `1.5`, `1e3`, `nan` or `inf`), or a duration such as 30s, 1m, 1m30s;
    0 waits forever."""
    text = value.strip()
    if _WHOLE_SECONDS.fullmatch(text) and float(int(text)) < _MAX_SECONDS:  # ParseInt's int64, then a Duration
        seconds = float(int(text))
    else:
        try:
            seconds = parse_duration(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a duration; use seconds or a unit, e.g. 30s, 2m, 1m30s, "
                             "or 0 to wait forever") from None
    if seconds < 0:
        raise ValueError(f"{value!r} is negative; use 0 to wait forever")
    return seconds


class Duration(click.ParamType):
    """A `--timeout` as kubectl takes one (Go's time.ParseDuration: 5m, 90s, 1h30m), in seconds; 0 is
    no end at all (math.inf), as `kubectl rollout status` ("zero means never") and `kubectl drain`
    ("zero means infinite") read it."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        flag = param.opts[-1] if param is not None and param.opts else "--timeout"
        try:
            seconds = parse_duration(value)
        except ValueError as error:
            # kubectl's words (cobra: invalid argument "90" for "--timeout" flag: time: ...), and what to write
            raise click.UsageError(f'invalid argument "{value}" for "{flag}" flag: {error} (write it as kubectl '
                                   "does, with a unit: 90s, 5m, 1h30m)", ctx) from None
        if seconds < 0:
            raise click.UsageError(f'invalid argument "{value}" for "{flag}" flag: a time to wait cannot be negative',
                                   ctx)
        return math.inf if seconds == 0 else seconds


def timeout_option(what: str, default_seconds: float = 300.0) -> Callable[..., Any]:
    """`--timeout DURATION` of the commands that wait (kubectl's spelling: 5m, 90s, 1h30m)."""
    return click.option("--timeout", type=Duration(), default=default_seconds, metavar="DURATION",
                        help=f"{what} (e.g. 90s, 5m, 1h30m; 0: without end, as kubectl)  "
                             f"[default: {format_duration(default_seconds)}]")


def request_timeout_callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_request_timeout(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def request_timeout_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--request-timeout", callback=request_timeout_callback, metavar="DURATION", default=None,
                        help=f"How long to wait for each answer of the API server (e.g. 10s, 1m; 0: forever). "
                             f"Nothing is retried.  [default: {REQUEST_TIMEOUT_SECONDS:g}s]")(func)


# What -l narrows, per kind of object a command selects: its help names them, with an example.
SELECTOR_HELP = {"nodes": "e.g. -l pool=h100 or -l 'pool in (a100,h100)'",
                 "pods": "e.g. -l app=web or -l 'app in (web,train)'",
                 "ResourceClaims": "e.g. -l app=web"}


def cluster_options(func: Callable[..., Any] | None = None, *, outputs: tuple[str, ...] = OUTPUT_FORMATS,
                    selects: str = "nodes") -> Any:
    """The flags above; `outputs`: the -o forms the command prints (-o name only where it lists
    objects); `selects`: what -l narrows (a key of SELECTOR_HELP)."""
    if func is None:
        return lambda f: cluster_options(f, outputs=outputs, selects=selects)
    names = " name: KIND/NAME per object, as kubectl -o name." if "name" in outputs else ""
    decorators = [
        click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                     help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."),
        click.option("--context", default=None, help="The kubeconfig context to use."),
        click.option("--cluster", default=None, help="The kubeconfig cluster to use (default: the context's)."),
        click.option("--user", default=None, help="The kubeconfig user to use (default: the context's)."),
        request_timeout_option,
        click.option("-n", "--namespace", default=None, shell_complete=complete_namespaces,
                     help="Namespace (default: the context's namespace)."),
        click.option("-A", "--all-namespaces", is_flag=True, default=False,
                     help="Look in all namespaces."),
        click.option("-l", "--selector", default=None,
                     help=f"Label selector of the {selects} to look at, {SELECTOR_HELP[selects]}."),
        click.option("-o", "--output", type=click.Choice(outputs), default="table",
                     show_default=True, help="table/wide for people; json/yaml (stable keys) for scripts;" + names),
        click.option("--no-headers", is_flag=True, default=False,
                     help="Tables without their header line (as kubectl --no-headers)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func

