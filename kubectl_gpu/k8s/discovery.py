"""Which versions of an API group the cluster serves (GET /apis/GROUP)."""

from __future__ import annotations

from kubectl_gpu.dra.facts import DRA_GROUP, DRA_VERSIONS
from kubectl_gpu.k8s.client import Client
from kubectl_gpu.k8s.errors import ApiError
from kubectl_gpu.k8s.rest import get_json

# DRA_VERSIONS, newest first (v1 GA in 1.34, v1beta2 in 1.33, v1beta1 in 1.32), come from the facts.


def served_versions(api: Client, group: str) -> tuple[str, ...]:
    """The versions the server lists for `group`, preferred first; () when it serves none."""
    try:
        doc = get_json(api, f"/apis/{group}")
    except ApiError as exc:
        if exc.not_found:
            return ()
        raise
    versions = [v.get("version") for v in doc.get("versions") or () if v.get("version")]
    preferred = (doc.get("preferredVersion") or {}).get("version")
    if preferred in versions:
        versions.remove(preferred)
        versions.insert(0, preferred)
    return tuple(versions)


def preferred_dra_version(served: tuple[str, ...]) -> str | None:
    """The newest DRA version both the cluster and kubectl-gpu understand."""
    for version in DRA_VERSIONS:
        if version in served:
            return version
    return None
