"""The migration plan: workloads, and GPU nodes switched to the DRA driver in checked waves.

Pure. One wave = a few legacy nodes switch (cordon, label ``ack.node.gpu.schedule=disabled``,
device plugin off, drain), then the workloads whose DRA pods now fit on the DRA nodes migrate.
Every wave is checked before it is proposed:

1. the legacy pods on the wave's nodes fit on the legacy nodes left (their free device-plugin
   resources), and none of them is a bare pod that a drain would delete for good;
2. every PodDisruptionBudget over those pods allows a disruption (a drain through the eviction
   API waits forever on one that allows none);
3. the migrated workloads' pods fit on the DRA nodes' devices (Kubernetes' structured allocator,
   pod by pod; devices of nodes not yet switched are predicted from their GPU Feature Discovery
   labels).

A wave that fails 1 or 2 is halved until it passes; a single node that still fails is refused
with the numbers, and planning stops there (later waves would build on it).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from kubectl_gpu.cluster.shared_gpus import SharedPool, every_gpu_node_shares, shared_pools
from kubectl_gpu.core import TranslateOptions
from kubectl_gpu.inspect.dra_nodes import DEFAULT_DRA_NODE_LABELS, NodeLabel
from kubectl_gpu.inventory.driver_settings import DriverSettings

from kubectl_gpu.explain import allocations_from_claims

from .capacity import DraPool, GpuNode, LegacyPodLoad, _text, fit_legacy, gpu_nodes
from .snapshot import Snapshot
from .workloads import BLOCKED, MIGRATE, Translations, WorkloadPlan, _controller, claims_by_name, plan_workloads

DEFAULT_WAVES = 10  # default wave size: a tenth of the legacy GPU nodes


@dataclass(frozen=True)
class PdbCheck:
    pdb: str  # namespace/name
    pods: int  # of its pods this wave evicts
    allowed: int  # disruptions it allows now
    healthy: int
    desired: int

    def to_dict(self) -> dict[str, Any]:
        return {"pdb": self.pdb, "evicts": self.pods, "disruptionsAllowed": self.allowed,
                "currentHealthy": self.healthy, "desiredHealthy": self.desired}


@dataclass
class Wave:
    index: int
    nodes: list[str] = field(default_factory=list)
    workloads: list[str] = field(default_factory=list)
    moved_pods: list[str] = field(default_factory=list)  # legacy pods the drain re-places
    legacy_free_before: dict[str, Fraction] = field(default_factory=dict)
    legacy_free_after: dict[str, Fraction] = field(default_factory=dict)
    legacy_nodes_left: int = 0
    dra_nodes: int = 0
    dra_devices: int = 0
    dra_devices_used: int = 0
    dra_devices_allocated: int = 0  # held by ResourceClaims allocated before the plan (their status.allocation)
    pdbs: list[PdbCheck] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # why the wave cannot run, with the numbers
    quotas: list[str] = field(default_factory=list)  # the quota changes its namespaces need (quota_waves.py)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "wave": self.index, "nodes": self.nodes, "workloads": self.workloads,
            "legacy": {"podsMoved": self.moved_pods, "nodesLeft": self.legacy_nodes_left,
                       "freeBefore": {k: _text(v) for k, v in sorted(self.legacy_free_before.items())},
                       "freeAfter": {k: _text(v) for k, v in sorted(self.legacy_free_after.items())}},
            "dra": {"nodes": self.dra_nodes, "devices": self.dra_devices, "devicesUsed": self.dra_devices_used,
                    "allocatedBefore": self.dra_devices_allocated},
            "pdbs": [p.to_dict() for p in self.pdbs],
        }
        if self.quotas:
            out["quotas"] = self.quotas
        if self.refused:
            out["refused"] = self.refused
        return out


@dataclass
class MigrationPlan:
    workloads: list[WorkloadPlan]
    nodes: list[GpuNode]
    waves: list[Wave]
    unplaced: list[str]  # migratable workloads that fit on no DRA node even after the last wave
    dra_labels: tuple[NodeLabel, ...]
    # Pools whose device plugin shares each GPU: their legacy counts are slots, their DRA devices GPUs.
    shared_pools: tuple[SharedPool, ...] = ()
    every_gpu_node_shares: bool = False  # then nvidia.com/gpu was read as slots (cluster/fit.py)

    @property
    def refused(self) -> bool:
        return any(w.refused for w in self.waves)

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": "kubectl-gpu.io/v1alpha1", "kind": "MigrationPlan",
            "draNodeLabel": [str(label) for label in self.dra_labels],
            "workloads": [w.to_dict() for w in self.workloads],
            "nodes": [n.to_dict() for n in self.nodes],
            "waves": [w.to_dict() for w in self.waves],
            "unplaced": self.unplaced,
            "sharedPools": [{"nodes": list(p.nodes), "product": p.product, "strategy": p.sharing.strategy,
                             "replicas": p.sharing.replicas, "gpus": p.gpus, "slots": p.slots}
                            for p in self.shared_pools],
        }


def _top_owner(pod: Mapping[str, Any], by_uid: Mapping[str, Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """(top-level owner ref, owner kind) walking controller references (Pod -> ReplicaSet -> Deployment)."""
    owner = _controller(pod)
    ref, kind = None, None
    seen = 0
    while owner is not None and seen < 5:
        seen += 1
        kind = str(owner.get("kind"))
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        ref = f"{kind}/{namespace + '/' if namespace else ''}{owner.get('name')}"
        parent = by_uid.get(str(owner.get("uid")))
        owner = _controller(parent) if parent is not None else None
    return ref, kind


def _legacy_pods(snapshot: Snapshot, translate: Translations | None = None) -> list[LegacyPodLoad]:
    translate = translate or Translations()
    by_uid = {str((w.get("metadata") or {}).get("uid")): w for w in snapshot.workloads}
    loads = []
    for pod in snapshot.pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        demand = translate.demand(pod)
        if not demand:
            continue
        meta = pod.get("metadata") or {}
        owner, _ = _top_owner(pod, by_uid)
        direct = _controller(pod)
        loads.append(LegacyPodLoad(f"{meta.get('namespace')}/{meta.get('name')}",
                                   (pod.get("spec") or {}).get("nodeName"), demand, owner,
                                   daemon=direct is not None and direct.get("kind") == "DaemonSet"))
    return loads


def _pdb_allowance(pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(disruptionsAllowed, currentHealthy, desiredHealthy): the status when the disruption
    controller has written one, else computed the way it does from the matching pods."""
    status = pdb.get("status") or {}
    if "disruptionsAllowed" in status:
        return int(status["disruptionsAllowed"]), int(status.get("currentHealthy", 0)), int(status.get("desiredHealthy", 0))
    healthy = sum(1 for p in pods if _ready(p))
    spec = pdb.get("spec") or {}
    expected = len(pods)
    if "maxUnavailable" in spec:
        desired = max(expected - _scaled(spec["maxUnavailable"], expected), 0)
    else:
        desired = _scaled(spec.get("minAvailable", 1), expected)
    return max(healthy - desired, 0), healthy, desired


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def _ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def _selects(selector: Mapping[str, Any] | None, pod: Mapping[str, Any]) -> bool:
    if selector is None:
        return False
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or ():
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or ()
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


