"""The webhook's view of its own cluster: the ClusterProfile migrate --from-cluster reads, kept true
by watching the objects it is made of.

Only admissions that rewrite something need it (which resource.k8s.io version to write, whether
GPUs can be shared, whether a claim can ever be satisfied).  DeviceClasses and ResourceSlices are
listed once and then watched (`kubectl_gpu.k8s.Informer`): a GPU node that joins, a driver that
republishes its slices or a class added by an operator is seen by the next pod, with no re-read on a
timer.  The profile is rebuilt from the watched copies when they have changed (at most once a
second: a cluster whose drivers republish constantly does not rebuild it for every pod).  The API
server's version and served resource.k8s.io versions are re-read every ``ttl`` seconds (they change
only with an upgrade, and a new newest version means watching that version's collections).

Nodes are watched too, keeping only what says where the NVIDIA device plugin time-slices
(`kubectl_gpu.cluster.shared_gpus.node_as_read`: a GPU node's name and labels, another node's
name): a pod whose node selection keeps it in such a pool asked for slots, and is translated as
`migrate` translates it.  A node's heartbeat changes nothing kept, so it rebuilds nothing.  Nodes
only refine the translation: while they cannot be listed (RBAC without nodes list/watch) the
profile has none, as `migrate --from-cluster` does.

When a watch fails, its last copy is used until it recovers: a stale list of devices is a better
guide than none.  Only while nothing was ever read does `get` raise the API's error.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any, Callable

from kubectl_gpu.cluster.profile import ClusterProfile, dra_list_paths, profile_from_discovery, stamped
from kubectl_gpu.cluster.shared_gpus import node_as_read
from kubectl_gpu.core.constants import DRA_GROUP
from kubectl_gpu.k8s import ApiError, AsyncClient, Informer

from .singleflight import SingleFlight

# A profile is rebuilt from changed watches at most this often.
REBUILD_SECONDS = 1.0
NODES = ("/api/v1/nodes", "v1", "Node")


def slice_as_read(obj: dict[str, Any]) -> dict[str, Any]:
    """A ResourceSlice as the profile reads it: its spec (every device, read by
    kubectl_gpu.dra.devices) and the name and resourceVersion of its metadata (current_slices, the
    profile's revision).  managedFields, labels and owner references are a large part of a slice a
    driver wrote and are never read; the watch holds every slice of the fleet
    (scripts/bench_webhook_memory.py measures it)."""
    metadata = obj.get("metadata")
    kept = {k: metadata[k] for k in ("name", "resourceVersion") if k in metadata} if isinstance(metadata, dict) else {}
    return {**{k: _shared(v) for k, v in obj.items() if k != "metadata"}, "metadata": kept}


def _shared(value: Any) -> Any:
    """``value`` with every string interned: the slices of a fleet repeat the same keys, attribute
    names, product names and versions thousands of times, and each decode makes new copies."""
    if isinstance(value, dict):
        return {sys.intern(k) if isinstance(k, str) else k: _shared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shared(v) for v in value]
    if isinstance(value, str):
        return sys.intern(value)
    return value


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
        # Bumped by every change a watch reports and by new discovery: the profile is rebuilt when
        # it moved since the build (an int compare per review, not a walk over the watches).
        self._generation = 0
        self._built_from = -1
        self._built_at = -1e9
        self._discovery: tuple[dict[str, Any], dict[str, Any]] | None = None  # /version, /apis/resource.k8s.io
        self._discovered_at = -1e9
        # (path, apiVersion, kind) -> its watch
        self._watches: dict[tuple[str, str, str], Informer] = {}
        self._flight: SingleFlight[str, ClusterProfile] = SingleFlight()
        self._nodes: Informer | None = None
        self._node_views: dict[str, dict[str, Any]] = {}  # name -> node_as_read, to tell a heartbeat

    async def get(self) -> ClusterProfile:
        """The cluster's profile; raises the API's error only when no profile was ever read."""
        if self._profile is not None and not self._due():
            return self._profile
        try:
            return await self._flight.run("profile", self._refresh)
        except Exception:
            self.on_api_error("read_cluster_profile")
            if self._profile is not None:
                return self._profile
            raise

    async def close(self) -> None:
        watches, self._watches = list(self._watches.values()), {}
        if self._nodes is not None:
            watches.append(self._nodes)
            self._nodes = None
        for informer in watches:
            await informer.stop()

    def _due(self) -> bool:
        now = self.clock()
        if now - self._discovered_at >= self.ttl:
            return True
        return self._generation != self._built_from and now - self._built_at >= REBUILD_SECONDS

    def _changed(self, _change: str, _obj: dict[str, Any]) -> None:
        self._generation += 1

    def _node_changed(self, change: str, obj: dict[str, Any]) -> None:
        """A node's kept view changed (not merely its resourceVersion): the profile moves."""
        name = str((obj.get("metadata") or {}).get("name"))
        view = {**obj, "metadata": {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}}
        if change == "DELETED":
            self._node_views.pop(name, None)
        elif self._node_views.get(name) == view:
            return
        else:
            self._node_views[name] = view
        self._generation += 1

    async def _refresh(self) -> ClusterProfile:
        if self._discovery is None or self.clock() - self._discovered_at >= self.ttl:
            await self._discover()
        for informer in self._watches.values():
            if not informer.synced:
                # The first list of each collection (at most one API timeout); a failing one is
                # retried by its watch, and its error is the caller's.
                if not await informer.wait_synced(self.api.timeout):
                    raise informer.last_error or ApiError.from_status(
                        0, informer.path, f"listing {informer.path} took longer than {self.api.timeout}s")
        nodes = self._nodes
        if nodes is not None:
            await _first_list_or_error(nodes, self.api.timeout)
        identity = self._generation
        if self._profile is not None and identity == self._built_from:
            return self._profile
        assert self._discovery is not None
        version, group = self._discovery
        objects = []
        for (_, api_version, kind), informer in self._watches.items():
            objects.extend(stamped(informer.values(), api_version, kind))
        if nodes is not None and nodes.synced:
            objects.extend(stamped(nodes.values(), NODES[1], NODES[2]))
        profile = profile_from_discovery("the webhook's cluster", version, group, objects, self.gate_overrides)
        self._profile, self._built_from, self._built_at = profile, identity, self.clock()
        return profile

    async def _discover(self) -> None:
        # The same GETs as `kubectl gpu migrate --from-cluster` (kubectl_gpu.cluster.read_live_profile).
        version = await self.api.get_json("/version")
        try:
            group = await self.api.get_json(f"/apis/{DRA_GROUP}")
        except ApiError as exc:
            if not exc.not_found:
                raise
            group = {}
        wanted = set(dra_list_paths(group))
        for key in [k for k in self._watches if k not in wanted]:
            await self._watches.pop(key).stop()
            self._generation += 1
        for key in sorted(wanted):
            if key not in self._watches:
                informer = Informer(self.api, key[0], on_change=self._changed,
                                    transform=slice_as_read if key[2] == "ResourceSlice" else None)
                informer.start()
                self._watches[key] = informer
                self._generation += 1
        if self._nodes is None:
            self._nodes = Informer(self.api, NODES[0], on_change=self._node_changed, transform=node_as_read)
            self._nodes.start()
        if self._discovery is None or self._discovery != (version, group):
            self._discovery = (version, group)
            self._generation += 1
        self._discovered_at = self.clock()


async def _first_list_or_error(informer: Informer, timeout: float) -> None:
    """Wait for the informer's first list until it fails or ``timeout``: a refusal (RBAC without nodes
    list) must not hold a review for the whole timeout."""
    deadline = time.monotonic() + timeout
    while not informer.synced and informer.last_error is None and time.monotonic() < deadline:
        await informer.wait_synced(min(0.05, max(0.0, deadline - time.monotonic())))
