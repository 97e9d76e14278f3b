"""Which nodes run a DRA GPU driver instead of the device plugin: by node label (ACK's, or one the
admin names), or by what the node publishes: a current ResourceSlice of the NVIDIA driver
(gpu.nvidia.com) or HAMi's (hami-core-gpu.project-hami.io) on it.  GPU Operator installs of the DRA
driver (its GPUCluster resource) set no label and no GPU Feature Discovery labels, nor does HAMi's
chart; their kubelet plugins' slices say where they run."""

from __future__ import annotations

from typing import Iterable, Mapping

from kubectl_gpu.dra.facts import DEFAULT_DRA_NODE_MARKERS, DraNodeMarker
from kubectl_gpu.dra.gpu_drivers import GPU_DRA_DRIVERS, publishing_nodes

__all__ = ["DEFAULT_DRA_NODE_LABELS", "GPU_DRA_DRIVERS", "NodeLabel", "is_dra_node", "matching_label",
           "publishing_nodes"]


# The same marker type as the webhook's (KEY=VALUE, or KEY for any value).
NodeLabel = DraNodeMarker


DEFAULT_DRA_NODE_LABELS = DEFAULT_DRA_NODE_MARKERS


def is_dra_node(labels: Mapping[str, str], selectors: Iterable[NodeLabel]) -> bool:
    return any(s.matches(labels) for s in selectors)


def matching_label(labels: Mapping[str, str], selectors: Iterable[NodeLabel]) -> NodeLabel | None:
    return next((s for s in selectors if s.matches(labels)), None)