def plan_migration(snapshot: Snapshot, options: TranslateOptions = TranslateOptions(), *,
                   wave_size: int | None = None, dra_labels: Sequence[NodeLabel] = DEFAULT_DRA_NODE_LABELS,
                   workloads: list[WorkloadPlan] | None = None,
                   driver: DriverSettings = DriverSettings()) -> MigrationPlan:
    """``driver``: the NVIDIA DRA driver the nodes not yet on DRA will run (their predicted devices)."""
    translate = Translations()
    plans = workloads if workloads is not None else plan_workloads(snapshot, options, translate)
    nodes = gpu_nodes(snapshot.nodes, snapshot.resource_slices, dra_labels, driver, options.target_driver)
    claims = claims_by_name(plans)
    pool = DraPool(snapshot.device_classes, nodes,
                   snapshot.profile.feature_gates if snapshot.profile is not None else None, snapshot.taint_rules)
    for node in nodes:
        if node.dra:
            pool.add_node(node)
    pool.hold_allocated(allocations_from_claims(snapshot.resource_claims))
    blocked = _unsatisfiable([p for p in plans if p.status == MIGRATE], claims, pool) if pool.universe else {}
    plans = [blocked.get(p.ref, p) for p in plans]
    pending = [p for p in plans if p.status == MIGRATE]
    shapes: dict[str, tuple] = {}  # workload -> (pods, its claims' needs): alike workloads fit alike
    _place_running(snapshot, pool, {_claim_key(c) for c in snapshot.resource_claims})
    daemon_nodes = {p.ref: p.nodes for p in plans if p.kind == "DaemonSet"}

    loads = _legacy_pods(snapshot, translate)
    migrated: set[str] = set()
    legacy_nodes = [n for n in nodes if not n.dra and n.legacy_allocatable]
    free = {n.name: dict(n.legacy_allocatable) for n in legacy_nodes}
    for load in loads:
        if load.node in free:
            for resource, amount in load.demand.items():
                free[load.node][resource] = free[load.node].get(resource, Fraction(0)) - amount
    size = wave_size or max(1, math.ceil(len(legacy_nodes) / DEFAULT_WAVES))
    pods_by_ns: dict[str, list[Mapping[str, Any]]] = {}
    for pod in snapshot.pods:
        pods_by_ns.setdefault(str((pod.get("metadata") or {}).get("namespace")), []).append(pod)

    waves: list[Wave] = []
    pods_on = Counter(load.node for load in loads)
    remaining = [n.name for n in sorted(legacy_nodes, key=lambda n: (pods_on[n.name], n.name))]
    index = 0
    if pool.node_order:  # DRA nodes already exist: move what fits there before switching more
        wave = Wave(0)
        _migrate_fitting(wave, pending, migrated, claims, pool, loads, free, shapes)
        if wave.workloads:
            _close(wave, pool, remaining, free)
            waves.append(wave)
    by_name = {n.name: n for n in nodes}
    while remaining:
        index += 1
        take = min(size, len(remaining))
        while True:
            wave = Wave(index, nodes=remaining[:take])
            trial, placed = _check_drain(wave, loads, migrated, free, remaining[take:], snapshot.pdbs, pods_by_ns,
                                         daemon_nodes, set(pool.node_order) | set(remaining[:take]))
            if not wave.refused or take == 1:
                break
            take = max(1, take // 2)
        waves.append(wave)
        if wave.refused:
            break
        free.update(trial)
        loads = [replace(load, node=placed[load.ref]) if load.ref in placed else load for load in loads]
        for name in wave.nodes:
            pool.add_node(by_name[name])
            free.pop(name, None)
        remaining = remaining[take:]
        _migrate_fitting(wave, pending, migrated, claims, pool, loads, free, shapes)
        _close(wave, pool, remaining, free)
    unplaced = [p.ref for p in pending if p.ref not in migrated and not any(w.refused for w in waves)]
    return MigrationPlan(plans, nodes, waves, unplaced, tuple(dra_labels), tuple(shared_pools(snapshot.nodes)),
                         every_gpu_node_shares(snapshot.nodes))


def _close(wave: Wave, pool: DraPool, remaining: Sequence[str], free: Mapping[str, Mapping[str, Fraction]]) -> None:
    wave.dra_nodes = len(pool.node_order)
    wave.dra_devices = len(pool.devices)
    wave.dra_devices_used = pool.used
    wave.dra_devices_allocated = pool.allocated_before
    wave.legacy_nodes_left = len(remaining)
    wave.legacy_free_after = _total(free)


def _total(free: Mapping[str, Mapping[str, Fraction]]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for node_free in free.values():
        for resource, amount in node_free.items():
            total[resource] = total.get(resource, Fraction(0)) + amount
    return total


def _check_drain(wave: Wave, loads: Sequence[LegacyPodLoad], migrated: set[str],
                 free: Mapping[str, Mapping[str, Fraction]], rest: Sequence[str],
                 pdbs: Sequence[Mapping[str, Any]], pods_by_ns: Mapping[str, Sequence[Mapping[str, Any]]],
                 daemon_nodes: Mapping[str, Sequence[str]], dra_after: set[str],
                 ) -> tuple[dict[str, dict[str, Fraction]], dict[str, str]]:
    """Fill ``wave.refused`` when draining its nodes strands pods or breaks a budget; returns the
    legacy nodes' free resources after the drain and where each moved pod went."""
    draining = set(wave.nodes)
    moving = [p for p in loads if p.node in draining and p.owner not in migrated and not p.daemon]
    wave.moved_pods = sorted(p.ref for p in moving)
    wave.legacy_free_before = _total({n: free[n] for n in rest})
    bare = [p.ref for p in moving if p.owner is None]
    if bare:
        wave.refused.append(f"{len(bare)} bare pod(s) would be deleted by the drain, not moved (nothing recreates "
                            f"them): {', '.join(bare[:5])}; recreate them from migrated manifests first")
    daemons = sorted({p.owner for p in loads if p.node in draining and p.daemon and p.owner not in migrated
                      and not (p.owner in daemon_nodes and set(daemon_nodes[p.owner]) <= dra_after)})
    if daemons:
        wave.refused.append(f"{len(daemons)} DaemonSet(s) would keep device-plugin GPU pods on DRA nodes (double "
                            f"counting): {', '.join(daemons[:5])}; switch all of a DaemonSet's nodes in one wave, "
                            f"or keep it off DRA nodes (nodeAffinity ack.node.gpu.schedule NotIn disabled)")
    trial = {n: dict(free[n]) for n in rest}
    unplaced, placed = fit_legacy([p for p in moving if p.owner is not None], trial, list(rest))
    if unplaced:
        needed = _total({p.ref: p.demand for p in unplaced})
        wave.refused.append(
            f"{len(unplaced)} legacy pod(s) would be stranded: they need "
            + ", ".join(f"{k}={_text(v)}" for k, v in sorted(needed.items()))
            + f" more than the {len(rest)} legacy node(s) left have free (free: "
            + (", ".join(f"{k}={_text(v)}" for k, v in sorted(wave.legacy_free_before.items())) or "nothing")
            + f"): {', '.join(p.ref for p in unplaced[:5])}; use a smaller wave or migrate their workloads first")
    evicted = {p.ref for p in moving}
    for pdb in pdbs:
        meta = pdb.get("metadata") or {}
        namespace = str(meta.get("namespace"))
        selected = [p for p in pods_by_ns.get(namespace, ()) if _selects((pdb.get("spec") or {}).get("selector"), p)]
        hit = [p for p in selected if f"{namespace}/{(p.get('metadata') or {}).get('name')}" in evicted]
        if not hit:
            continue
        allowed, healthy, desired = _pdb_allowance(pdb, selected)
        check = PdbCheck(f"{namespace}/{meta.get('name')}", len(hit), allowed, healthy, desired)
        wave.pdbs.append(check)
        if allowed < 1:
            wave.refused.append(f"PodDisruptionBudget {check.pdb} allows no disruption (needs {desired} healthy "
                                f"pods, has {healthy}): the drain would wait forever to evict {len(hit)} pod(s); "
                                f"scale the workload up or relax the budget first")
    return trial, placed


def _migrate_fitting(wave: Wave, pending: list[WorkloadPlan], migrated: set[str],
                     claims: Mapping[tuple[str, str], Mapping[str, Any]], pool: DraPool,
                     loads: Sequence[LegacyPodLoad], free: dict[str, dict[str, Fraction]],
                     shapes: dict[str, tuple]) -> None:
    """Migrate the pending workloads that fit now; ``pending`` keeps only those left."""
    loads_by_owner: dict[str, list[LegacyPodLoad]] = {}
    for load in loads:
        loads_by_owner.setdefault(str(load.owner), []).append(load)
    failed: set[tuple] = set()  # shapes that did not fit in this wave: devices only get taken, so they never will
    for plan in pending:
        if plan.ref in migrated:
            continue
        if plan.kind == "DaemonSet":
            if not set(plan.nodes) <= set(pool.by_node) or not _place_daemon(plan, claims, pool):
                continue
        else:
            shape = shapes.get(plan.ref)
            if shape is None:
                objects = [claims[(plan.namespace, name)] for name in plan.pod_claims]
                shape = shapes[plan.ref] = (plan.pods, tuple((c.get("kind"), pool.claim_need(c).key) for c in objects))
            if shape in failed:
                continue
            if not _place_workload(plan, claims, pool):
                failed.add(shape)
                continue
        migrated.add(plan.ref)
        wave.workloads.append(plan.ref)
        for load in loads_by_owner.get(plan.ref, ()):  # its legacy pods go: their GPUs come free
            if load.node in free:
                for resource, amount in load.demand.items():
                    free[load.node][resource] = free[load.node].get(resource, Fraction(0)) + amount
    pending[:] = [p for p in pending if p.ref not in migrated]


def _claim_key(claim: Mapping[str, Any]) -> tuple[str, str]:
    meta = claim.get("metadata") or {}
    return str(meta.get("namespace")), str(meta.get("name"))


def _place_running(snapshot: Snapshot, pool: DraPool, read_claims: set[tuple[str, str]]) -> None:
    """Pods already running on DRA nodes hold devices there: take them first, on their nodes.
    A pod claim backed by a ResourceClaim that was read is already counted from its allocation
    (the claim a template made is named in status.resourceClaimStatuses); only the others (a
    snapshot of files without claims) are placed from their templates."""
    templates = {(str((t.get("metadata") or {}).get("namespace")), str((t.get("metadata") or {}).get("name"))): t
                 for t in snapshot.claim_templates}
    for pod in snapshot.pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in pool.by_node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        namespace = str((pod.get("metadata") or {}).get("namespace"))
        made = {str(s.get("name")): str(s.get("resourceClaimName"))
                for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
                if isinstance(s, Mapping) and s.get("resourceClaimName")}
        claims = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            if not isinstance(entry, Mapping):
                continue
            backing = entry.get("resourceClaimName") or made.get(str(entry.get("name")))
            if backing and (namespace, str(backing)) in read_claims:
                continue  # held through the claim's allocation
            key = (namespace, str(entry.get("resourceClaimTemplateName")))
            if key in templates:
                claims.append(templates[key])
        if claims:
            pool.place_on(node, claims)


def _place_daemon(plan: WorkloadPlan, claims: Mapping[tuple[str, str], Mapping[str, Any]], pool: DraPool) -> bool:
    objects = [claims[(plan.namespace, name)] for name in plan.pod_claims]
    mark = pool.mark()
    if all(pool.place_on(node, objects) for node in plan.nodes):
        return True
    pool.undo(mark)
    return False


def _place_workload(plan: WorkloadPlan, claims: Mapping[tuple[str, str], Mapping[str, Any]], pool: DraPool) -> bool:
    objects = [claims[(plan.namespace, name)] for name in plan.pod_claims]
    per_pod = [c for c in objects if c.get("kind") == "ResourceClaimTemplate"]
    shared = [c for c in objects if c.get("kind") == "ResourceClaim"]
    # All-or-nothing: a workload that half fits would strand its other pods.
    mark = pool.mark()
    ok = (not shared or pool.place(shared) is not None) and \
        all(pool.place(per_pod) is not None for _ in range(plan.pods if per_pod else 0))
    if not ok:
        pool.undo(mark)
    return ok


def _unsatisfiable(pending: Sequence[WorkloadPlan], claims: Mapping[tuple[str, str], Mapping[str, Any]],
                   pool: DraPool) -> dict[str, WorkloadPlan]:
    """Workloads whose claims no DRA device of the cluster (published or predicted) satisfies,
    as BLOCKED plans saying which claim and why (explain's verdict)."""
    blocked = {}
    for plan in pending:
        reasons = []
        for name in dict.fromkeys(plan.pod_claims):
            need = pool.claim_need(claims[(plan.namespace, name)])
            if not need.satisfiable:
                reasons.append(f"no DRA device in the cluster satisfies {name}: {need.verdict}")
        if reasons:
            blocked[plan.ref] = replace(plan, status=BLOCKED, reasons=tuple(reasons))
    return blocked


def check_wave(snapshot: Snapshot, node_names: Sequence[str], options: TranslateOptions = TranslateOptions(), *,
               dra_labels: Sequence[NodeLabel] = DEFAULT_DRA_NODE_LABELS) -> Wave:
    """The checks of one node switch as it would run now (``migrate nodes``): the same drain,
    budget and stranding checks as a planned wave, for exactly these nodes."""
    plans = plan_workloads(snapshot, options)
    nodes = gpu_nodes(snapshot.nodes, snapshot.resource_slices, dra_labels, target=options.target_driver)
    known = {n.name: n for n in nodes}
    wave = Wave(1, nodes=list(node_names))
    unknown = [n for n in node_names if n not in known]
    if unknown:
        wave.refused.append(f"not GPU nodes of this cluster: {', '.join(unknown)}")
        return wave
    already = [n for n in node_names if known[n].dra]
    if already:
        wave.refused.append(f"already labelled as DRA nodes: {', '.join(already)}")
        return wave
    loads = _legacy_pods(snapshot)
    legacy_nodes = [n for n in nodes if not n.dra and n.legacy_allocatable]
    free = {n.name: dict(n.legacy_allocatable) for n in legacy_nodes}
    for load in loads:
        if load.node in free:
            for resource, amount in load.demand.items():
                free[load.node][resource] -= amount
    rest = [n.name for n in legacy_nodes if n.name not in node_names]
    pods_by_ns: dict[str, list[Mapping[str, Any]]] = {}
    for pod in snapshot.pods:
        pods_by_ns.setdefault(str((pod.get("metadata") or {}).get("namespace")), []).append(pod)
    daemon_nodes = {p.ref: p.nodes for p in plans if p.kind == "DaemonSet"}
    dra_after = {n.name for n in nodes if n.dra} | set(node_names)
    _check_drain(wave, loads, set(), free, rest, snapshot.pdbs, pods_by_ns, daemon_nodes, dra_after)
    # A DaemonSet is fine when all its nodes are DRA after this switch: migrate it right after.
    return wave


def next_wave_nodes(plan: MigrationPlan) -> list[str]:
    """The nodes of the plan's first node wave (what `migrate nodes` switches by default)."""
    return next((w.nodes for w in plan.waves if w.nodes), [])
