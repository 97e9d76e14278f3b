"""Shell completion: `kubectl gpu completion bash|zsh|fish` for the `kubectl-gpu` command itself,
and `kubectl_complete-gpu`, which kubectl (1.26+) runs to complete `kubectl gpu <TAB>`.

kubectl's protocol (kubernetes/kubernetes#105867, staging/src/k8s.io/kubectl/pkg/cmd/plugin/
plugin_completion.go, and kubernetes/sample-cli-plugin's README): kubectl runs
`kubectl_complete-<plugin> ARGS... WORD` with the words after the plugin's name, the last one being
the word under the cursor (maybe empty), and reads Cobra's `__complete` answer: one completion per
line (`value<TAB>description`), then `:DIRECTIVE` (4: no file completion, 0: complete file names).

Both use click's completion of this command tree, so subcommands, flags and their choices are
never listed twice; node, pod and claim names come from the cluster (`names_from_cluster`).
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
# A completion that waits for a dead cluster is worse than none.
NAMES_TIMEOUT_SECONDS = 5.0

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
    with the kubeconfig, context and namespace given so far on the command line.

    click.shell_completion is imported when a name is completed, not here: explain and describe
    make this callback at import, and running them never completes anything."""

    def complete(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        try:
            return [CompletionItem(n) for n in _names(ctx, kind) if n.startswith(incomplete)]
        except Exception:  # noqa: BLE001 - no cluster, no names: completion stays quiet
            return []

    return complete


def _names(ctx: click.Context, kind: str) -> list[str]:
    from kubectl_gpu.inspect.fetch import discover_dra
    from kubectl_gpu.k8s import collection_path, list_objects
    from kubectl_gpu.k8s.options import ClusterOptions

    params: dict[str, Any] = {}
    for level in reversed(_chain(ctx)):
        params.update({k: v for k, v in level.params.items() if v not in (None, False, ())})
    options = ClusterOptions(kubeconfig=params.get("kubeconfig"), context=params.get("context"),
                             namespace=params.get("namespace"),
                             request_timeout=min(params.get("request_timeout") or NAMES_TIMEOUT_SECONDS,
                                                 NAMES_TIMEOUT_SECONDS))
    connection = options.connect()
    namespace = options.namespace or connection.namespace
    if kind == "nodes":
        path = collection_path("", "v1", "nodes")
    elif kind == "pods":
        path = collection_path("", "v1", "pods", namespace)
    else:
        path = discover_dra(connection.api).path(kind, namespace)
    return sorted(str((o.get("metadata") or {}).get("name") or "") for o in list_objects(connection.api, path))


def _chain(ctx: click.Context) -> list[click.Context]:
    chain = []
    current: click.Context | None = ctx
    while current is not None:
        chain.append(current)
        current = current.parent
    return chain
