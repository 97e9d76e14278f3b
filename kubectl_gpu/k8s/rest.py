"""Raw JSON GETs for the CLI's inspection code, through the synchronous `Client` (client.py)."""

from __future__ import annotations

from typing import Any, Sequence

from kubectl_gpu.k8s.client import Client


def get_json(api: Client, path: str, query: Sequence[tuple[str, Any]] = ()) -> dict[str, Any]:
    """GET `path` (e.g. /api/v1/nodes) and return the decoded JSON body; ApiError otherwise."""
    return api.get_json(path, query)


def get_object(api: Client, path: str) -> dict[str, Any] | None:
    """GET one object; None when it does not exist."""
    return api.get_object(path)
