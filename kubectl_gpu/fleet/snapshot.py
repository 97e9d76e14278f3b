"""A snapshot of the cluster objects a fleet plan reads, sorted by what they are."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_gpu.core.constants import DRA_GROUP
from kubectl_gpu.explain.inputs import flatten
from kubectl_gpu.manifests.locate import find_pod_sites

Obj = Mapping[str, Any]
# Objects that hold pod templates but are never the thing to migrate.
NOT_WORKLOADS = frozenset({"Pod", "PodTemplate", "ControllerRevision"})
# Built-in kinds that always hold a pod template (no need to search them for one).
TEMPLATE_KINDS = {"apps": ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"), "batch": ("Job", "CronJob")}


@dataclass(frozen=True)
class Snapshot:
    nodes: tuple[Obj, ...] = ()
    pods: tuple[Obj, ...] = ()
    workloads: tuple[Obj, ...] = ()  # every object with a pod template (Deployments, Jobs, CRs...)
    pdbs: tuple[Obj, ...] = ()
    resource_slices: tuple[Obj, ...] = ()
    device_classes: tuple[Obj, ...] = ()
    claim_templates: tuple[Obj, ...] = ()
    ignored: tuple[str, ...] = field(default=())
    # (apiVersion, kind) -> plural of the resources listed through discovery (custom resources)
    plurals: Mapping[tuple[str, str], str] = field(default_factory=dict)


def ref(obj: Obj) -> str:
    """Kind/namespace/name, the way the plan names objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{obj.get('kind')}/{namespace + '/' if namespace else ''}{meta.get('name')}"


def snapshot_from_objects(objects: Iterable[Any]) -> Snapshot:
    """Sort a pile of objects (several files, `kind: List`, `kubectl get -o yaml` output)."""
    buckets: dict[str, list[Obj]] = {k: [] for k in ("nodes", "pods", "workloads", "pdbs", "resource_slices",
                                                       "device_classes", "claim_templates")}
    ignored: list[str] = []
    for obj in flatten(objects):
        kind = obj.get("kind")
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if kind == "Node":
            buckets["nodes"].append(obj)
        elif kind == "Pod":
            buckets["pods"].append(obj)
        elif kind == "PodDisruptionBudget":
            buckets["pdbs"].append(obj)
        elif group == DRA_GROUP and kind == "ResourceSlice":
            buckets["resource_slices"].append(obj)
        elif group == DRA_GROUP and kind == "DeviceClass":
            buckets["device_classes"].append(obj)
        elif group == DRA_GROUP and kind == "ResourceClaimTemplate":
            buckets["claim_templates"].append(obj)
        elif kind in TEMPLATE_KINDS.get(group, ()) or (kind not in NOT_WORKLOADS and find_pod_sites(obj)):
            buckets["workloads"].append(obj)
        else:
            ignored.append(ref(obj))
    return Snapshot(**{k: tuple(v) for k, v in buckets.items()}, ignored=tuple(ignored))
