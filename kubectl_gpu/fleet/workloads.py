"""Which top-level objects carry legacy GPU requests, what each becomes, and which cannot move yet.

Pure: objects in, ``WorkloadPlan``s out. The translation is the core's (the same report
``migrate`` prints); this module only decides what may be rewritten on a live cluster:

- an object a controller owns (a Deployment's ReplicaSet, a CronJob's Job) is never patched:
  its owner moves and the controller rolls the change down;
- a Job's pod template is immutable (batch/v1 validation): a running Job finishes on legacy
  GPUs and is resubmitted from migrated manifests (``migrate --output-dir``);
- a bare pod's containers are immutable: it must be recreated from a migrated manifest;
- a template the core refuses (invalid values) is reported with the core's reason.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from kubectl_gpu.cluster.shared_gpus import SharedPool, SlotReading, shared_pools, slot_pools
from kubectl_gpu.core import (KnownClaim, Severity, Sharing, TranslateOptions, known_claims, legacy_requests,
                               translate_pod_template)
from kubectl_gpu.core.constants import ORIGINAL_RESOURCES_ANNOTATION
from kubectl_gpu.dra.facts import DEVICE_PLUGIN_GPU
from kubectl_gpu.core import prefix_patch
from kubectl_gpu.k8s.paths import WORKLOADS
from kubectl_gpu.manifests.locate import PodSite, find_pod_sites, is_pod_spec
from kubectl_gpu.core import split_pointer
from kubectl_gpu.manifests.tree_patch import PatchError, apply_patch, resolve

from .snapshot import Obj, Snapshot, ref

MIGRATE = "migrate"  # rewrite it now (server-side apply)
MIGRATED = "migrated"  # already DRA (carries the original-requests record, no legacy request left)
BLOCKED = "blocked"  # cannot move yet: the reasons say why and what to do
OWNED = "owned"  # a controller owns it: its owner moves instead
RECREATE = "recreate"  # immutable pod template (bare pod, Job): recreate from a migrated manifest
STATUSES = (MIGRATE, MIGRATED, BLOCKED, OWNED, RECREATE)


@dataclass(frozen=True)
class WorkloadPlan:
    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str
    status: str
    reasons: tuple[str, ...]  # why it cannot move now (BLOCKED/OWNED/RECREATE), what to do instead
    notes: tuple[str, ...]  # the core's report, as migrate prints it: "info: ..." (what each request becomes), "warning: ..."
    pods: int  # pods it runs (replicas, parallelism; a DaemonSet's current pods)
    legacy: Mapping[str, Fraction]  # what each of its pods requests from device plugins
    claims: tuple[Mapping[str, Any], ...] = ()  # DRA objects it needs, created before it (manifests)
    pod_claims: tuple[str, ...] = ()  # names of the claim objects one pod uses (capacity check)
    patch: tuple[Mapping[str, Any], ...] = ()  # JSON patch on the object
    source: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)  # the object as read
    nodes: tuple[str, ...] = ()  # a DaemonSet's nodes: its pods cannot go anywhere else
    # Its nvidia.com/gpu read as slots of the time-sliced pool its pods' node selection keeps them in.
    slots: SlotReading | None = None

    @functools.cached_property
    def ref(self) -> str:
        return f"{self.kind}/{self.namespace + '/' if self.namespace else ''}{self.name}"

    @property
    def migrated(self) -> dict[str, Any] | None:
        """The object with the patch applied (built on demand: a plan of 10,000 workloads only
        needs the few it applies)."""
        if self.source is None or not self.patch:
            return None
        migrated = _plain(self.source)
        apply_patch(migrated, self.patch)
        return migrated

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind, "apiVersion": self.api_version, "namespace": self.namespace, "name": self.name,
            "status": self.status, "pods": self.pods,
            "legacyPerPod": {k: _text(v) for k, v in sorted(self.legacy.items())},
        }
        if self.reasons:
            out["reasons"] = list(self.reasons)
        if self.notes:
            out["notes"] = list(self.notes)
        if self.claims:
            out["claims"] = [f"{c['kind']}/{c['metadata']['name']}" for c in self.claims]
        if self.slots is not None:
            out["sharedPool"] = self.slots.to_dict()
        return out


def _text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def pod_demand(template: Mapping[str, Any]) -> dict[str, Fraction]:
    """A pod's effective legacy request per resource, as the scheduler sums it: the containers'
    requests added up (sidecars included), or the largest init container's if that is more."""
    running: dict[str, Fraction] = {}
    init: dict[str, Fraction] = {}
    for request in legacy_requests(template):
        if request.amount <= 0:
            continue
        if request.container.sequential_init:
            init[request.name] = max(init.get(request.name, Fraction(0)), request.amount)
        else:
            running[request.name] = running.get(request.name, Fraction(0)) + request.amount
    return {k: max(running.get(k, Fraction(0)), init.get(k, Fraction(0))) for k in {*running, *init}}


