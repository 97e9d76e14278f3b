"""Labels of namespaces and nodes, looked up on demand and kept for a short time.

An AdmissionReview carries the pod but not its namespace's labels (opt-out) nor its node's
(DRA node or not).  Only pods that ask for legacy GPUs need them, so a lookup per namespace or
node every ``ttl`` seconds is all the API traffic this costs; a label change takes effect within
``ttl``.
"""

from __future__ import annotations

import time
from typing import Callable

from .kubeapi import ApiError, AsyncKubeApi, Resource
from .singleflight import SingleFlight


class LabelCache:
    def __init__(
        self,
        api: AsyncKubeApi,
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
        self._entries: dict[str, tuple[float, dict[str, str]]] = {}
        self._flights: SingleFlight[str, dict[str, str]] = SingleFlight()

    async def labels(self, name: str) -> dict[str, str]:
        """The object's labels ({} if it does not exist); raises ApiError if the API fails."""
        entry = self._entries.get(name)
        if entry is not None and entry[0] > self.clock():
            return entry[1]
        return await self._flights.run(name, lambda: self._refresh(name))

    async def _refresh(self, name: str) -> dict[str, str]:
        labels = await self._fetch(name)
        self._entries[name] = (self.clock() + self.ttl, labels)
        if len(self._entries) > 50_000:  # bounded: drop the oldest half
            for key in list(self._entries)[: len(self._entries) // 2]:
                del self._entries[key]
        return labels

    async def _fetch(self, name: str) -> dict[str, str]:
        try:
            obj = await self.api.get(self.resource, None, name)
        except ApiError as exc:
            if exc.not_found:
                return {}
            self.on_api_error(f"get_{self.resource.kind.lower()}")
            raise
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return {str(k): str(v) for k, v in labels.items()}
