"""Cluster-wide queues before the workloads move: Kueue's ClusterQueues (with --kueue) and
Volcano's Queues get the DRA entries that carry their GPU caps (kubectl_gpu.core decides each
change), and rollback takes exactly those entries away again.

A queue's lists (Kueue's coveredResources, flavors and their resources) are not merged by name the
same way on every Kueue release, so a write is the whole object as it should become, sent with its
resourceVersion (the API server refuses it if anyone changed the queue since it was read: run again).
The entries added are recorded on the queue (QUOTA_ENTRIES_ANNOTATION, JSON) so rollback removes
those and nothing else.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_gpu.core import (Note, Severity, TranslateOptions, is_cluster_queue, is_volcano_queue, queue_change,
                              volcano_queue_change)
from kubectl_gpu.dra.facts import QUOTA_ENTRIES_ANNOTATION
from kubectl_gpu.k8s.client import Client
from kubectl_gpu.manifests.tree_patch import apply_patch

from .cluster_io import object_path, send

PLURALS = {"ClusterQueue": "clusterqueues", "Queue": "queues"}


@dataclass(frozen=True)
class QueueWrite:
    """One queue: what it should become and what to say."""

    queue: Mapping[str, Any]  # as read
    operations: tuple[dict[str, Any], ...]  # RFC 6902, relative to the queue
    added: tuple[str, ...]  # each entry added, as the report names it
    recorded: tuple[str, ...]  # what rollback removes (JSON pointers for Volcano, resource names for Kueue)
    notes: tuple[Note, ...]
    mappings: tuple[dict[str, Any], ...] = ()  # Kueue's deviceClassMappings it relies on

    @property
    def ref(self) -> str:
        return f"{self.queue.get('kind')}/{(self.queue.get('metadata') or {}).get('name')}"


def plan_queue_writes(queues: Iterable[Mapping[str, Any]], options: TranslateOptions, kueue: bool) -> list[QueueWrite]:
    """The queues whose GPU caps need DRA entries (Kueue's only with ``kueue``: changing its queues
    also needs its Configuration changed, which is the operator's step)."""
    writes = []
    for queue in queues:
        if is_volcano_queue(queue):
            change = volcano_queue_change(queue, options)
            if change.notes:
                pointers = tuple(op["path"] for op in change.operations)
                writes.append(QueueWrite(queue, change.operations, change.added, pointers, change.notes))
        elif is_cluster_queue(queue):
            kueue_change = queue_change(queue, options)
            if not kueue_change.notes:
                continue
            if not kueue:
                if kueue_change.covers_gpu or kueue_change.operations:
                    name = (queue.get("metadata") or {}).get("name")
                    writes.append(QueueWrite(queue, (), (), (), (Note(
                        Severity.WARNING, f"ClusterQueue {name} covers GPUs: Kueue counts claims there only through "
                                          "its Configuration's deviceClassMappings; run with --kueue to change the "
                                          "queue and print the mappings"),)))
                continue
            added = tuple(f"{op['value']['name']}: {op['value']['nominalQuota']}" for op in kueue_change.operations
                          if isinstance(op["value"], Mapping))
            names = tuple(sorted({op["value"] for op in kueue_change.operations if isinstance(op["value"], str)}))
            writes.append(QueueWrite(queue, kueue_change.operations, added, names, kueue_change.notes,
                                     kueue_change.mappings))
    return writes


def volcano_document(writes: Iterable[QueueWrite]) -> list[dict[str, Any]]:
    """The queues as they should become, for `plan -o yaml`, with what to know."""
    out = []
    for write in writes:
        queue = _without_server_fields(write.queue)
        queue.get("metadata", {}).pop("resourceVersion", None)
        apply_patch(queue, list(write.operations))
        out.append({"queue": queue, "notes": [n.message for n in write.notes]})
    return out


def _path(queue: Mapping[str, Any]) -> str:
    return object_path(str(queue["apiVersion"]), PLURALS[str(queue["kind"])], "", str(queue["metadata"]["name"]))


def _query(manager: str, dry_run: bool) -> list[tuple[str, str]]:
    return [("fieldManager", manager), *([("dryRun", "All")] if dry_run else [])]


def _without_server_fields(queue: Mapping[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(dict(queue))
    body.pop("status", None)
    body.get("metadata", {}).pop("managedFields", None)
    return body


def apply_queue(api: Client, write: QueueWrite, manager: str, dry_run: bool) -> str:
    if not write.operations:
        return f"{write.ref}: unchanged"
    body = _without_server_fields(write.queue)
    apply_patch(body, list(write.operations))
    annotations = body["metadata"].setdefault("annotations", {})
    earlier = json.loads(annotations.get(QUOTA_ENTRIES_ANNOTATION) or "[]")
    annotations[QUOTA_ENTRIES_ANNOTATION] = json.dumps([*earlier, *write.recorded])
    send(api, "PUT", _path(write.queue), body, query=_query(manager, dry_run))
    return f"{write.ref}: {'would add' if dry_run else 'added'} {', '.join(write.added)}"


def recorded_queues(queues: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [q for q in queues if QUOTA_ENTRIES_ANNOTATION in ((q.get("metadata") or {}).get("annotations") or {})]


def rollback_queue(api: Client, queue: Mapping[str, Any], manager: str, dry_run: bool) -> str:
    """Remove the entries migrate recorded on ``queue`` (those still there), and the record."""
    body = _without_server_fields(queue)
    annotations = body["metadata"]["annotations"]
    try:
        recorded = json.loads(annotations.pop(QUOTA_ENTRIES_ANNOTATION))
    except ValueError:
        recorded = []
    if not isinstance(recorded, list):
        recorded = []
    if not annotations:
        del body["metadata"]["annotations"]
    removed = _remove(body, [str(r) for r in recorded])
    send(api, "PUT", _path(queue), body, query=_query(manager, dry_run))
    ref = f"{queue.get('kind')}/{queue['metadata']['name']}"
    return f"{ref}: {'would remove' if dry_run else 'removed'} {', '.join(removed) or 'nothing (already gone)'}"


def _remove(body: dict[str, Any], recorded: list[str]) -> list[str]:
    removed = []
    spec = body.get("spec") or {}
    if is_volcano_queue(body):
        for pointer in recorded:  # "/spec/<section>[/resource]/<key>", RFC 6901-escaped
            *where, key = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]] or [""]
            entries: Any = body
            for part in where:
                entries = entries.get(part) if isinstance(entries, dict) else None
            if isinstance(entries, dict) and key in entries:
                del entries[key]
                removed.append(f"{'.'.join(where[1:])}: {key}")
    else:  # a Kueue ClusterQueue: the resource names added to its groups and flavors
        for group in spec.get("resourceGroups") or ():
            covered = group.get("coveredResources") or []
            for name in recorded:
                if name in covered:
                    covered.remove(name)
                    removed.append(name)
                for flavor in group.get("flavors") or ():
                    flavor["resources"] = [r for r in flavor.get("resources") or () if r.get("name") != name]
    return removed


