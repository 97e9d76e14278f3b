"""URL paths of API resources, from group/version/plural, the way the API server lays them out."""

from __future__ import annotations


def collection_path(group: str, version: str, plural: str, namespace: str | None = None) -> str:
    """/api/v1/pods, /api/v1/namespaces/ns/pods, /apis/resource.k8s.io/v1/resourceslices..."""
    root = f"/api/{version}" if group in ("", "core") else f"/apis/{group}/{version}"
    if namespace:
        return f"{root}/namespaces/{namespace}/{plural}"
    return f"{root}/{plural}"


def object_path(group: str, version: str, plural: str, name: str,
                namespace: str | None = None) -> str:
    return f"{collection_path(group, version, plural, namespace)}/{name}"
