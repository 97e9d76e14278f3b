"""The two controllers whose output clients wait on: disruption (PDB status) and rollouts.

Off unless ``K8sDouble(controllers=True)``; then they run after every write, synchronously, so a
client that polls sees the status a real controller would have written by then.

- Disruption controller (pkg/controller/disruption/disruption.go): for each PodDisruptionBudget,
  ``currentHealthy`` = matching pods that are Running with condition Ready=True, ``desiredHealthy``
  from ``minAvailable`` (int or percent of the matching pods, rounded up) or ``expectedPods -
  maxUnavailable`` (percent rounded up), ``disruptionsAllowed = max(currentHealthy - desiredHealthy, 0)``,
  ``observedGeneration = generation``. Expected pods are the matching pods (the real controller
  asks the pods' controllers for their scale; the double has no pods it did not get from a test).
- Workload controllers, scheduler and kubelet (workloads.py): Deployments make ReplicaSets, which
  make pods, as do StatefulSets, DaemonSets and Jobs; pending pods are bound to a node that fits
  and start Running and Ready.
- Rollout status: a Deployment, StatefulSet or DaemonSet gets ``observedGeneration = generation``
  and replicas counted from its pods (updated = of the current template, ready/available = Ready
  ones), the fields ``kubectl rollout status`` reads (kubectl/pkg/polymorphichelpers/
  rollout_status.go). A rollout stays unready while its pods are Pending (no node fits, or a
  ResourceClaimTemplate they name does not exist) or when a test holds it with ``stall`` (its
  pods run but are not Ready).
"""
from __future__ import annotations

import math
from typing import Any

from .conversion import clone
from .kinds import Registry
from .selectors import label_selector_matches
from .store import Store
from .workloads import WorkloadControllers, _finished, template_hash

ROLLOUT_KINDS = ("Deployment", "StatefulSet", "DaemonSet")


