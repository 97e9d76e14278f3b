"""Thin helpers over the kubernetes client: kubeconfig loading, raw JSON requests, paginated lists,
API discovery.

Objects come back as plain dicts (the API's own JSON), never as the client's generated models:
building models for 10,000 pods costs seconds, and the inspection code reads the same field names
kubectl users know from `-o yaml`.
"""

from kubectl_gpu.k8s.errors import ApiError, KubeconfigError
from kubectl_gpu.k8s.kubeconfig import Connection, connect
from kubectl_gpu.k8s.lists import DEFAULT_PAGE_SIZE, list_objects
from kubectl_gpu.k8s.rest import get_json, get_object
from kubectl_gpu.k8s.discovery import DRA_GROUP, DRA_VERSIONS, served_versions, preferred_dra_version
from kubectl_gpu.k8s.paths import collection_path, object_path

__all__ = [
    "ApiError",
    "Connection",
    "DEFAULT_PAGE_SIZE",
    "DRA_GROUP",
    "DRA_VERSIONS",
    "KubeconfigError",
    "collection_path",
    "connect",
    "get_json",
    "get_object",
    "list_objects",
    "object_path",
    "preferred_dra_version",
    "served_versions",
]
