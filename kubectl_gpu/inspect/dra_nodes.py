"""Which nodes run a DRA GPU driver instead of the device plugin, by node label."""

from __future__ import annotations

from typing import Iterable, Mapping

from kubectl_gpu.dra.facts import DEFAULT_DRA_NODE_MARKERS, DraNodeMarker

# The same marker type as the webhook's (KEY=VALUE, or KEY for any value).
NodeLabel = DraNodeMarker


DEFAULT_DRA_NODE_LABELS = DEFAULT_DRA_NODE_MARKERS


def is_dra_node(labels: Mapping[str, str], selectors: Iterable[NodeLabel]) -> bool:
    return any(s.matches(labels) for s in selectors)


def matching_label(labels: Mapping[str, str], selectors: Iterable[NodeLabel]) -> NodeLabel | None:
    return next((s for s in selectors if s.matches(labels)), None)
