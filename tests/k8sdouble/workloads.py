"""The workload controllers, the scheduler and the kubelet, as far as their output is API objects.

Off unless ``K8sDouble(controllers=True)``; they run after every write, synchronously, until
nothing changes, so a client sees what the real components would have written by then.

- Deployment controller (pkg/controller/deployment): one ReplicaSet per pod template, named
  ``<deployment>-<pod-template-hash>``, owned by the Deployment (``controller: true``,
  ``blockOwnerDeletion: true``), with the hash as a label of the ReplicaSet, its selector and
  its pod template. The current template's ReplicaSet gets ``spec.replicas``, the others 0 (the
  end state of a rollout; the steps in between are not simulated). The hash is FNV-32a over the
  template, encoded with apimachinery's ``rand.SafeEncodeString`` as ``controller.ComputeHash``
  does; the bytes hashed are canonical JSON, not Go's spew dump, so the value differs from a real
  cluster's while behaving the same (same template, same hash; changed template, new hash).
- ReplicaSet controller (pkg/controller/replicaset): pods ``<replicaset>-<5 chars>``
  (generateName), owned by the ReplicaSet; surplus pods are deleted (unscheduled ones first).
- StatefulSet controller: pods ``<set>-<ordinal>`` with ``controller-revision-hash``,
  ``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index``; a pod of an older
  revision is deleted and made again (the end state of a RollingUpdate).
- DaemonSet controller: one pod per node whose labels match the template's nodeSelector, pinned
  with a required node affinity on ``metadata.name`` (matchFields), as the real controller does
  since scheduling moved to the default scheduler; pods of an older template are replaced.
- Job controller (pkg/controller/job): ``parallelism`` pods (default 1) ``<job>-<5 chars>`` with
  ``batch.kubernetes.io/job-name``/``controller-uid`` labels (and the legacy ``job-name``,
  ``controller-uid``) until ``completions`` pods succeeded (default: one); a suspended Job runs
  none; status ``active``/``ready``/``succeeded``/``failed`` and a ``Complete`` condition.
- Scheduler (filters only, first fit in node-name order): a node that is not cordoned (unless the
  pod tolerates node.kubernetes.io/unschedulable, as DaemonSet pods do), matches
  the pod's nodeSelector and required node affinity, has the extended resources free that the
  pod requests (allocatable minus the requests of the pods bound to it; NodeResourcesFit), and
  as many DRA devices free as the pod's claims request (the devices its ResourceSlices publish
  minus those the claims of pods bound there take; selectors are not evaluated: the product's
  own explain does that, and the double must not share its code). A pod that fits nowhere stays
  Pending, which is what tests look for when they check that nothing is stranded. A pod whose
  ResourceClaimTemplate does not exist stays Pending too (no claim can be made for it).
- Kubelet: a bound pod becomes Running with condition Ready=True (no containers run).
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from .conversion import clone
from .errors import ApiError
from .kinds import Registry, ResourceKind
from .store import Store

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand alphanums
COMPUTE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: every character mapped into an alphabet without vowels."""
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in text)


def template_hash(template: Any) -> str:
    """controller.ComputeHash(template, nil): FNV-32a, decimal, SafeEncodeString."""
    value = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return safe_encode(str(value))


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _controller_uid(obj: dict) -> str | None:
    for ref in _meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("uid")
    return None


def _owner_ref(owner: dict, api_version: str, kind: str) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": _meta(owner)["name"], "uid": _meta(owner)["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _finished(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _ready(pod: dict) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def _pod_from(template: dict, namespace: str, owner: dict, name: str | None = None,
              generate_name: str | None = None, labels: dict | None = None) -> dict:
    meta: dict[str, Any] = {"namespace": namespace, "ownerReferences": [owner],
                            "labels": {**((template.get("metadata") or {}).get("labels") or {}), **(labels or {})}}
    annotations = (template.get("metadata") or {}).get("annotations")
    if annotations:
        meta["annotations"] = dict(annotations)
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = generate_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": clone((template.get("spec") or {})),
            "status": {"phase": "Pending"}}


def _quantity(text: Any) -> int | None:
    """Extended resources are whole numbers (API validation); anything else is not counted."""
    try:
        return int(str(text))
    except ValueError:
        return None


def pod_requests(pod: dict) -> dict[str, int]:
    """Extended resources a pod requests (requests, else limits), summed over containers, or the
    largest init container's when more (the scheduler's effective request)."""
    def of(container: dict) -> dict[str, int]:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        out = {}
        for name, value in wanted.items():
            amount = _quantity(value)
            if "/" in name and not name.startswith("kubernetes.io/") and amount:
                out[name] = amount
        return out

    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        for name, amount in of(container).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or ():
        for name, amount in of(container).items():
            total[name] = max(total.get(name, 0), amount)
    return total


