"""Kueue's side of a fleet plan: the deviceClassMappings Kueue's Configuration needs and the
ClusterQueues as they should become (kubectl_gpu.core.kueue decides each queue's change)."""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gpu.core import TranslateOptions, kueue_configuration, kueue_notes, merged_mappings, queue_change
from kubectl_gpu.manifests.tree_patch import apply_patch


@dataclass(frozen=True)
class KueuePlan:
    mappings: tuple[dict[str, Any], ...]  # resources.deviceClassMappings entries
    cluster_queues: tuple[dict[str, Any], ...]  # ClusterQueues that change, whole, as they should become
    notes: tuple[str, ...]

    @property
    def configuration(self) -> dict[str, Any] | None:
        return kueue_configuration(self.mappings)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"notes": list(self.notes)}
        if self.configuration is not None:
            out["configuration"] = self.configuration
        if self.cluster_queues:
            out["clusterQueues"] = [copy.deepcopy(q) for q in self.cluster_queues]
        return out


def plan_kueue(cluster_queues: Sequence[Mapping[str, Any]], options: TranslateOptions = TranslateOptions()) -> KueuePlan:
    changes = [queue_change(q, options) for q in cluster_queues]
    changed = []
    for queue, change in zip(cluster_queues, changes):
        if change.operations:
            patched = copy.deepcopy(dict(queue))
            apply_patch(patched, change.operations)
            patched.get("metadata", {}).pop("resourceVersion", None)
            changed.append(patched)
    mappings = merged_mappings(changes)
    notes = tuple(n.message for change in changes for n in change.notes) + kueue_notes(mappings)
    return KueuePlan(mappings, tuple(changed), notes)