def _percent_or_int(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def _ready(pod: dict) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def pdb_status(pdb: dict, pods: list[dict]) -> dict:
    spec = pdb.get("spec") or {}
    selector = spec.get("selector")
    matching = [p for p in pods if selector is not None and label_selector_matches(selector, p)
                and not (p.get("metadata") or {}).get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    healthy = sum(1 for p in matching if _ready(p))
    expected = len(matching)
    if "maxUnavailable" in spec:
        desired = max(expected - _percent_or_int(spec["maxUnavailable"], expected), 0)
    else:
        desired = _percent_or_int(spec.get("minAvailable", 1), expected)
    allowed = max(healthy - desired, 0)
    status = dict(pdb.get("status") or {})
    status.update(observedGeneration=(pdb.get("metadata") or {}).get("generation", 1), currentHealthy=healthy,
                  desiredHealthy=desired, expectedPods=expected, disruptionsAllowed=allowed)
    status.setdefault("disruptedPods", {})
    status["conditions"] = [{"type": "DisruptionAllowed", "status": "True" if allowed else "False",
                             "reason": "SufficientPods" if allowed else "InsufficientPods",
                             "lastTransitionTime": "1970-01-01T00:00:00Z", "message": "",
                             "observedGeneration": status["observedGeneration"]}]
    return status


def rollout_status(workload: dict, pods: list[dict], current: list[dict], wanted: int) -> dict:
    """The status fields `kubectl rollout status` reads, from the workload's pods as its controller
    counts them: ``pods`` (not finished), ``current`` (those of the current template), ``wanted``
    (spec.replicas, or a DaemonSet's eligible nodes)."""
    kind = workload.get("kind")
    generation = (workload.get("metadata") or {}).get("generation", 1)
    status = dict(workload.get("status") or {})
    status["observedGeneration"] = generation
    ready = sum(1 for p in pods if _ready(p))
    updated_ready = sum(1 for p in current if _ready(p))
    if kind == "DaemonSet":
        scheduled = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
        status.update(desiredNumberScheduled=wanted, currentNumberScheduled=scheduled,
                      updatedNumberScheduled=len(current), numberReady=ready, numberAvailable=ready,
                      numberUnavailable=max(wanted - ready, 0), numberMisscheduled=0)
        return status
    status.update(replicas=len(pods), updatedReplicas=len(current), readyReplicas=ready, availableReplicas=ready)
    if kind == "StatefulSet":
        revision = (current[0].get("metadata") or {}).get("labels", {}).get("controller-revision-hash") if current \
            else status.get("updateRevision")
        status.update(currentReplicas=len(current), updateRevision=revision)
        if len(current) == len(pods) == wanted and revision:
            status["currentRevision"] = revision
    if kind == "Deployment":
        done = len(current) == wanted and updated_ready == wanted and len(pods) == wanted
        status["unavailableReplicas"] = max(wanted - ready, 0)
        status["conditions"] = [{"type": "Progressing", "status": "True",
                                 "reason": "NewReplicaSetAvailable" if done else "ReplicaSetUpdated"}]
    return status


class Controllers:
    def __init__(self, registry: Registry, store: Store):
        self.registry = registry
        self.store = store
        self.stalled: set[tuple[str, str, str]] = set()  # (kind, namespace, name)
        self.workloads = WorkloadControllers(registry, store)

    def _owned(self, kind: str, owner: dict) -> list[dict]:
        uid = owner["metadata"]["uid"]
        return [e.obj for e in self.store.entries(self.registry.resolve(kind), owner["metadata"].get("namespace"))
                if any(r.get("controller") and r.get("uid") == uid for r in e.obj["metadata"].get("ownerReferences") or ())]

    def _stalled_uids(self) -> set[str]:
        uids = set()
        for kind_name, namespace, name in self.stalled:
            entry = self.store.get(self.registry.resolve(kind_name), namespace, name)
            if entry is not None:
                uids.add(entry.obj["metadata"]["uid"])
                if kind_name == "Deployment":
                    uids.update(rs["metadata"]["uid"] for rs in self._owned("replicasets", entry.obj))
        return uids

    def _kubelet_readiness(self) -> None:
        """Pods of a stalled workload run but never become Ready (as when they crash-loop)."""
        stalled = self._stalled_uids()
        kind = self.registry.resolve("pods")
        for entry in self.store.entries(kind):
            pod = entry.obj
            status = pod.get("status") or {}
            if not pod["spec"].get("nodeName") or status.get("phase") != "Running":
                continue
            owner = next((r.get("uid") for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")),
                         None)
            want = "False" if owner in stalled else "True"
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
            conditions.append({"type": "Ready", "status": want})
            if conditions != status.get("conditions"):
                updated = clone(pod)
                updated["status"]["conditions"] = conditions
                self.store.update(kind, updated, subresource="status", force=True)

    def _rollouts(self) -> None:
        nodes = [e.obj for e in self.store.entries(self.registry.resolve("nodes"))]
        for kind_name in ROLLOUT_KINDS:
            kind = self.registry.resolve(kind_name)
            for entry in self.store.entries(kind):
                obj = {**entry.obj, "kind": kind_name}
                spec = obj.get("spec") or {}
                template = spec.get("template") or {}
                if kind_name == "Deployment":
                    sets = self._owned("replicasets", obj)
                    pods = [p for rs in sets for p in self._owned("pods", rs) if not _finished(p)]
                    new = f"{obj['metadata']['name']}-{template_hash(template)}"
                    current = [p for rs in sets if rs["metadata"]["name"] == new for p in self._owned("pods", rs)
                               if not _finished(p)]
                    wanted = int(spec.get("replicas", 1))
                else:
                    pods = [p for p in self._owned("pods", obj) if not _finished(p)]
                    revision = template_hash(template)
                    if kind_name == "StatefulSet":
                        revision = f"{obj['metadata']['name']}-{revision}"
                    current = [p for p in pods if (p["metadata"].get("labels") or {}).get("controller-revision-hash")
                               == revision]
                    selector = (template.get("spec") or {}).get("nodeSelector") or {}
                    wanted = int(spec.get("replicas", 1)) if kind_name == "StatefulSet" else sum(
                        1 for n in nodes if all((n["metadata"].get("labels") or {}).get(k) == v
                                                for k, v in selector.items()))
                status = rollout_status(obj, pods, current, wanted)
                if status != entry.obj.get("status"):
                    updated = clone(entry.obj)
                    updated["status"] = status
                    self.store.update(kind, updated, subresource="status", force=True)

    def reconcile(self) -> None:
        with self.store.cond:
            for _ in range(10):  # Deployment -> ReplicaSet -> pods -> scheduled: until nothing changes
                changed = self.workloads.run()
                self._kubelet_readiness()
                if not changed:
                    break
            self._rollouts()
            pods_kind = self.registry.resolve("pods")
            for entry in self.store.entries(self.registry.resolve("poddisruptionbudgets")):
                namespace = entry.key[0]
                pods = [e.obj for e in self.store.entries(pods_kind, namespace)]
                status = pdb_status(entry.obj, pods)
                if status != entry.obj.get("status"):
                    updated = clone(entry.obj)
                    updated["status"] = status
                    self.store.update(entry.kind, updated, subresource="status", force=True)
