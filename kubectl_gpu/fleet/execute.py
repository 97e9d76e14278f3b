"""Carry out a plan against the API: apply workloads, wait for rollouts, roll back, switch nodes.

Every write goes through ``live.send`` with field manager kubectl-gpu; ``dry_run`` adds
``dryRun=All`` so the API server validates (and answers conflicts) without persisting anything.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


from kubectl_gpu.dra.facts import NODE_WAVE_ANNOTATION
from kubectl_gpu.k8s.client import Client
from kubectl_gpu.k8s.errors import ApiError
from kubectl_gpu.k8s.paths import POD, WORKLOAD_RESOURCES, collection_path

from .apply import describe_change, diff, migration_steps, rollback_config
from .cluster_io import object_path, send, status_causes
from .dry_run import mode_of

APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
BUILTIN_PLURALS = {(r.api_version, r.kind): r.plural for r in (*WORKLOAD_RESOURCES, POD)}


class StepFailed(Exception):
    """A write was refused or a rollout did not become ready; the message says which and why."""


@dataclass(frozen=True)
class Target:
    api_version: str
    kind: str
    plural: str
    namespace: str
    name: str

    @property
    def path(self) -> str:
        return object_path(self.api_version, self.plural, self.namespace, self.name)

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.namespace + '/' if self.namespace else ''}{self.name}"


def _query(manager: str, dry_run: bool, force: bool = False) -> list[tuple[str, str]]:
    query = [("fieldManager", manager)]
    if dry_run:
        query.append(("dryRun", "All"))
    if force:
        query.append(("force", "true"))
    return query


def _explain(error: ApiError, target: str) -> str:
    causes = status_causes(error)
    if error.status == 409 and causes:
        fields = ", ".join(f"{c.get('field')} ({c.get('message')})" for c in causes[:5])
        return (f"{target}: another manager changed fields kubectl-gpu sets: {fields}; re-run plan and migrate "
                f"again (nothing was forced)")
    return f"{target}: {error.message} (HTTP {error.status})"


def apply_claims(api: Client, claims: Sequence[Mapping[str, Any]], manager: str, dry_run: bool) -> list[str]:
    """Server-side apply the claim templates (before the workloads that reference them)."""
    done = []
    for claim in claims:
        meta = claim["metadata"]
        path = object_path(claim["apiVersion"], "resourceclaimtemplates" if claim["kind"] == "ResourceClaimTemplate"
                           else "resourceclaims", meta.get("namespace", ""), meta["name"])
        try:
            send(api, "PATCH", path, claim, content_type=APPLY, query=_query(manager, dry_run))
        except ApiError as error:
            raise StepFailed(_explain(error, f"{claim['kind']}/{meta.get('namespace')}/{meta['name']}")) from error
        done.append(f"{claim['kind']}/{meta.get('namespace')}/{meta['name']}")
    return done


def apply_workload(api: Client, target: Target, migrated: Mapping[str, Any], manager: str,
                   dry_run: bool) -> str:
    """Rewrite one live object (ownership hand-over, then the apply); returns what happened."""
    try:
        live = send(api, "GET", target.path)
    except ApiError as error:
        raise StepFailed(_explain(error, target.ref)) from error
    if live.get("metadata", {}).get("uid") != migrated.get("metadata", {}).get("uid"):
        raise StepFailed(f"{target.ref} was replaced since it was planned (new uid); plan again")
    planned_rv = (migrated.get("metadata") or {}).get("resourceVersion")
    if planned_rv and planned_rv != live["metadata"].get("resourceVersion"):
        # The hand-over would move fields someone just changed: never take them silently.
        raise StepFailed(f"{target.ref} changed since it was read (resourceVersion {planned_rv} -> "
                         f"{live['metadata'].get('resourceVersion')}); nothing was written to it: run migrate again")
    planned = _with_live_identity(migrated, live)
    transfer, config = migration_steps(live, planned, manager)
    if dry_run:
        added, changed, removed = diff(live, planned)
        return _dry_run_update(api, target, live, planned, manager, changes=bool(added | changed | removed))
    try:
        if transfer:
            send(api, "PATCH", target.path, transfer, content_type=JSON_PATCH, query=_query(manager, False))
        result = send(api, "PATCH", target.path, config, content_type=APPLY, query=_query(manager, False))
    except ApiError as error:
        raise StepFailed(_explain(error, target.ref)) from error
    if result.get("metadata", {}).get("resourceVersion") == live["metadata"].get("resourceVersion") and not transfer:
        return "unchanged"
    return "applied"


def _dry_run_update(api: Client, target: Target, live: Mapping[str, Any], planned: Mapping[str, Any], manager: str,
                    changes: bool) -> str:
    """The server dry run of a migration: one PUT of the whole migrated object with dryRun=All and
    the resourceVersion that was read.

    The real write is two requests (the managedFields hand-over, then the apply), and dry-run
    requests are not chained: a dry-run apply is judged against the stored object, whose legacy
    fields still belong to their creator, so it cannot show them go. A dry-run PUT runs the whole
    write path the real requests run (defaulting, validation, immutable fields, admission
    webhooks that support dry run, the resourceVersion precondition) and answers the object as it
    would be stored (https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run), which
    is the spec the hand-over plus apply store; only its managedFields differ (an Update entry
    instead of kubectl-gpu's Apply entry), and they are not shown."""
    if not changes:
        return "unchanged"
    body = dict(planned)
    meta = {k: v for k, v in (planned.get("metadata") or {}).items() if k != "managedFields"}
    meta["resourceVersion"] = live["metadata"]["resourceVersion"]
    body["metadata"] = meta
    body.pop("status", None)
    try:
        result = send(api, "PUT", target.path, body, query=_query(manager, True))
    except ApiError as error:
        raise StepFailed(_explain(error, target.ref)) from error
    return f"would apply {mode_of(api).words}: " + describe_change(live, result)


def _with_live_identity(migrated: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """The planned object carrying the live metadata that the diff must not see as changes."""
    out = dict(migrated)
    meta = dict(out.get("metadata") or {})
    meta["managedFields"] = (live.get("metadata") or {}).get("managedFields")
    meta["resourceVersion"] = (live.get("metadata") or {}).get("resourceVersion")
    out["metadata"] = meta
    out["status"] = live.get("status")
    return out


def rollback_workload(api: Client, target: Target, manager: str, dry_run: bool) -> str:
    try:
        live = send(api, "GET", target.path)
        config = rollback_config(live)
        send(api, "PATCH", target.path, config, content_type=APPLY, query=_query(manager, dry_run))
    except ApiError as error:
        raise StepFailed(_explain(error, target.ref)) from error
    return f"would roll back {mode_of(api).words}" if dry_run else "rolled back"


def rollout_ready(obj: Mapping[str, Any]) -> tuple[bool, str]:
    """kubectl rollout status's verdict (kubectl/pkg/polymorphichelpers/rollout_status.go)."""
    kind = obj.get("kind")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation", 0)
    if kind not in ("Deployment", "StatefulSet", "DaemonSet"):
        return True, "no rollout to wait for"
    if status.get("observedGeneration", 0) < generation:
        return False, "waiting for the controller to observe the new spec"
    if kind == "Deployment":
        for condition in status.get("conditions") or ():
            if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
                return False, "exceeded its progress deadline"
        want = spec.get("replicas", 1)
        if status.get("updatedReplicas", 0) < want:
            return False, f"{status.get('updatedReplicas', 0)} of {want} updated replicas"
        if status.get("replicas", 0) > status.get("updatedReplicas", 0):
            return False, "old replicas are pending termination"
        if status.get("availableReplicas", 0) < status.get("updatedReplicas", 0):
            return False, f"{status.get('availableReplicas', 0)} of {status.get('updatedReplicas', 0)} updated replicas available"
        return True, "successfully rolled out"
    if kind == "StatefulSet":
        want = spec.get("replicas", 1)
        if status.get("readyReplicas", 0) < want or status.get("updatedReplicas", 0) < want:
            return False, f"{status.get('readyReplicas', 0)} of {want} pods ready, {status.get('updatedReplicas', 0)} updated"
        return True, "successfully rolled out"
    want = status.get("desiredNumberScheduled", 0)
    if status.get("updatedNumberScheduled", 0) < want or status.get("numberAvailable", 0) < want:
        return False, f"{status.get('numberAvailable', 0)} of {want} updated pods available"
    return True, "successfully rolled out"


def wait_ready(api: Client, target: Target, timeout: float,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
               progress: Callable[[str], None] | None = None, undo: str = "kubectl gpu rollback can restore it") -> str:
    """Poll until the rollout is ready; ``progress`` hears each new state in `kubectl rollout
    status`'s words (`Waiting for deployment "web" rollout to finish: 1 of 3 updated replicas...`).
    ``undo`` says what to do when it is not ready in time."""
    deadline = clock() + timeout
    said = None
    while True:
        try:
            obj = send(api, "GET", target.path)
        except ApiError as error:
            raise StepFailed(_explain(error, target.ref)) from error
        obj.setdefault("kind", target.kind)
        ready, message = rollout_ready(obj)
        if ready:
            return message
        if progress is not None and message != said:
            progress(f'Waiting for {target.kind.lower()} "{target.name}" rollout to finish: {message}...')
            said = message
        if clock() >= deadline:
            raise StepFailed(f"{target.ref} did not become ready within {timeout:g}s: {message}; stopped here "
                             f"({undo})")
        sleep(1.0)


# ------------------------------------------------------------------------ nodes

@dataclass(frozen=True)
class NodeBefore:
    """What a node wave changes on a node, as it was before the wave (the node-wave record):
    whether it was cordoned, and the value of each label the wave sets (None: absent)."""
    unschedulable: bool
    labels: Mapping[str, str | None]

    def to_json(self) -> str:
        return json.dumps({"unschedulable": self.unschedulable, "labels": dict(self.labels)}, sort_keys=True)

    @classmethod
    def from_node(cls, node: Mapping[str, Any], label_keys: Sequence[str]) -> "NodeBefore":
        """The node's own record when an earlier wave left one (its "before" is the truth), else
        the node as it is now."""
        meta = node.get("metadata") or {}
        recorded = cls.recorded(node)
        if recorded is not None:
            return recorded
        labels = meta.get("labels") or {}
        return cls(bool((node.get("spec") or {}).get("unschedulable")), {k: labels.get(k) for k in label_keys})

    @classmethod
    def recorded(cls, node: Mapping[str, Any]) -> "NodeBefore | None":
        text = ((node.get("metadata") or {}).get("annotations") or {}).get(NODE_WAVE_ANNOTATION)
        if not text:
            return None
        try:
            data = json.loads(text)
            labels = data["labels"]
            if not isinstance(data["unschedulable"], bool) or not isinstance(labels, dict) or not all(
                    isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in labels.items()):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            name = (node.get("metadata") or {}).get("name")
            raise StepFailed(f"node/{name}: its {NODE_WAVE_ANNOTATION} annotation is not what kubectl-gpu writes "
                             f"({text!r}); fix or remove it (kubectl annotate node {name} "
                             f"{NODE_WAVE_ANNOTATION}-)") from None
        return cls(data["unschedulable"], labels)


def _patch_node(api: Client, node: str, patch: Mapping[str, Any], manager: str, dry_run: bool) -> None:
    try:
        send(api, "PATCH", f"/api/v1/nodes/{node}", patch, content_type="application/merge-patch+json",
             query=_query(manager, dry_run))
    except ApiError as error:
        raise StepFailed(_explain(error, f"node/{node}")) from error


def read_node(api: Client, node: str) -> dict[str, Any]:
    """The node; ApiError (NotFound) when there is none."""
    return send(api, "GET", f"/api/v1/nodes/{node}")


def cordon_and_record(api: Client, node: Mapping[str, Any], label_keys: Sequence[str], manager: str,
                      dry_run: bool) -> NodeBefore:
    """The wave's first write: cordon the node and keep, on the node itself, what the wave will
    change, so that a failed wave can be undone and `rollback node/NAME` knows what to restore."""
    before = NodeBefore.from_node(node, label_keys)
    name = node["metadata"]["name"]
    _patch_node(api, name, {"spec": {"unschedulable": True},
                            "metadata": {"annotations": {NODE_WAVE_ANNOTATION: before.to_json()}}}, manager, dry_run)
    return before


def label_dra_node(api: Client, node: str, labels: Mapping[str, str], manager: str, dry_run: bool) -> None:
    """The wave's last write, once the node's legacy GPU pods are gone: mark it as a DRA node."""
    _patch_node(api, node, {"metadata": {"labels": dict(labels)}}, manager, dry_run)


def undo_wave(api: Client, node: str, before: NodeBefore, manager: str, dry_run: bool) -> list[str]:
    """Put back what a wave changed (cordon, labels) and drop the record; returns what changed."""
    live = read_node(api, node)
    labels = (live.get("metadata") or {}).get("labels") or {}
    changed = []
    if bool((live.get("spec") or {}).get("unschedulable")) != before.unschedulable:
        changed.append("uncordoned" if not before.unschedulable else "cordoned again")
    for key, value in sorted(before.labels.items()):
        if labels.get(key) != value:
            changed.append(f"label {key} removed" if value is None else f"label {key}={value} restored")
    _patch_node(api, node, {"spec": {"unschedulable": before.unschedulable or None},
                            "metadata": {"labels": dict(before.labels),
                                         "annotations": {NODE_WAVE_ANNOTATION: None}}}, manager, dry_run)
    return changed


def undo_commands(node: str, before: NodeBefore) -> list[str]:
    """The kubectl commands that undo a wave by hand, when the API refused undo_wave's write."""
    commands = [] if before.unschedulable else [f"kubectl uncordon {node}"]
    for key, value in sorted(before.labels.items()):
        commands.append(f"kubectl label node {node} {key}-" if value is None
                        else f"kubectl label node {node} --overwrite {key}={value}")
    commands.append(f"kubectl annotate node {node} {NODE_WAVE_ANNOTATION}-")
    return commands


def evict(api: Client, namespace: str, name: str, dry_run: bool) -> tuple[bool, str]:
    """Evict through the eviction API; (False, why) when a PodDisruptionBudget refuses (429)."""
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": namespace}}
    if dry_run:
        body["deleteOptions"] = {"dryRun": ["All"]}
    try:
        send(api, "POST", collection_path("", "v1", "pods", namespace) + f"/{name}/eviction", body,
             query=[("dryRun", "All")] if dry_run else [])
    except ApiError as error:
        if error.status == 429:
            causes = status_causes(error)
            return False, causes[0].get("message", error.message) if causes else error.message
        if error.status == 404:
            return True, "already gone"
        raise StepFailed(_explain(error, f"pod/{namespace}/{name}")) from error
    return True, "evicted" if not dry_run else f"would be evicted {mode_of(api).words}"
