"""The one Kubernetes client of kubectl-gpu (the CLI and the webhook both use it).

`AsyncClient` (client.py) speaks raw JSON over aiohttp; `Client` is its synchronous face for the
CLI.  One error hierarchy (errors.py), one table of kinds and URL paths (paths.py), one paginator
that restarts on HTTP 410 (lists.py).  Kubeconfig loading is kubeconfig.py, API discovery
discovery.py.

Objects come back as plain dicts (the API's own JSON), never as the client's generated models:
building models for 10,000 pods costs seconds, and the inspection code reads the same field names
kubectl users know from `-o yaml`.
"""

from kubectl_gpu.k8s.errors import (ApiError, Conflict, Expired, Forbidden, KubeconfigError, NotFound,
                                    Unavailable, Unreachable)
from kubectl_gpu.k8s.client import AsyncClient, Client, run_sync
from kubectl_gpu.k8s.kubeconfig import Connection, connect
from kubectl_gpu.k8s.lists import DEFAULT_PAGE_SIZE, list_objects
from kubectl_gpu.k8s.rest import get_json, get_object
from kubectl_gpu.k8s.discovery import DRA_GROUP, DRA_VERSIONS, served_versions, preferred_dra_version
from kubectl_gpu.k8s.paths import PLURALS, WORKLOAD_RESOURCES, Resource, collection_path, object_path

__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "Conflict",
    "Connection",
    "DEFAULT_PAGE_SIZE",
    "DRA_GROUP",
    "DRA_VERSIONS",
    "Expired",
    "Forbidden",
    "KubeconfigError",
    "NotFound",
    "PLURALS",
    "Resource",
    "Unavailable",
    "Unreachable",
    "WORKLOAD_RESOURCES",
    "collection_path",
    "connect",
    "get_json",
    "get_object",
    "list_objects",
    "object_path",
    "preferred_dra_version",
    "run_sync",
    "served_versions",
]
