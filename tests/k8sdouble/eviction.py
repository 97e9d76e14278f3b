"""The pods/eviction subresource, as pkg/registry/core/pod/storage/eviction.go answers it.

- A pod that is Pending, Succeeded, Failed or already terminating is deleted without a PDB check
  (``canIgnorePDB``).
- More than one PodDisruptionBudget selecting the pod: 500, the subresource does not support it.
- A PDB whose status has not observed its generation: 429 ("still being processed").
- ``disruptionsAllowed < 0``: 403; ``== 0``: 429 TooManyRequests with a ``DisruptionBudget`` cause
  ("needs N healthy pods and has M currently"), the answer ``kubectl drain`` retries on.
- Otherwise the budget is decremented (the pod is recorded in ``status.disruptedPods``) and the pod
  is deleted. An unready pod may go when the budget is otherwise healthy (``IfHealthyBudget``, the
  default) or always (``unhealthyPodEvictionPolicy: AlwaysAllow``).
- ``dryRun`` (query or ``deleteOptions.dryRun``) checks everything and changes nothing.
"""
from __future__ import annotations

from datetime import datetime, timezone

from .controllers import _ready
from .conversion import clone
from .errors import ApiError
from .kinds import Registry
from .selectors import label_selector_matches
from .store import Store

EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def _too_many(message: str) -> ApiError:
    return ApiError(429, VIOLATION, "TooManyRequests",
                    {"causes": [{"reason": "DisruptionBudget", "message": message}]})


def evict(registry: Registry, store: Store, namespace: str, name: str, body: dict, dry_run: bool) -> dict:
    if body.get("apiVersion") not in EVICTION_VERSIONS or body.get("kind") != "Eviction":
        raise ApiError(400, f"the body must be a policy/v1 Eviction, not {body.get('apiVersion')} {body.get('kind')}")
    meta = body.get("metadata") or {}
    if meta.get("name") != name:
        raise ApiError(400, "name in URL does not match name in Eviction object")
    options = body.get("deleteOptions") or {}
    dry_run = dry_run or "All" in (options.get("dryRun") or [])
    pods_kind = registry.resolve("pods")
    with store.cond:
        pod = store.require(pods_kind, namespace, name).obj
        preconditions = options.get("preconditions") or {}
        phase = (pod.get("status") or {}).get("phase")
        if not (phase in ("Pending", "Succeeded", "Failed") or pod["metadata"].get("deletionTimestamp")):
            pdb_kind = registry.resolve("poddisruptionbudgets")
            pdbs = [e for e in store.entries(pdb_kind, namespace)
                    if (e.obj.get("spec") or {}).get("selector") is not None
                    and label_selector_matches(e.obj["spec"]["selector"], pod)]
            if len(pdbs) > 1:
                raise ApiError(500, "This pod has more than one PodDisruptionBudget, which the eviction "
                                    "subresource does not support.")
            if pdbs:
                _check_and_decrement(store, pdbs[0], pod, dry_run)
        store.delete(pods_kind, namespace, name, dry_run=dry_run,
                     precondition_rv=preconditions.get("resourceVersion"),
                     precondition_uid=preconditions.get("uid"))
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _check_and_decrement(store: Store, entry, pod: dict, dry_run: bool) -> None:
    pdb = entry.obj
    pdb_name = pdb["metadata"]["name"]
    status = pdb.get("status") or {}
    healthy, desired = int(status.get("currentHealthy", 0)), int(status.get("desiredHealthy", 0))
    if not _ready(pod):
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
        if policy == "AlwaysAllow" or (status.get("observedGeneration") == pdb["metadata"].get("generation")
                                       and healthy >= desired > 0):
            return
    if int(status.get("observedGeneration", 0)) < int(pdb["metadata"].get("generation", 1)):
        raise _too_many(f"The disruption budget {pdb_name} is still being processed by the server.")
    allowed = int(status.get("disruptionsAllowed", 0))
    if allowed < 0:
        raise ApiError(403, "pdb disruptions allowed is negative", "Forbidden")
    if allowed == 0:
        raise _too_many(f"The disruption budget {pdb_name} needs {desired} healthy pods and has "
                        f"{healthy} currently")
    if dry_run:
        return
    updated = clone(pdb)
    updated["status"] = {**status, "disruptionsAllowed": allowed - 1,
                         "disruptedPods": {**(status.get("disruptedPods") or {}),
                                           pod["metadata"]["name"]: datetime.now(timezone.utc)
                                           .strftime("%Y-%m-%dT%H:%M:%SZ")}}
    store.update(entry.kind, updated, subresource="status", force=True)
