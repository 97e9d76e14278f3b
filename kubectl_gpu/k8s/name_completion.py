"""Names from the cluster for shell completion (`-n <TAB>`, `migrate nodes <TAB>`, `rollback <TAB>`),
read with the kubeconfig, context and namespace typed so far on the command line.

click.shell_completion is imported when a name is completed, not here: the commands make these
callbacks at import, and running them never completes anything.  A completion that waits for a
dead cluster is worse than none, so each read is bounded, and any failure completes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from kubectl_gpu.k8s.kubeconfig import Connection

NAMES_TIMEOUT_SECONDS = 5.0

# Where a command's names are: the connection and the namespace typed (or the context's).
PathOf = Callable[["Connection", str], str]


def options_so_far(ctx: click.Context) -> Any:
    """ClusterOptions from the flags given so far, the command's over the group's."""
    from kubectl_gpu.k8s.options import ClusterOptions

    params: dict[str, Any] = {}
    chain = []
    current: click.Context | None = ctx
    while current is not None:
        chain.append(current)
        current = current.parent
    for level in reversed(chain):
        params.update({k: v for k, v in level.params.items() if v not in (None, False, ())})
    timeout = params.get("request_timeout")
    timeout = timeout if isinstance(timeout, (int, float)) and timeout > 0 else NAMES_TIMEOUT_SECONDS
    return ClusterOptions(kubeconfig=params.get("kubeconfig"), context=params.get("context"),
                          namespace=params.get("namespace"), request_timeout=min(timeout, NAMES_TIMEOUT_SECONDS))


def listed_names(ctx: click.Context, path_of: PathOf) -> list[str]:
    """The sorted names of the collection ``path_of`` points at."""
    from kubectl_gpu.k8s.lists import list_objects

    options = options_so_far(ctx)
    connection = options.connect()
    path = path_of(connection, options.namespace or connection.namespace)
    return sorted(str((o.get("metadata") or {}).get("name") or "") for o in list_objects(connection.api, path))


def completing(path_of: PathOf, prefix: str = "") -> Callable[[click.Context, click.Parameter, str],
                                                                list[CompletionItem]]:
    """A click `shell_complete` callback: the names at ``path_of`` that start with what was typed,
    each written after ``prefix`` (`deployment/` for KIND/NAME arguments)."""

    def complete(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        try:
            return [CompletionItem(prefix + n) for n in listed_names(ctx, path_of) if (prefix + n).startswith(incomplete)]
        except Exception:  # noqa: BLE001 - no cluster, no names: completion stays quiet
            return []

    return complete


def namespaces_path(_connection: Any, _namespace: str) -> str:
    from kubectl_gpu.k8s.paths import collection_path

    return collection_path("", "v1", "namespaces")


def nodes_path(_connection: Any, _namespace: str) -> str:
    from kubectl_gpu.k8s.paths import collection_path

    return collection_path("", "v1", "nodes")


complete_namespaces = completing(namespaces_path)
complete_nodes = completing(nodes_path)
