"""The two controllers whose output clients wait on: disruption (PDB status) and rollouts.

Off unless ``K8sDouble(controllers=True)``; then they run after every write, synchronously, so a
client that polls sees the status a real controller would have written by then.

- Disruption controller (pkg/controller/disruption/disruption.go): for each PodDisruptionBudget,
  ``currentHealthy`` = matching pods that are Running with condition Ready=True, ``desiredHealthy``
  from ``minAvailable`` (int or percent of the matching pods, rounded up) or ``expectedPods -
  maxUnavailable`` (percent rounded up), ``disruptionsAllowed = max(currentHealthy - desiredHealthy, 0)``,
  ``observedGeneration = generation``. Expected pods are the matching pods (the real controller
  asks the pods' controllers for their scale; the double has no pods it did not get from a test).
- Rollout "controller": a Deployment, StatefulSet or DaemonSet whose spec changed gets status with
  ``observedGeneration = generation`` and every replica updated and ready, the fields
  ``kubectl rollout status`` reads (kubectl/pkg/polymorphichelpers/rollout_status.go). A rollout
  stays unready when its pod template names a ResourceClaimTemplate that does not exist in the
  namespace (the pods would stay Pending) or when a test holds it with ``stall``.
"""
from __future__ import annotations

import math
from typing import Any

from .conversion import clone
from .kinds import Registry
from .selectors import label_selector_matches
from .store import Store

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


def rollout_status(workload: dict, ready: bool, node_count: int) -> dict:
    kind = workload.get("kind")
    generation = (workload.get("metadata") or {}).get("generation", 1)
    status = dict(workload.get("status") or {})
    status["observedGeneration"] = generation
    if kind == "DaemonSet":
        want = node_count
        status.update(desiredNumberScheduled=want, currentNumberScheduled=want,
                      updatedNumberScheduled=want, numberReady=want if ready else 0,
                      numberAvailable=want if ready else 0, numberUnavailable=0 if ready else want,
                      numberMisscheduled=0)
        return status
    want = int((workload.get("spec") or {}).get("replicas", 1))
    status.update(replicas=want, updatedReplicas=want if ready else 0, readyReplicas=want if ready else 0,
                  availableReplicas=want if ready else 0)
    if kind == "StatefulSet":
        status.update(currentReplicas=want if ready else 0)
        if ready:
            status["currentRevision"] = status["updateRevision"] = f"{workload['metadata']['name']}-{generation}"
    if kind == "Deployment":
        status["unavailableReplicas"] = 0 if ready else want
        status["conditions"] = [{"type": "Progressing", "status": "True",
                                 "reason": "NewReplicaSetAvailable" if ready else "ReplicaSetUpdated"}]
    return status


class Controllers:
    def __init__(self, registry: Registry, store: Store):
        self.registry = registry
        self.store = store
        self.stalled: set[tuple[str, str, str]] = set()  # (kind, namespace, name)

    def _templates_exist(self, workload: dict) -> bool:
        namespace = workload["metadata"].get("namespace", "")
        spec = ((workload.get("spec") or {}).get("template") or {}).get("spec") or {}
        kind = self.registry.resolve("resourceclaimtemplates")
        return all(self.store.get(kind, namespace, ref["resourceClaimTemplateName"]) is not None
                   for ref in spec.get("resourceClaims") or [] if ref.get("resourceClaimTemplateName"))

    def reconcile(self) -> None:
        with self.store.cond:
            pods_kind = self.registry.resolve("pods")
            for entry in self.store.entries(self.registry.resolve("poddisruptionbudgets")):
                namespace = entry.key[0]
                pods = [e.obj for e in self.store.entries(pods_kind, namespace)]
                status = pdb_status(entry.obj, pods)
                if status != entry.obj.get("status"):
                    updated = clone(entry.obj)
                    updated["status"] = status
                    self.store.update(entry.kind, updated, subresource="status", force=True)
            node_count = len(self.store.entries(self.registry.resolve("nodes")))
            for kind_name in ROLLOUT_KINDS:
                kind = self.registry.resolve(kind_name)
                for entry in self.store.entries(kind):
                    obj = entry.obj
                    ready = (kind_name, *entry.key) not in self.stalled and self._templates_exist(obj)
                    status = rollout_status({**obj, "kind": kind_name}, ready, node_count)
                    if status != obj.get("status"):
                        updated = clone(obj)
                        updated["status"] = status
                        self.store.update(kind, updated, subresource="status", force=True)
