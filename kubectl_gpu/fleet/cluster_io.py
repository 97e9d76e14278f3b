"""The fleet commands' I/O: read a cluster into a ``Snapshot``, and send the writes a wave needs.

Custom resources with pod templates (Kubeflow jobs, Ray clusters, LeaderWorkerSets...) are found
through discovery: every listable resource of a non-built-in API group is listed and kept when
its objects hold a pod template (the same shape test ``migrate`` uses).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kubectl_gpu.cluster.profile import ProfileError, profile_from_discovery, read_server_gates, stamped
from kubectl_gpu.core import KUEUE_GROUP, VOLCANO_SCHEDULING_GROUP
from kubectl_gpu.dra.facts import COMPUTE_DOMAIN_KIND, DRA_VERSIONS
from kubectl_gpu.inspect.fetch import list_taint_rules
from kubectl_gpu.k8s.client import Client
from kubectl_gpu.k8s.discovery import custom_resources
from kubectl_gpu.k8s.errors import ApiError
from kubectl_gpu.k8s.lists import list_objects
from kubectl_gpu.k8s.paths import PLURALS, WORKLOAD_RESOURCES, collection_path
from kubectl_gpu.k8s.rest import get_json
from kubectl_gpu.manifests.locate import find_pod_sites

from .snapshot import Snapshot, snapshot_from_objects, without_profile

BUILTIN_WORKLOADS = tuple((r.group, r.version, r.plural) for r in WORKLOAD_RESOURCES)


def fetch_snapshot(api: Client, namespace: str | None = None, node_selector: str | None = None, *,
                   source: str = "cluster", gate_overrides: Mapping[str, bool] | None = None,
                   profile: bool = True) -> Snapshot:
    """Nodes (those ``node_selector`` selects), pods, PDBs, workloads (built-in and custom),
    ResourceSlices, DeviceClasses, claim templates, ResourceClaims (their allocations hold
    devices) and ComputeDomains (the claims a legacy GPU is checked against), and the cluster
    profile (kubectl_gpu.cluster: /version, the served resource.k8s.io versions, the classes and
    slices) read from the same GETs ``migrate --from-cluster`` for files reads.
    ``profile=False``: no profile, and neither /version nor /metrics is read (``migrate nodes`` and
    ``rollback`` fit no claim to the cluster)."""
    def listed(group: str, version: str, plural: str, namespaced: bool = True,
               label_selector: str | None = None) -> list[dict[str, Any]]:
        try:
            return list_objects(api, collection_path(group, version, plural, namespace if namespaced else None),
                                label_selector=label_selector)
        except ApiError as exc:
            if exc.not_found:
                return []
            raise

    dra_group = _dra_group(api)
    dra_version = next((v for v in DRA_VERSIONS if v in _served(dra_group)), None)
    workloads: list[dict[str, Any]] = []
    domains: list[dict[str, Any]] = []
    plurals: dict[tuple[str, str], str] = {}
    customs = [(r.group, r.version, r.plural) for r in custom_resources(api)]
    for group, version, plural in (*BUILTIN_WORKLOADS, *customs):
        for obj in listed(group, version, plural):
            if find_pod_sites(obj):
                workloads.append(obj)
                plurals[(str(obj.get("apiVersion")), str(obj.get("kind")))] = plural
            elif obj.get("kind") == COMPUTE_DOMAIN_KIND:  # its IMEX channel template: a claim pods may use
                domains.append(obj)
    # What holds GPUs, and what guards the pods a node wave evicts, in every namespace: `namespace`
    # picks what moves, the scheduler sees them all (Snapshot.scope keeps other namespaces' pods out
    # of the plan's moves).  Without a profile (rollback, node waves) nothing is fitted or placed.
    # True: only `namespace` (nothing is placed); False: every namespace.
    holders_in_scope_only = not profile
    objects = [*listed("", "v1", "nodes", namespaced=False, label_selector=node_selector),
               *listed("", "v1", "pods", namespaced=holders_in_scope_only),
               *workloads, *domains,
               *listed("policy", "v1", "poddisruptionbudgets", namespaced=holders_in_scope_only),
               *stamped(listed("", "v1", PLURALS["ResourceQuota"]), "v1", "ResourceQuota"),
               *_cluster_queues(api, listed)]
    dra_objects: list[dict[str, Any]] = []
    if dra_version:
        dra_objects = [*stamped(listed("resource.k8s.io", dra_version, "resourceslices", False),
                                f"resource.k8s.io/{dra_version}", "ResourceSlice"),
                       *stamped(listed("resource.k8s.io", dra_version, "deviceclasses", False),
                                f"resource.k8s.io/{dra_version}", "DeviceClass")]
        objects += [*dra_objects, *listed("resource.k8s.io", dra_version, "resourceclaimtemplates"),
                    *stamped(listed("resource.k8s.io", dra_version, "resourceclaims", namespaced=holders_in_scope_only),
                             f"resource.k8s.io/{dra_version}", "ResourceClaim"),
                    *_taint_rules(api, _served(dra_group))]
    # The same sorting and shape checks as for files: one way into the planner.
    snapshot = replace(snapshot_from_objects(objects), plurals=plurals, dra_version=dra_version,
                       scope=namespace if profile else None)
    if not profile:
        return snapshot
    try:
        # The Nodes too: their GFD labels say where nvidia.com/gpu counted slots (cluster/shared_gpus.py).
        profile = profile_from_discovery(source, get_json(api, "/version"), dra_group,
                                         [*dra_objects, *snapshot.nodes], gate_overrides, read_server_gates(api.get_text))
    except ProfileError as err:  # a ResourceSlice the scheduler could not use either
        return without_profile(snapshot, err)
    return replace(snapshot, profile=profile)


def _taint_rules(api: Client, served: Sequence[str]) -> list[dict[str, Any]]:
    """The cluster's DeviceTaintRules.  Ones the plan may not read (403) are none: the taints
    drivers publish in their slices still count."""
    try:
        return list_taint_rules(api, served)
    except ApiError as exc:
        if exc.status == 403:
            return []
        raise


def _cluster_queues(api: Client, listed: Callable[..., list[dict[str, Any]]]) -> list[Mapping[str, Any]]:
    """Kueue's ClusterQueues and Volcano's Queues, cluster-wide objects whose GPU caps follow the
    migration, each at the version its API group prefers (none where it is not installed)."""
    return [*_preferred(api, listed, KUEUE_GROUP, "clusterqueues", "ClusterQueue"),
            *_preferred(api, listed, VOLCANO_SCHEDULING_GROUP, "queues", "Queue")]


def _preferred(api: Client, listed: Callable[..., list[dict[str, Any]]], group: str, plural: str,
               kind: str) -> list[Mapping[str, Any]]:
    try:
        served = get_json(api, f"/apis/{group}")
    except ApiError as exc:
        if exc.not_found:
            return []
        raise
    version = str((served.get("preferredVersion") or {}).get("version") or "")
    if not version:
        return []
    return stamped(listed(group, version, plural, False), f"{group}/{version}", kind)


def object_path(api_version: str, plural: str, namespace: str, name: str, subresource: str = "") -> str:
    group, _, version = api_version.rpartition("/")
    base = collection_path(group, version, plural, namespace or None)
    return f"{base}/{name}" + (f"/{subresource}" if subresource else "")


def _dra_group(api: Client) -> Mapping[str, Any]:
    try:
        return get_json(api, "/apis/resource.k8s.io")
    except ApiError as exc:
        if exc.not_found:
            return {}
        raise


def _served(group: Mapping[str, Any]) -> list[str]:
    return [str(v.get("version")) for v in group.get("versions") or () if isinstance(v, Mapping)]


def send(api: Client, method: str, path: str, body: Any = None, *,
         content_type: str = "application/json", query: Sequence[tuple[str, Any]] = ()) -> dict[str, Any]:
    """One write (or read) with a JSON body (JSON is YAML, so apply patches too), through the one
    client (kubectl_gpu.k8s); ApiError with the server's message otherwise."""
    return api.request(method, path, body=body, query=query, content_type=content_type)


def status_causes(error: ApiError) -> list[Mapping[str, Any]]:
    raw = error.body
    try:
        doc = json.loads(raw)
    except ValueError:
        return []
    return list(((doc.get("details") or {}).get("causes")) or []) if isinstance(doc, dict) else []