# What of a pod template the core reads (translate.py, families.py, node_constraints.py, hints.py):
# tests/test_fleet_plan.py checks that translating this projection gives the very same result.
CONTAINER_FIELDS = ("name", "resources", "restartPolicy")
SPEC_FIELDS = ("nodeSelector", "affinity", "resourceClaims")


def translation_input(template: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of ``template`` the translation depends on (images, env, probes... are not)."""
    out: dict[str, Any] = {}
    metadata = template.get("metadata")
    if isinstance(metadata, Mapping):
        out["metadata"] = {"annotations": metadata["annotations"]} if "annotations" in metadata else {}
    elif "metadata" in template:
        out["metadata"] = metadata
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        if "spec" in template:
            out["spec"] = spec
        return out
    projected: dict[str, Any] = {k: spec[k] for k in SPEC_FIELDS if k in spec}
    for field_name in ("initContainers", "containers"):
        containers = spec.get(field_name)
        if isinstance(containers, list):
            projected[field_name] = [{k: c[k] for k in CONTAINER_FIELDS if k in c} if isinstance(c, Mapping) else c
                                     for c in containers]
        elif field_name in spec:
            projected[field_name] = containers
    out["spec"] = projected
    return out


@dataclass(frozen=True)
class SiteOutcome:
    """One pod template's translation as a workload's plan uses it (shared, read-only)."""
    demand: Mapping[str, Fraction]
    notes: tuple[str, ...]
    errors: tuple[str, ...]
    ops: tuple[Mapping[str, Any], ...]  # the patch, prefixed with the template's place in its object
    claims: Mapping[str, Mapping[str, Any]]  # claim name -> manifest
    pod_claims: tuple[str, ...]


class Translations:
    """translate_pod_template, once per distinct translation input: a fleet of 10,000 workloads
    has a few dozen GPU request shapes."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}
        self._demands: dict[str, dict[str, Fraction]] = {}
        self._manifests: dict[tuple[int, str], Mapping[str, Any]] = {}
        self._sites: dict[tuple[str, str, str, str], SiteOutcome] = {}
        self._slot_pools: dict[str, tuple[SharedPool, ...]] = {}

    def manifest(self, claim: Any, namespace: str | None) -> Mapping[str, Any]:
        """claim.manifest(namespace), built once per claim and namespace (read-only: shared)."""
        key = (id(claim), namespace or "")
        found = self._manifests.get(key)
        if found is None:
            found = self._manifests[key] = claim.manifest(namespace)
        return found

    def __call__(self, template: Mapping[str, Any], options: TranslateOptions, group: str | None = None):
        """translate_pod_template(template, options with sharing_group=group)."""
        key, projection = self.projected(template)
        return self._translate(key, projection, options, group)

    @staticmethod
    def projected(template: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """(identity, projection) of what the translation reads of ``template``: one encoding
        serves the demand, the translation and the site outcome caches."""
        projection = translation_input(template)
        return json.dumps(projection, sort_keys=True, default=str), projection

    def demand_of(self, key: str, projection: Mapping[str, Any]) -> dict[str, Fraction]:
        found = self._demands.get(key)
        if found is None:
            found = self._demands[key] = pod_demand(projection)
        return found

    def _translate(self, key: str, projection: Mapping[str, Any], options: TranslateOptions, group: str | None,
                   known: tuple[KnownClaim, ...] | None = None, namespace: str | None = None):
        """``known``: the claims of the template's namespace (None: those in ``options``).  They
        matter only to a template that uses claims, so only its translation is kept per namespace."""
        shared = options.sharing not in (Sharing.CONSUMABLE, Sharing.EXCLUSIVE)  # claim names carry the workload
        full_key = f"{key}\0{group or options.sharing_group}" if shared else key
        uses_claims = known is not None and bool((projection.get("spec") or {}).get("resourceClaims"))
        if uses_claims:
            full_key = f"{full_key}\0{namespace or ''}"
        result = self._cache.get(full_key)
        if result is None:
            changed = {"known_claims": known} if uses_claims else {}
            if group is not None:
                changed["sharing_group"] = group
            result = self._cache[full_key] = translate_pod_template(
                projection, replace(options, **changed) if changed else options)
        return result

    def site(self, key: str, projection: Mapping[str, Any], options: TranslateOptions, group: str, pointer: str,
             namespace: str | None, known: tuple[KnownClaim, ...] | None = None) -> SiteOutcome:
        """What one pod template of a workload needs and becomes, once per distinct template (its
        ``projected`` identity), sharing group, place in its object and namespace (a fleet repeats
        a few dozen).  ``known``: the claims of that namespace (see ``known_claims_by_namespace``)."""
        shared = options.sharing not in (Sharing.CONSUMABLE, Sharing.EXCLUSIVE)
        outcome_key = (key, group if shared else "", pointer, namespace or "")
        found = self._sites.get(outcome_key)
        if found is None:
            result = self._translate(key, projection, options, group, known, namespace)
            claims = {claim.name: self.manifest(claim, namespace) for claim in result.claims}
            found = self._sites[outcome_key] = SiteOutcome(
                self.demand_of(key, projection),
                tuple(f"{n.severity.value}: {n.render()}" for n in result.notes
                      if n.severity is not Severity.INFO or result.changed),
                tuple(n.render() for n in result.errors), prefix_patch(result.patch, pointer), claims,
                tuple(claim.name for claim in result.claims))
        return found

    def slot_pools(self, projection: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> tuple[SharedPool, ...]:
        """shared_gpus.slot_pools, once per distinct node selection (``nodes`` are one snapshot's)."""
        spec = projection.get("spec") if isinstance(projection.get("spec"), Mapping) else {}
        key = json.dumps([spec.get("nodeSelector"), spec.get("affinity")], sort_keys=True, default=str)
        found = self._slot_pools.get(key)
        if found is None:
            found = self._slot_pools[key] = slot_pools(projection, nodes)
        return found

    def demand(self, template: Mapping[str, Any]) -> dict[str, Fraction]:
        """pod_demand, once per distinct set of containers."""
        spec = template.get("spec")
        if not isinstance(spec, Mapping):
            return {}
        key = json.dumps({f: [[c.get("resources"), c.get("restartPolicy")] if isinstance(c, Mapping) else None
                              for c in spec[f]]
                          for f in ("initContainers", "containers") if isinstance(spec.get(f), list)},
                         sort_keys=True, default=str)
        found = self._demands.get(key)
        if found is None:
            found = self._demands[key] = pod_demand(translation_input(template))
        return found


# Where built-in workloads keep their one pod template: no need to search the whole object.
TEMPLATE_POINTERS = {(w.resource.group, w.resource.kind): w.template_pointer for w in WORKLOADS}


def _sites(obj: Obj, kind: str) -> list[PodSite]:
    pointer = TEMPLATE_POINTERS.get((str(obj.get("apiVersion", "")).rpartition("/")[0], kind))
    if pointer is not None:
        try:
            template = resolve(obj, pointer)
        except PatchError:
            template = None
        if isinstance(template, Mapping) and is_pod_spec(template.get("spec")):
            return [PodSite(pointer, pointer + "/spec", inline=False)]
    return find_pod_sites(obj)


def _controller(obj: Obj) -> Mapping[str, Any] | None:
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(owner, Mapping) and owner.get("controller"):
            return owner
    return None


def _pod_count(obj: Obj, pointer: str, pods_by_owner: Mapping[str, int]) -> int:
    if obj.get("kind") == "DaemonSet":
        return max(pods_by_owner.get(str((obj.get("metadata") or {}).get("uid")), 0), 1)
    if pointer == "/spec/template":  # the built-in workloads: replicas or parallelism beside the template
        holder = obj.get("spec")
    else:
        parent = split_pointer(pointer)[:-1]
        try:
            holder = resolve(obj, "".join(f"/{t}" for t in parent)) if parent else obj
        except Exception:  # noqa: BLE001 - a shape we do not know: one pod
            holder = {}
    for key in ("replicas", "parallelism"):
        value = holder.get(key) if isinstance(holder, Mapping) else None
        if isinstance(value, int) and value >= 0:
            return value
    return 1


def known_claims_by_namespace(snapshot: Snapshot) -> dict[str, tuple[KnownClaim, ...]]:
    """The ResourceClaimTemplates and ResourceClaims of the snapshot, and the channel templates its
    ComputeDomains make, by namespace: what the core checks a legacy GPU beside a claim against
    (the same objects ``migrate`` reads from its input, kubectl_gpu.core.existing_claims)."""
    found: dict[str, list[KnownClaim]] = {}
    for obj in (*snapshot.claim_templates, *snapshot.resource_claims, *snapshot.compute_domains):
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        found.setdefault(namespace, []).extend(known_claims(obj))
    return {namespace: tuple(claims) for namespace, claims in found.items()}


def plan_workloads(snapshot: Snapshot, options: TranslateOptions = TranslateOptions(),
                   translate: Translations | None = None) -> list[WorkloadPlan]:
    """Every object (workload or bare pod) that has, or had, legacy GPU requests."""
    pods_by_owner: dict[str, int] = {}
    nodes_by_owner: dict[str, set[str]] = {}
    for pod in snapshot.pods:
        owner = _controller(pod)
        if owner is not None:
            uid = str(owner.get("uid"))
            pods_by_owner[uid] = pods_by_owner.get(uid, 0) + 1
            if (pod.get("spec") or {}).get("nodeName"):
                nodes_by_owner.setdefault(uid, set()).add(pod["spec"]["nodeName"])
    plans = []
    translate = translate or Translations()
    known = known_claims_by_namespace(snapshot)
    # Nodes matter only where some pool's device plugin shares its GPUs: there a pod's nvidia.com/gpu
    # may have been a slot, which its node selection tells (shared_gpus.slot_pools).
    sharing_nodes = snapshot.nodes if shared_pools(snapshot.nodes) else ()
    for obj in snapshot.workloads:
        plan = plan_workload(obj, options, pods_by_owner, translate, known, sharing_nodes)
        if plan is not None and plan.kind == "DaemonSet":
            plan = replace(plan, nodes=tuple(sorted(nodes_by_owner.get(plan.uid, ()))))
        if plan is not None:
            plans.append(plan)
    plans.extend(p for pod in snapshot.pods
                 if _controller(pod) is None and _in_scope(pod, snapshot.scope)
                 and (p := _bare_pod(pod, options, translate, known, sharing_nodes)))
    return sorted(plans, key=lambda p: (p.namespace, p.kind, p.name))


def _in_scope(obj: Obj, scope: str | None) -> bool:
    return scope is None or (obj.get("metadata") or {}).get("namespace") == scope


def plan_workload(obj: Obj, options: TranslateOptions = TranslateOptions(),
                  pods_by_owner: Mapping[str, int] | None = None, translate: Translations | None = None,
                  known: Mapping[str, tuple[KnownClaim, ...]] | None = None,
                  nodes: Sequence[Mapping[str, Any]] = ()) -> WorkloadPlan | None:
    """``known``: the claims by namespace (``known_claims_by_namespace``); None: those in ``options``.
    ``nodes``: the cluster's Nodes, whose GFD labels say where nvidia.com/gpu counted slots."""
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    kind = str(obj.get("kind"))
    sites = _sites(obj, kind)
    group = f"{kind}/{meta.get('name')}"
    translate = translate or Translations()
    ops: list[Mapping[str, Any]] = []
    claims: dict[str, Mapping[str, Any]] = {}
    pod_claims: list[str] = []
    notes: list[str] = []
    errors: list[str] = []
    legacy: dict[str, Fraction] = {}
    pods = 0
    had_record = False
    dra_pods, dra_claims = 0, []  # what an already migrated object runs on DRA devices
    slot_sites: list[tuple[tuple[SharedPool, ...], int]] = []  # (pools, slots) of templates read as slots
    for site in sites:
        template = resolve(obj, site.pointer)
        template_meta = template.get("metadata")
        annotations = template_meta.get("annotations") if isinstance(template_meta, Mapping) else None
        if isinstance(annotations, Mapping) and ORIGINAL_RESOURCES_ANNOTATION in annotations:
            had_record = True
            dra_pods += _pod_count(obj, site.pointer, pods_by_owner or {})
            claims_list = (template.get("spec") or {}).get("resourceClaims")
            dra_claims.extend(str(c.get("resourceClaimTemplateName")) for c in
                              (claims_list if isinstance(claims_list, list) else ())
                              if isinstance(c, Mapping) and c.get("resourceClaimTemplateName"))
        identity, projection = translate.projected(template)
        demand = translate.demand_of(identity, projection)
        if not demand:
            continue
        for key, value in demand.items():
            legacy[key] = max(legacy.get(key, Fraction(0)), value)
        site_pods = _pod_count(obj, site.pointer, pods_by_owner or {})
        pods += site_pods
        site_options = options
        pools = translate.slot_pools(projection, nodes) if nodes and DEVICE_PLUGIN_GPU in demand else ()
        if pools:
            # As migrate reads it (cli/migrate.py): the pool its node selection keeps it in counted slots.
            site_options = options if options.gpu_slots else replace(options, gpu_slots=True)
            # nvidia.com/gpu on a time-sliced pool counts slots, not GPUs.
            slot_sites.append((pools, site_pods * int(demand[DEVICE_PLUGIN_GPU])))
        outcome = translate.site(identity, projection, site_options, group, site.pointer, namespace or None,
                                 known.get(namespace, ()) if known is not None else None)
        notes.extend(outcome.notes)
        errors.extend(outcome.errors)
        ops.extend(outcome.ops)
        for name, manifest in outcome.claims.items():
            claims.setdefault(name, manifest)
        pod_claims.extend(outcome.pod_claims)
    if not legacy:
        if not had_record:
            return None
        return WorkloadPlan(kind, str(obj.get("apiVersion")), namespace, str(meta.get("name")), str(meta.get("uid", "")),
                            MIGRATED, (), (), dra_pods, {}, pod_claims=tuple(dra_claims))
    slots = (SlotReading(tuple(dict.fromkeys(p for pools, _ in slot_sites for p in pools)),
                         sum(n for _, n in slot_sites)) if slot_sites else None)
    if slots is not None:
        notes.extend(_density(slots, pods, claims))
    base = dict(kind=kind, api_version=str(obj.get("apiVersion")), namespace=namespace, name=str(meta.get("name")),
                uid=str(meta.get("uid", "")), notes=tuple(dict.fromkeys(notes)), pods=pods, legacy=legacy,
                slots=slots)
    owner = _controller(obj)
    if owner is not None:
        return WorkloadPlan(**base, status=OWNED, reasons=(
            f"owned by {owner.get('kind')}/{namespace + '/' if namespace else ''}{owner.get('name')}: migrate that instead; its controller rolls the "
            f"change down (patching this object would be reverted)",))
    if errors:
        return WorkloadPlan(**base, status=BLOCKED, reasons=tuple(dict.fromkeys(errors)))
    if kind == "Job":
        return WorkloadPlan(**base, status=RECREATE, reasons=(
            "a Job's pod template is immutable: let it finish on device-plugin GPUs and resubmit it from a "
            "migrated manifest (kubectl gpu migrate --from-cluster --output-dir DIR)",),
            claims=tuple(claims.values()), pod_claims=tuple(pod_claims), patch=tuple(ops), source=obj)
    if not ops:
        return WorkloadPlan(**base, status=BLOCKED, reasons=("nothing to rewrite: every legacy request is left to "
                                                             "the device plugin (pass-through or KEP-5004 mode)",))
    return WorkloadPlan(**base, status=MIGRATE, reasons=(), claims=tuple(claims.values()),
                        pod_claims=tuple(pod_claims), patch=tuple(ops), source=obj)


def _density(slots: SlotReading, pods: int, claims: Mapping[str, Mapping[str, Any]]) -> list[str]:
    warning = density_warning(slots, pods, tuple(claims.values()))
    return [f"info: {slots.describe()}"] + ([f"warning: {warning}"] if warning else [])


def density_warning(slots: SlotReading, pods: int, claims: Sequence[Mapping[str, Any]]) -> str | None:
    """SlotReading.density for a workload migrated to ``claims`` (a ResourceClaim among them: its pods
    share it); None without claims.  The plan's notes and its table say the same."""
    return slots.density(pods, any(c.get("kind") == "ResourceClaim" for c in claims)) if claims else None


RECREATES_ANNOTATION = "kubectl-gpu.io/recreates"  # on a migrated bare pod's manifest: the pod it replaces


def _bare_pod(pod: Obj, options: TranslateOptions, translate: Translations,
              known: Mapping[str, tuple[KnownClaim, ...]] | None = None,
              nodes: Sequence[Mapping[str, Any]] = ()) -> WorkloadPlan | None:
    """A pod no controller owns: translated like a workload, but it can only be recreated (its
    containers are immutable, and nothing makes it again after a drain)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return None
    plan = plan_workload(pod, options, {}, translate, known, nodes)
    if plan is None or plan.status != MIGRATE:
        return plan if plan is None or plan.status != MIGRATED else None
    return replace(plan, status=RECREATE, reasons=(
        "a bare pod (no controller): its containers are immutable and nothing recreates it after a drain; "
        "recreate it from its migrated manifest (kubectl gpu migrate --from-cluster --output-dir DIR writes "
        "it: delete the pod, then create the manifest)",))


def recreate_manifest(plan: WorkloadPlan) -> dict[str, Any] | None:
    """The migrated manifest of a bare pod, to create once the running one is deleted: server
    fields and the node binding the scheduler gave the old pod left out (the new one is
    scheduled to a node with the devices its claims need), marked with the pod it replaces."""
    migrated = plan.migrated
    if migrated is None or plan.kind != "Pod":
        return None
    migrated.pop("status", None)
    meta = migrated.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink",
                "deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(key, None)
    meta.setdefault("annotations", {})[RECREATES_ANNOTATION] = plan.ref
    migrated.get("spec", {}).pop("nodeName", None)
    return migrated


def _plain(obj: Any) -> Any:
    """A JSON-plain copy (listed objects may be ruamel or client models)."""
    return json.loads(json.dumps(obj, default=str))


def claims_by_name(plans: Sequence[WorkloadPlan]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(namespace, name) -> claim object manifest, over every plan (shared names are one object)."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for plan in plans:
        for claim in plan.claims:
            out.setdefault((plan.namespace, claim["metadata"]["name"]), claim)
    return out
