"""A snapshot of the cluster objects a fleet plan reads, sorted by what they are."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubectl_gpu.cluster import ClusterProfile, ProfileError, build_profile
from kubectl_gpu.core import KUEUE_GROUP, VOLCANO_SCHEDULING_GROUP
from kubectl_gpu.core.constants import DRA_GROUP
from kubectl_gpu.dra.facts import COMPUTE_DOMAIN_KIND
from kubectl_gpu.explain.inputs import flatten
from kubectl_gpu.explain.taint_rules import is_device_taint_rule
from kubectl_gpu.k8s.paths import WORKLOAD_RESOURCES
from kubectl_gpu.manifests.locate import find_pod_sites

Obj = Mapping[str, Any]
# Objects that hold pod templates but are never the thing to migrate.
NOT_WORKLOADS = frozenset({"Pod", "PodTemplate", "ControllerRevision"})
# Built-in kinds that always hold a pod template (no need to search them for one).
TEMPLATE_KINDS: dict[str, tuple[str, ...]] = {}
for _resource in WORKLOAD_RESOURCES:
    TEMPLATE_KINDS[_resource.group] = (*TEMPLATE_KINDS.get(_resource.group, ()), _resource.kind)


@dataclass(frozen=True)
class Snapshot:
    nodes: tuple[Obj, ...] = ()
    pods: tuple[Obj, ...] = ()
    workloads: tuple[Obj, ...] = ()  # every object with a pod template (Deployments, Jobs, CRs...)
    pdbs: tuple[Obj, ...] = ()
    resource_slices: tuple[Obj, ...] = ()
    device_classes: tuple[Obj, ...] = ()
    claim_templates: tuple[Obj, ...] = ()
    resource_claims: tuple[Obj, ...] = ()  # allocated ones hold their devices (status.allocation)
    compute_domains: tuple[Obj, ...] = ()  # NVIDIA ComputeDomains: each makes an IMEX channel claim template
    quotas: tuple[Obj, ...] = ()  # ResourceQuotas: their GPU caps must follow the workloads (fleet/quota_waves.py)
    cluster_queues: tuple[Obj, ...] = ()  # Kueue ClusterQueues: their GPU quota must count claims (fleet/kueue.py)
    volcano_queues: tuple[Obj, ...] = ()  # Volcano Queues: their GPU caps must count claims (fleet/queues.py)
    taint_rules: tuple[Obj, ...] = ()  # DeviceTaintRules: devices they taint take no pod that does not tolerate it
    ignored: tuple[str, ...] = field(default=())
    rejected: tuple[str, ...] = ()  # malformed objects left out, each with what is wrong
    dra_version: str | None = None  # the newest resource.k8s.io version the cluster serves (live only)
    # The one namespace whose objects move (live -n); pods, PDBs and claims of the others are read
    # only for what they hold.  None: every namespace.
    scope: str | None = None
    # The cluster as translation sees it (version, DRA gates, classes, published devices): the same
    # profile `migrate --cluster/--from-cluster` fits claims to. None: files with no DRA object.
    profile: ClusterProfile | None = None
    # (apiVersion, kind) -> plural of the resources listed through discovery (custom resources)
    plurals: Mapping[tuple[str, str], str] = field(default_factory=dict)


def ref(obj: Obj) -> str:
    """Kind/namespace/name, the way the plan names objects."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    namespace = meta.get("namespace")
    return f"{obj.get('kind')}/{f'{namespace}/' if namespace else ''}{meta.get('name')}"


# The fields the planner reads, and the JSON type each must have (None: may be absent or null).
_M, _L, _S = Mapping, list, str
SHAPES: dict[str, tuple[tuple[tuple[str, ...], type | tuple[type, ...]], ...]] = {
    "*": ((("metadata",), _M), (("metadata", "name"), _S), (("metadata", "namespace"), _S),
          (("metadata", "labels"), _M), (("metadata", "annotations"), _M), (("metadata", "ownerReferences"), _L),
          (("metadata", "uid"), _S), (("spec",), _M), (("status",), _M)),
    "Node": ((("status", "allocatable"), _M), (("status", "capacity"), _M), (("spec", "unschedulable"), bool)),
    "Pod": ((("spec", "nodeName"), _S), (("status", "phase"), _S), (("status", "conditions"), _L),
            (("spec", "containers"), _L), (("spec", "initContainers"), _L), (("spec", "resourceClaims"), _L)),
    "PodDisruptionBudget": ((("spec", "selector"), _M), (("spec", "selector", "matchLabels"), _M),
                            (("spec", "selector", "matchExpressions"), _L), (("spec", "minAvailable"), (int, str)),
                            (("spec", "maxUnavailable"), (int, str)), (("status", "disruptionsAllowed"), int),
                            (("status", "currentHealthy"), int), (("status", "desiredHealthy"), int)),
    "Deployment": ((("spec", "replicas"), int),), "StatefulSet": ((("spec", "replicas"), int),),
    "ReplicaSet": ((("spec", "replicas"), int),), "ReplicationController": ((("spec", "replicas"), int),),
    "Job": ((("spec", "parallelism"), int),),
}


