"""Which nodes run a DRA GPU driver instead of the device plugin, by node label."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kubectl_gpu.core.facts import DRA_NODE_LABEL_KEY, DRA_NODE_LABEL_VALUE

DEFAULT_DRA_NODE_LABEL = f"{DRA_NODE_LABEL_KEY}={DRA_NODE_LABEL_VALUE}"


@dataclass(frozen=True)
class NodeLabel:
    key: str
    value: str

    @classmethod
    def parse(cls, text: str) -> "NodeLabel":
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--dra-node-label {text!r} must be KEY=VALUE, "
                             f"e.g. {DEFAULT_DRA_NODE_LABEL}")
        return cls(key.strip(), value.strip())

    def matches(self, labels: Mapping[str, str]) -> bool:
        return labels.get(self.key) == self.value

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


DEFAULT_DRA_NODE_LABELS = (NodeLabel.parse(DEFAULT_DRA_NODE_LABEL),)


def is_dra_node(labels: Mapping[str, str], selectors: Iterable[NodeLabel]) -> bool:
    return any(s.matches(labels) for s in selectors)


def matching_label(labels: Mapping[str, str], selectors: Iterable[NodeLabel]) -> NodeLabel | None:
    return next((s for s in selectors if s.matches(labels)), None)
