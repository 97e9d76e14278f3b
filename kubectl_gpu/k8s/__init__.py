"""The one Kubernetes client of kubectl-gpu (the CLI and the webhook both use it).

`AsyncClient` (client.py) speaks raw JSON over a transport: aiohttp for the webhook and watches,
the standard library's http.client for the CLI (blocking_transport.py); `Client` is its
synchronous face for the CLI.  One error hierarchy (errors.py), one table of kinds and URL paths (paths.py), one paginator
that restarts on HTTP 410 (lists.py), one list-then-watch copy of a collection (watch.py).  Kubeconfig loading is kubeconfig.py (into access.py's ClusterAccess; exec plugins:
exec_credential.py), API discovery
discovery.py.

Objects come back as plain dicts (the API's own JSON), never as the client's generated models:
building models for 10,000 pods costs seconds, and the inspection code reads the same field names
kubectl users know from `-o yaml`.
"""

from kubectl_gpu.lazy_exports import homes_of, lazy_exports

# Where each public name lives.  The package loads a module only when one of its names is first
# used: the client pulls in aiohttp (~0.25 s), which offline commands
# (`explain -f --slices`, `migrate FILE`) never need.
_HOMES = {
    "errors": ("ApiError", "Conflict", "Expired", "Forbidden", "KubeconfigError", "NotFound", "Unavailable",
               "Unreachable"),
    "client": ("AsyncClient", "Client", "run_sync"),
    "kubeconfig": ("Connection", "connect", "load_access"),
    "access": ("ClusterAccess",),
    "lists": ("DEFAULT_PAGE_SIZE", "list_objects"),
    "watch": ("Informer",),
    "rest": ("get_json", "get_object"),
    "discovery": ("DRA_GROUP", "DRA_VERSIONS", "served_versions", "preferred_dra_version"),
    "paths": ("PLURALS", "POD", "WORKLOADS", "WORKLOAD_RESOURCES", "Resource", "Workload", "collection_path", "object_path"),
}
__getattr__ = lazy_exports(__name__, globals(), homes_of(_HOMES))


__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "ClusterAccess",
    "Conflict",
    "Connection",
    "DEFAULT_PAGE_SIZE",
    "DRA_GROUP",
    "DRA_VERSIONS",
    "Expired",
    "Forbidden",
    "Informer",
    "KubeconfigError",
    "NotFound",
    "PLURALS",
    "Resource",
    "Unavailable",
    "Unreachable",
    "POD",
    "WORKLOADS",
    "WORKLOAD_RESOURCES",
    "Workload",
    "collection_path",
    "connect",
    "get_json",
    "get_object",
    "list_objects",
    "load_access",
    "object_path",
    "preferred_dra_version",
    "run_sync",
    "served_versions",
]
