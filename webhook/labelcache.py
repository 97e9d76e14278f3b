"""Labels of namespaces, nodes and the workloads that own pods, looked up on demand and kept for a short time.

An AdmissionReview carries the pod but not its namespace's labels (opt-out) nor its node's
(DRA node or not).  Only pods that ask for legacy GPUs need them, so a lookup per namespace or
node every ``ttl`` seconds is all the API traffic this costs; a label change takes effect within
``ttl``.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from kubectl_gpu.k8s import ApiError, AsyncClient, Resource

from .singleflight import SingleFlight


class LabelCache:
    def __init__(
        self,
        api: AsyncClient,
        resource: Resource,
        ttl_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        on_api_error: Callable[[str], None] = lambda operation: None,
    ) -> None:
        self.api = api
        self.resource = resource
        self.ttl = ttl_seconds
        self.clock = clock
        self.on_api_error = on_api_error
        self._entries: dict[tuple[str | None, str], tuple[float, dict[str, Any]]] = {}
        self._flights: SingleFlight[tuple[str | None, str], dict[str, Any]] = SingleFlight()

    async def labels(self, name: str, namespace: str | None = None) -> dict[str, str]:
        """The object's labels ({} if it does not exist); raises ApiError if the API fails."""
        return (await self.metadata(name, namespace)).get("labels") or {}

    async def metadata(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        """``labels`` and ``ownerReferences`` of the object ({} if it does not exist)."""
        key = (namespace, name)
        entry = self._entries.get(key)
        if entry is not None and entry[0] > self.clock():
            return entry[1]
        return await self._flights.run(key, lambda: self._refresh(key))

    async def _refresh(self, key: tuple[str | None, str]) -> dict[str, Any]:
        labels = await self._fetch(*key)
        self._entries[key] = (self.clock() + self.ttl, labels)
        if len(self._entries) > 50_000:  # bounded: drop the oldest half
            for key in list(self._entries)[: len(self._entries) // 2]:
                del self._entries[key]
        return labels

    async def _fetch(self, namespace: str | None, name: str) -> dict[str, Any]:
        try:
            obj = await self.api.get(self.resource, namespace, name)
        except ApiError as exc:
            if exc.not_found:
                return {}
            self.on_api_error(f"get_{self.resource.kind.lower()}")
            raise
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        labels = metadata.get("labels") if isinstance(metadata.get("labels"), dict) else {}
        owners = metadata.get("ownerReferences") if isinstance(metadata.get("ownerReferences"), list) else []
        return {
            "labels": {str(k): str(v) for k, v in labels.items()},
            "ownerReferences": [r for r in owners if isinstance(r, dict)],
        }