class WorkloadControllers:
    def __init__(self, registry: Registry, store: Store):
        self.registry = registry
        self.store = store

    def kind(self, name: str) -> ResourceKind:
        return self.registry.resolve(name)

    def objects(self, kind: str, namespace: str | None = None) -> list[dict]:
        return [e.obj for e in self.store.entries(self.kind(kind), namespace)]

    def _pods_of(self, owner: dict) -> list[dict]:
        uid = _meta(owner).get("uid")
        return [p for p in self.objects("pods", _meta(owner).get("namespace")) if _controller_uid(p) == uid]

    def _create(self, kind: str, obj: dict, owner: dict | None = None, reason: str = "FailedCreate",
                prefix: str = "Error creating: ") -> bool:
        """Create through admission (ResourceQuota): a refusal becomes a Warning event on ``owner``, as
        the controllers record it, and the controller tries again on its next pass."""
        try:
            self.store.create(self.kind(kind), obj)
            return True
        except ApiError as refused:
            if owner is not None:
                self._warn(owner, reason, prefix + refused.message)
            return False

    def _warn(self, obj: dict, reason: str, message: str) -> None:
        meta = _meta(obj)
        kind = obj.get("kind") or "Pod"
        for event in self.objects("events", meta.get("namespace")):
            if (event.get("involvedObject") or {}).get("uid") == meta.get("uid") and event.get("reason") == reason:
                return  # one event per object and reason: the retries' (the real recorder aggregates them)
        self.store.create(self.kind("events"), {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', '')}.", "namespace": meta.get("namespace")},
            "involvedObject": {"apiVersion": obj.get("apiVersion", "v1"), "kind": kind, "name": meta.get("name"),
                               "namespace": meta.get("namespace"), "uid": meta.get("uid")},
            "reason": reason, "message": message, "type": "Warning", "count": 1})

    def _delete(self, kind: str, obj: dict) -> None:
        self.store.delete(self.kind(kind), _meta(obj).get("namespace", ""), _meta(obj)["name"])

    def _set_status(self, kind: str, obj: dict, status: dict) -> bool:
        if status == obj.get("status"):
            return False
        updated = clone(obj)
        updated["status"] = status
        self.store.update(self.kind(kind), updated, subresource="status", force=True)
        return True

    # ------------------------------------------------------------ controllers

    def run(self) -> bool:
        """One pass of every controller, the scheduler and the kubelet; True when something changed."""
        changed = False
        for step in (self._deployments, self._replicasets, self._statefulsets, self._daemonsets, self._jobs,
                     self._resource_claims, self._schedule):
            changed = step() or changed
        return changed

    def _deployments(self) -> bool:
        changed = False
        for deployment in self.objects("deployments"):
            namespace = _meta(deployment)["namespace"]
            spec = deployment.get("spec") or {}
            template = spec.get("template") or {}
            pod_hash = template_hash(template)
            owned = [rs for rs in self.objects("replicasets", namespace)
                     if _controller_uid(rs) == _meta(deployment)["uid"]]
            name = f"{_meta(deployment)['name']}-{pod_hash}"
            for rs in owned:
                want = int(spec.get("replicas", 1)) if _meta(rs)["name"] == name else 0
                if (rs.get("spec") or {}).get("replicas") != want:
                    updated = clone(rs)
                    updated["spec"]["replicas"] = want
                    self.store.update(self.kind("replicasets"), updated, force=True)
                    changed = True
            if not any(_meta(rs)["name"] == name for rs in owned):
                labels = {**((template.get("metadata") or {}).get("labels") or {}), "pod-template-hash": pod_hash}
                selector = clone(spec.get("selector") or {})
                selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
                rs_template = clone(template)
                rs_template.setdefault("metadata", {})["labels"] = labels
                self._create("replicasets", {
                    "apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels,
                                 "ownerReferences": [_owner_ref(deployment, "apps/v1", "Deployment")]},
                    "spec": {"replicas": int(spec.get("replicas", 1)), "selector": selector,
                             "template": rs_template}})
                changed = True
        return changed

    def _replicasets(self) -> bool:
        changed = False
        for rs in self.objects("replicasets"):
            namespace = _meta(rs)["namespace"]
            want = int((rs.get("spec") or {}).get("replicas", 1))
            pods = [p for p in self._pods_of(rs) if not _finished(p)]
            for _ in range(want - len(pods)):
                if not self._create("pods", _pod_from(rs["spec"].get("template") or {}, namespace,
                                                      _owner_ref(rs, "apps/v1", "ReplicaSet"),
                                                      generate_name=f"{_meta(rs)['name']}-"),
                                    owner={**rs, "kind": "ReplicaSet", "apiVersion": "apps/v1"}):
                    break
                changed = True
            surplus = sorted(pods, key=lambda p: (bool((p.get("spec") or {}).get("nodeName")), _meta(p)["name"]))
            for pod in surplus[:max(len(pods) - want, 0)]:
                self._delete("pods", pod)
                changed = True
            ready = sum(1 for p in pods if _ready(p))
            status = {"replicas": len(pods), "readyReplicas": ready, "availableReplicas": ready,
                      "fullyLabeledReplicas": len(pods),
                      "observedGeneration": _meta(rs).get("generation", 1)}
            changed = self._set_status("replicasets", rs, status) or changed
        return changed

    def _statefulsets(self) -> bool:
        changed = False
        for sts in self.objects("statefulsets"):
            namespace, name = _meta(sts)["namespace"], _meta(sts)["name"]
            template = (sts.get("spec") or {}).get("template") or {}
            revision = f"{name}-{template_hash(template)}"
            want = int((sts.get("spec") or {}).get("replicas", 1))
            pods = {_meta(p)["name"]: p for p in self._pods_of(sts)}
            for ordinal in range(want):
                pod_name = f"{name}-{ordinal}"
                pod = pods.pop(pod_name, None)
                if pod is not None and (_meta(pod).get("labels") or {}).get("controller-revision-hash") == revision:
                    continue
                if pod is not None:
                    self._delete("pods", pod)
                self._create("pods", _pod_from(template, namespace, _owner_ref(sts, "apps/v1", "StatefulSet"),
                                               name=pod_name, labels={
                                                   "controller-revision-hash": revision,
                                                   "statefulset.kubernetes.io/pod-name": pod_name,
                                                   "apps.kubernetes.io/pod-index": str(ordinal)}))
                changed = True
            for pod in pods.values():  # ordinals beyond the replicas
                self._delete("pods", pod)
                changed = True
        return changed

    def _daemonsets(self) -> bool:
        changed = False
        nodes = self.objects("nodes")
        for ds in self.objects("daemonsets"):
            namespace, name = _meta(ds)["namespace"], _meta(ds)["name"]
            template = (ds.get("spec") or {}).get("template") or {}
            revision = template_hash(template)
            selector = (template.get("spec") or {}).get("nodeSelector") or {}
            wanted = [_meta(n)["name"] for n in nodes
                      if all((_meta(n).get("labels") or {}).get(k) == v for k, v in selector.items())]
            pods = self._pods_of(ds)
            by_node: dict[str, dict] = {}
            for pod in pods:
                node = _pinned_node(pod)
                current = (_meta(pod).get("labels") or {}).get("controller-revision-hash") == revision
                if node not in wanted or not current or node in by_node:
                    self._delete("pods", pod)
                    changed = True
                else:
                    by_node[node] = pod
            for node in wanted:
                if node in by_node:
                    continue
                pod = _pod_from(template, namespace, _owner_ref(ds, "apps/v1", "DaemonSet"),
                                generate_name=f"{name}-", labels={"controller-revision-hash": revision})
                pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
                # pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations: a cordon does not stop them.
                pod["spec"].setdefault("tolerations", []).append(
                    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
                self._create("pods", pod)
                changed = True
        return changed

    def _jobs(self) -> bool:
        changed = False
        for job in self.objects("jobs"):
            namespace, name, uid = _meta(job)["namespace"], _meta(job)["name"], _meta(job)["uid"]
            spec = job.get("spec") or {}
            pods = self._pods_of(job)
            succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
            failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
            active = [p for p in pods if not _finished(p)]
            completions = spec.get("completions")
            complete = succeeded >= (completions if completions is not None else 1)
            want = 0 if complete or spec.get("suspend") else \
                min(int(spec.get("parallelism", 1)), (completions if completions is not None else 1) - succeeded)
            labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                      "controller-uid": uid, "job-name": name}
            for _ in range(want - len(active)):
                self._create("pods", _pod_from(spec.get("template") or {}, namespace,
                                               _owner_ref(job, "batch/v1", "Job"), generate_name=f"{name}-",
                                               labels=labels))
                changed = True
            status = {k: v for k, v in (job.get("status") or {}).items() if k in ("startTime", "completionTime")}
            status.update(active=len(active), ready=sum(1 for p in active if _ready(p)), succeeded=succeeded,
                          failed=failed, terminating=0)
            if complete:
                status.setdefault("completionTime", "1970-01-01T00:00:00Z")
                status["conditions"] = [{"type": "SuccessCriteriaMet", "status": "True"},
                                        {"type": "Complete", "status": "True"}]
            if not spec.get("suspend"):
                status.setdefault("startTime", "1970-01-01T00:00:00Z")
            changed = self._set_status("jobs", job, status) or changed
        return changed

    # ------------------------------------------------------ resource claims

    def _resource_claims(self) -> bool:
        """The resourceclaim controller (pkg/controller/resourceclaim/controller.go): a pod's claim from a
        ResourceClaimTemplate is made as ``<pod>-<claim>-<5 chars>``, owned by the pod, annotated
        ``resource.kubernetes.io/pod-claim-name``, and recorded in the pod's
        ``status.resourceClaimStatuses``; a create that admission refuses (ResourceQuota) is a
        ``FailedResourceClaimCreation`` Warning event on the pod, which stays Pending.  Claims whose pod
        is gone are deleted (the garbage collector's part)."""
        changed = False
        pods = self.objects("pods")
        live = {_meta(p).get("uid") for p in pods}
        for claim in self.objects("resourceclaims"):
            owner = next((r for r in _meta(claim).get("ownerReferences") or () if r.get("kind") == "Pod"), None)
            if owner is not None and owner.get("uid") not in live:
                self._delete("resourceclaims", claim)
                changed = True
        for pod in pods:
            if _finished(pod) or _meta(pod).get("deletionTimestamp"):
                continue
            namespace = _meta(pod).get("namespace", "")
            statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or ())
            made = {s.get("name") for s in statuses}
            for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
                template_name = ref.get("resourceClaimTemplateName")
                if not template_name or ref.get("name") in made:
                    continue
                entry = self.store.get(self.kind("resourceclaimtemplates"), namespace, template_name)
                if entry is None:
                    continue  # no claim can be made: the pod stays Pending
                template = entry.obj
                claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"generateName": f"{_meta(pod)['name']}-{ref['name']}-", "namespace": namespace,
                                      "labels": dict(_meta(template.get("spec") or {}).get("labels") or {}),
                                      "annotations": {**(_meta(template.get("spec") or {}).get("annotations") or {}),
                                                      "resource.kubernetes.io/pod-claim-name": ref["name"]},
                                      "ownerReferences": [_owner_ref(pod, "v1", "Pod")]},
                         "spec": clone((template.get("spec") or {}).get("spec") or {})}
                try:
                    created = self.store.create(self.kind("resourceclaims"), claim)
                except ApiError as refused:
                    self._warn({**pod, "kind": "Pod", "apiVersion": "v1"}, "FailedResourceClaimCreation",
                               f"PodResourceClaim {ref['name']}: {refused.message}")
                    continue
                statuses.append({"name": ref["name"], "resourceClaimName": created.obj["metadata"]["name"]})
            if len(statuses) != len((pod.get("status") or {}).get("resourceClaimStatuses") or ()):
                changed = self._set_status("pods", pod, {**(pod.get("status") or {}),
                                                         "resourceClaimStatuses": statuses}) or changed
        return changed

    # -------------------------------------------------------- scheduler, kubelet

    def _schedule(self) -> bool:
        changed = False
        pending = [p for p in self.objects("pods") if not (p.get("spec") or {}).get("nodeName") and not _finished(p)]
        if not pending:
            return False
        nodes = sorted(self.objects("nodes"), key=lambda n: _meta(n)["name"])
        for pod in pending:
            devices = self._devices_wanted(pod)
            if devices is None:
                continue  # a claim template that does not exist: no claim, the pod stays Pending
            node = next((n for n in nodes if self._fits(pod, n, devices)), None)
            if node is None:
                continue
            bound = clone(pod)
            bound["spec"]["nodeName"] = _meta(node)["name"]
            bound["status"] = {**(pod.get("status") or {}), "phase": "Running",
                               "conditions": [{"type": "PodScheduled", "status": "True"},
                                              {"type": "Ready", "status": "True"}]}
            kind = self.kind("pods")
            self.store.update(kind, clone(bound), force=True)
            self.store.update(kind, bound, subresource="status", force=True)
            self._allocate(bound, node)
            changed = True
        return changed

    def _allocate(self, pod: dict, node: dict) -> None:
        """What the scheduler writes into a bound pod's claims: ``status.allocation`` (devices of the
        node's ResourceSlices no other claim holds; the first alternative of a firstAvailable list)
        and ``reservedFor`` the pod."""
        claims_kind = self.kind("resourceclaims")
        namespace = _meta(pod).get("namespace", "")
        held = {(r.get("pool"), r.get("device")) for c in self.objects("resourceclaims")
                for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or ()}
        free = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]) for s in self.objects("resourceslices")
                if (s.get("spec") or {}).get("nodeName") == _meta(node)["name"] for d in s["spec"].get("devices") or ()
                if (s["spec"]["pool"]["name"], d["name"]) not in held]
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
            entry = self.store.get(claims_kind, namespace, status.get("resourceClaimName") or "")
            if entry is None or (entry.obj.get("status") or {}).get("allocation"):
                continue
            results = []
            for request in ((entry.obj.get("spec") or {}).get("devices") or {}).get("requests") or ():
                name, shape = request.get("name"), request.get("exactly")
                if shape is None and request.get("firstAvailable"):
                    shape = request["firstAvailable"][0]
                    name = f"{name}/{shape.get('name')}"
                for _ in range(int((shape or {}).get("count") or 1)):
                    if free:
                        driver, pool, device = free.pop(0)
                        results.append({"request": name, "driver": driver, "pool": pool, "device": device})
            claim = clone(entry.obj)
            claim["status"] = {"allocation": {"devices": {"results": results}},
                               "reservedFor": [{"resource": "pods", "name": _meta(pod)["name"], "uid": _meta(pod)["uid"]}]}
            self.store.update(claims_kind, claim, subresource="status", force=True)

    def _devices_wanted(self, pod: dict) -> int | None:
        namespace = _meta(pod).get("namespace", "")
        total = 0
        for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
            name = ref.get("resourceClaimTemplateName")
            if not name:
                continue
            entry = self.store.get(self.kind("resourceclaimtemplates"), namespace, name)
            if entry is None:
                return None
            made = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
            if ref.get("name") not in made:
                return None  # its claim is not made yet (or quota refused it): the pod stays Pending
            requests = ((entry.obj.get("spec") or {}).get("spec") or {}).get("devices", {}).get("requests") or []
            for request in requests:
                exactly = request.get("exactly") or request
                first = (request.get("firstAvailable") or [{}])[0]
                total += int(exactly.get("count") or first.get("count") or 1)
        return total

    def _fits(self, pod: dict, node: dict, devices: int) -> bool:
        name = _meta(node)["name"]
        spec = pod.get("spec") or {}
        if (node.get("spec") or {}).get("unschedulable") and not any(
                t.get("key") == "node.kubernetes.io/unschedulable" and t.get("operator") == "Exists"
                for t in spec.get("tolerations") or ()):
            return False
        labels = _meta(node).get("labels") or {}
        if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
            return False
        if not _affinity_allows(spec, name, labels):
            return False
        bound = [p for p in self.objects("pods") if (p.get("spec") or {}).get("nodeName") == name
                 and not _finished(p)]
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        used: dict[str, int] = {}
        for other in bound:
            for resource, amount in pod_requests(other).items():
                used[resource] = used.get(resource, 0) + amount
        for resource, amount in pod_requests(pod).items():
            if (_quantity(allocatable.get(resource, 0)) or 0) - used.get(resource, 0) < amount:
                return False
        if devices:
            published = sum(len((s.get("spec") or {}).get("devices") or ()) for s in self.objects("resourceslices")
                            if (s.get("spec") or {}).get("nodeName") == name)
            taken = sum(self._devices_wanted(other) or 0 for other in bound)
            if published - taken < devices:
                return False
        return True


def _pinned_node(pod: dict) -> str | None:
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return node
    terms = ((((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and field.get("values"):
                return field["values"][0]
    return None


def _expression_matches(expression: dict, value: str | None) -> bool:
    operator, values = expression.get("operator"), expression.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    return False  # Gt/Lt: not simulated, never matches


def _affinity_allows(spec: dict, node_name: str, labels: dict) -> bool:
    """Required node affinity: the terms are ORed, the expressions of a term ANDed."""
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms: Iterable[dict] = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(all(_expression_matches(e, labels.get(e.get("key"))) for e in term.get("matchExpressions") or ())
               and all(_expression_matches(f, node_name if f.get("key") == "metadata.name" else None)
                       for f in term.get("matchFields") or ())
               for term in terms)