def _is_map(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # a plain dict skips the ABC check (10,000s of objects)


def _has_type(value: Any, wanted: type | tuple[type, ...]) -> bool:
    if wanted is Mapping:
        return _is_map(value)
    return isinstance(value, wanted) and not (wanted is int and isinstance(value, bool))


def shape_error(obj: Mapping[str, Any]) -> str | None:
    """Why ``obj`` cannot be planned (a field of the wrong type), or None. The planner reads
    only objects that pass, so a malformed object is left out with this reason instead of
    crashing the plan."""
    kind = obj.get("kind")
    for path, wanted in (*SHAPES["*"], *SHAPES.get(str(kind), ())):
        value: Any = obj
        for key in path:
            value = value.get(key) if _is_map(value) else None
            if value is None:
                break
        if value is not None and not _has_type(value, wanted):
            return f"{'.'.join(path)} must be {_type_name(wanted)}, not {type(value).__name__}"
    for path in (("metadata", "labels"), ("metadata", "annotations"), ("status", "allocatable")):
        value = obj
        for key in path:
            value = value.get(key) if _is_map(value) else None
        if value and _is_map(value) and not all(type(v) is str or (isinstance(v, (str, int, float))
                                                                   and not isinstance(v, bool))
                                                for v in value.values()):
            return f"{'.'.join(path)} values must be strings"
    for owner in ((obj.get("metadata") or {}).get("ownerReferences") or ()):
        if not _is_map(owner):
            return "metadata.ownerReferences must hold objects"
    for item in ((obj.get("status") or {}).get("conditions") or ()) if kind == "Pod" else ():
        if not _is_map(item):
            return "status.conditions must hold objects"
    return None


def _type_name(wanted: type | tuple[type, ...]) -> str:
    names = {Mapping: "an object", list: "a list", str: "a string", int: "an integer", bool: "true or false"}
    types = wanted if isinstance(wanted, tuple) else (wanted,)
    return " or ".join(names.get(t, t.__name__) for t in types)


def _each_once(objects: Iterable[Any]) -> list[Any]:
    """One copy of each object: files may overlap (two `kubectl get -o yaml` dumps), and a cluster
    holds one object per group, kind, namespace and name: the last copy, as applying the files in
    order would leave it, in the place of the first.  Objects without a name are all kept."""
    unique: dict[Any, Any] = {}
    for position, obj in enumerate(objects):
        meta = obj.get("metadata") if _is_map(obj) else None
        name = meta.get("name") if _is_map(meta) else None
        key: Any = position
        if isinstance(name, str) and name and isinstance(obj.get("kind"), str):
            group = str(obj.get("apiVersion", "")).rpartition("/")[0]
            key = (group, obj["kind"], str(meta.get("namespace") or ""), name)
        unique[key] = obj
    return list(unique.values())


def snapshot_from_objects(objects: Iterable[Any]) -> Snapshot:
    """Sort a pile of objects (several files, `kind: List`, `kubectl get -o yaml` output)."""
    buckets: dict[str, list[Obj]] = {k: [] for k in ("nodes", "pods", "workloads", "pdbs", "resource_slices",
                                                       "device_classes", "claim_templates", "resource_claims",
                                                       "compute_domains", "quotas", "cluster_queues",
                                                       "volcano_queues", "taint_rules")}
    ignored: list[str] = []
    rejected: list[str] = []
    for obj in _each_once(flatten(objects)):
        kind = obj.get("kind")
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if not isinstance(kind, str):
            rejected.append(f"{kind!r}: not a Kubernetes object (kind must be a string)")
            continue
        problem = shape_error(obj)
        if problem is not None:
            rejected.append(f"{ref(obj) if isinstance(obj.get('metadata'), Mapping) else kind}: {problem}")
            continue
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
        elif group == DRA_GROUP and kind == "ResourceClaim":
            buckets["resource_claims"].append(obj)
        elif is_device_taint_rule(obj):
            buckets["taint_rules"].append(obj)
        elif kind == COMPUTE_DOMAIN_KIND:
            buckets["compute_domains"].append(obj)
        elif kind == "ResourceQuota" and obj.get("apiVersion") == "v1":
            buckets["quotas"].append(obj)
        elif kind == "ClusterQueue" and group == KUEUE_GROUP:
            buckets["cluster_queues"].append(obj)
        elif kind == "Queue" and group == VOLCANO_SCHEDULING_GROUP:
            buckets["volcano_queues"].append(obj)
        elif kind in TEMPLATE_KINDS.get(group, ()) or (kind not in NOT_WORKLOADS and find_pod_sites(obj)):
            buckets["workloads"].append(obj)
        else:
            ignored.append(ref(obj))
    return Snapshot(**{k: tuple(v) for k, v in buckets.items()}, ignored=tuple(ignored), rejected=tuple(rejected))


def with_file_profile(snapshot: Snapshot, source: str, *, kubernetes_minor: int | None = None,
                      gate_overrides: Mapping[str, bool] | None = None) -> Snapshot:
    """The snapshot of files with the cluster profile their DeviceClasses and ResourceSlices
    describe, exactly as ``migrate --cluster`` reads the same files (kubectl_gpu.cluster)."""
    if not snapshot.resource_slices and not snapshot.device_classes:
        return snapshot
    try:
        profile = build_profile(source, objects=[*snapshot.device_classes, *snapshot.resource_slices, *snapshot.nodes],
                                kubernetes_minor=kubernetes_minor, gate_overrides=gate_overrides)
    except ProfileError as err:
        return without_profile(snapshot, err)
    return replace(snapshot, profile=profile)


def without_profile(snapshot: Snapshot, error: Exception) -> Snapshot:
    """A snapshot whose cluster profile cannot be read (a ResourceSlice the scheduler could not
    use either): planned without it (whole GPUs, as migrate without --cluster), saying why."""
    return replace(snapshot, profile=None,
                   rejected=(*snapshot.rejected, f"the cluster profile ({error}; claims are fitted to none)"))
