"""The webhook's view of its own cluster: the ClusterProfile migrate --from-cluster reads, kept for
a short time.

Only admissions that rewrite something need it (which resource.k8s.io version to write, whether
GPUs can be shared, whether a claim can ever be satisfied), so the API server sees one version
lookup and one list of DeviceClasses and ResourceSlices every ``ttl`` seconds at most.  When a
refresh fails, the last profile read is used until one succeeds: a stale list of devices is a
better guide than none, and the version the server serves does not change under a running webhook.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Callable

from kubectl_gpu.cluster.profile import ClusterProfile, dra_list_paths, profile_from_discovery, stamped
from kubectl_gpu.core.constants import DRA_GROUP
from kubectl_gpu.k8s import ApiError, AsyncClient

from .singleflight import SingleFlight


class ProfileCache:
    def __init__(
        self,
        api: AsyncClient,
        ttl_seconds: float = 60.0,
        gate_overrides: Mapping[str, bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_api_error: Callable[[str], None] = lambda operation: None,
    ) -> None:
        self.api = api
        self.ttl = ttl_seconds
        self.gate_overrides = dict(gate_overrides or {})
        self.clock = clock
        self.on_api_error = on_api_error
        self._profile: ClusterProfile | None = None
        self._expires = 0.0
        self._flight: SingleFlight[str, ClusterProfile] = SingleFlight()

    async def get(self) -> ClusterProfile:
        """The cluster's profile; raises the API's error only when no profile was ever read."""
        if self._profile is not None and self._expires > self.clock():
            return self._profile
        try:
            return await self._flight.run("profile", self._refresh)
        except Exception:
            self.on_api_error("read_cluster_profile")
            if self._profile is not None:
                return self._profile
            raise

    async def _refresh(self) -> ClusterProfile:
        # The same GETs as `kubectl gpu migrate --from-cluster` (kubectl_gpu.cluster.read_live_profile).
        version = await self.api.get_json("/version")
        try:
            group = await self.api.get_json(f"/apis/{DRA_GROUP}")
        except ApiError as exc:
            if not exc.not_found:
                raise
            group = {}
        objects = []
        for path, api_version, kind in dra_list_paths(group):
            objects.extend(stamped(await self.api.list_objects(path), api_version, kind))
        profile = profile_from_discovery("the webhook's cluster", version, group, objects, self.gate_overrides)
        self._profile = profile
        self._expires = self.clock() + self.ttl
        return profile
