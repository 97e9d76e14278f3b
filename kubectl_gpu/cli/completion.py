"""Shell completion: `kubectl gpu completion bash|zsh|fish` for the `kubectl-gpu` command itself,
and `kubectl_complete-gpu`, which kubectl (1.26+) runs to complete `kubectl gpu <TAB>`.

kubectl's protocol (kubernetes/kubernetes#105867, staging/src/k8s.io/kubectl/pkg/cmd/plugin/
plugin_completion.go, and kubernetes/sample-cli-plugin's README): kubectl runs
`kubectl_complete-<plugin> ARGS... WORD` with the words after the plugin's name, the last one being
the word under the cursor (maybe empty), and reads Cobra's `__complete` answer: one completion per
line (`value<TAB>description`), then `:DIRECTIVE` (4: no file completion, 0: complete file names,
2: no space after it, for a `KIND/` the name follows).

Both use click's completion of this command tree, so subcommands, flags and their choices are
never listed twice; namespace, node, pod, claim and workload names come from the cluster
(kubectl_gpu/k8s/name_completion.py; `names_from_cluster`, `complete_kind_and_name`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

from kubectl_gpu.cli import exits

EXECUTABLE = "kubectl-gpu"
COMPLETE_VAR = "_KUBECTL_GPU_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
# Cobra's ShellCompDirective values (spf13/cobra completions.go).
DIRECTIVE_DEFAULT = 0
DIRECTIVE_NO_FILE_COMP = 4
DIRECTIVE_NO_SPACE = 2  # a KIND/ to go on typing after

EPILOG = exits.epilog("""\b
Examples:
  source <(kubectl-gpu completion bash)      # bash, e.g. in ~/.bashrc
  source <(kubectl-gpu completion zsh)       # zsh, after compinit
  kubectl-gpu completion fish | source       # fish
`kubectl gpu <TAB>` (kubectl 1.26+) uses the kubectl_complete-gpu executable
installed next to kubectl-gpu; nothing to set up beyond kubectl's own completion.""")


@click.command("completion", epilog=EPILOG)
@click.argument("shell", type=click.Choice(SHELLS))
def command(shell: str) -> None:
    """Print the shell completion script for kubectl-gpu (bash, zsh or fish)."""
    from click.shell_completion import get_completion_class

    from kubectl_gpu.cli.main import main

    complete = get_completion_class(shell)(main, {}, EXECUTABLE, COMPLETE_VAR)
    click.echo(complete.source())


def plugin_completions(args: list[str]) -> tuple[list[CompletionItem], int]:
    """What kubectl_complete-gpu answers for `kubectl gpu ARGS...`: completions and a directive."""
    from click.shell_completion import ShellComplete

    from kubectl_gpu.cli.main import main

    words, incomplete = (args[:-1], args[-1]) if args else ([], "")
    items = ShellComplete(main, {}, EXECUTABLE, COMPLETE_VAR).get_completions(words, incomplete)
    if not items or any(item.type in ("file", "dir") for item in items):
        return [], DIRECTIVE_DEFAULT  # file arguments (migrate, -f): let the shell complete file names
    if all(str(item.value).endswith("/") for item in items):
        return items, DIRECTIVE_NO_FILE_COMP | DIRECTIVE_NO_SPACE
    return items, DIRECTIVE_NO_FILE_COMP


def kubectl_complete() -> None:
    """The `kubectl_complete-gpu` executable."""
    try:
        items, directive = plugin_completions(sys.argv[1:])
    except Exception:  # noqa: BLE001 - completion must never print a traceback into the shell
        items, directive = [], DIRECTIVE_NO_FILE_COMP
    for item in items:
        help_text = " ".join(str(item.help).split()) if item.help else ""
        click.echo(f"{item.value}\t{help_text}" if help_text else item.value)
    click.echo(f":{directive}")


def names_from_cluster(kind: str) -> Callable[[click.Context, click.Parameter, str], list[CompletionItem]]:
    """A click `shell_complete` callback listing the names of `kind` (nodes, pods, resourceclaims)
    with the kubeconfig, context and namespace given so far on the command line."""
    from kubectl_gpu.k8s.name_completion import complete_nodes, completing
    from kubectl_gpu.k8s.paths import collection_path

    if kind == "nodes":
        return complete_nodes
    if kind == "pods":
        return completing(lambda _connection, namespace: collection_path("", "v1", "pods", namespace))
    return completing(lambda connection, namespace: _dra_path(connection, kind, namespace))


def _dra_path(connection: Any, kind: str, namespace: str) -> str:
    from kubectl_gpu.inspect.fetch import discover_dra

    return discover_dra(connection.api).path(kind, namespace)


def complete_kind_and_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """`rollback <TAB>`: KIND/ first (the workloads of k8s/paths.py WORKLOADS, and node/), then the
    names of that kind in the namespace given so far (or the context's)."""
    from click.shell_completion import CompletionItem

    from kubectl_gpu.k8s.discovery import resolve_resource
    from kubectl_gpu.k8s.name_completion import completing, nodes_path
    from kubectl_gpu.k8s.paths import WORKLOAD_RESOURCES, Resource

    kinds = {r.kind.lower(): r for r in WORKLOAD_RESOURCES}
    kind, slash, _ = incomplete.partition("/")
    if not slash:
        return [CompletionItem(f"{k}/") for k in sorted([*kinds, "node"]) if k.startswith(incomplete.lower())]
    if kind.lower() == "node":
        return completing(nodes_path, prefix=f"{kind}/")(ctx, param, incomplete)
    def path(connection: Any, namespace: str) -> str:
        # kubectl's other names for the kind (deploy, deployments.apps) as rollback reads them: discovery.
        resource: Resource | None = kinds.get(kind.lower())
        if resource is None:
            served = resolve_resource(connection.api, kind)
            resource = kinds.get(served.kind.lower()) if served is not None else None
        if resource is None:
            raise LookupError(f"{kind}: not a workload kind rollback reads")
        return resource.path(namespace)

    return completing(path, prefix=f"{kind}/")(ctx, param, incomplete)


def complete_device_plugin_nodes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """`migrate nodes <TAB>`: the nodes a wave can switch, those offering device-plugin GPUs and
    not labelled as DRA nodes (--dra-node-label typed so far, else the default); the nodes already
    typed are left out."""
    from click.shell_completion import CompletionItem

    from kubectl_gpu.cli.options import parse_dra_labels
    from kubectl_gpu.inspect.dra_nodes import is_dra_node
    from kubectl_gpu.inspect.legacy import node_legacy_resources
    from kubectl_gpu.k8s.lists import list_objects
    from kubectl_gpu.k8s.name_completion import nodes_path, options_so_far

    typed = set(ctx.params.get(param.name or "") or ())
    try:
        labels = parse_dra_labels(tuple(ctx.params.get("dra_node_labels") or ()))
        connection = options_so_far(ctx).connect()
        nodes = list_objects(connection.api, nodes_path(connection, ""))
    except Exception:  # noqa: BLE001 - no cluster, no names: completion stays quiet
        return []
    names = []
    for node in nodes:
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        if (name.startswith(incomplete) and name not in typed and not is_dra_node(meta.get("labels") or {}, labels)
                and any(r.is_gpu and r.offered for r in node_legacy_resources(node))):
            names.append(name)
    return [CompletionItem(name) for name in sorted(names)]
