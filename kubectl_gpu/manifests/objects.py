"""Kubernetes objects inside parsed documents: a document is one object, or a `kind: List`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ObjectRef:
    """One object of one file: document index, and item index when it sits in a List."""

    document: int
    item: int | None
    kind: str | None
    name: str | None
    namespace: str | None  # as written in the object (not defaulted)

    @property
    def pointer(self) -> str:
        """The object's place inside its document tree."""
        return "" if self.item is None else f"/items/{self.item}"

    @property
    def label(self) -> str:
        if self.kind is None and self.name is None:
            return f"document {self.document + 1}" + (f", item {self.item + 1}" if self.item is not None else "")
        kind = self.kind or "object"
        name = self.name or "(unnamed)"
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{kind} {where}{name}"


def is_list(tree: Any) -> bool:
    return (
        isinstance(tree, Mapping)
        and str(tree.get("kind", "")).endswith("List")
        and isinstance(tree.get("items"), list)
    )


def iter_objects(document: int, tree: Any) -> Iterator[tuple[ObjectRef, Any]]:
    if is_list(tree):
        for index, item in enumerate(tree["items"]):
            if isinstance(item, Mapping):
                yield describe(document, index, item), item
    elif isinstance(tree, Mapping):
        yield describe(document, None, tree), tree


def describe(document: int, item: int | None, obj: Mapping[str, Any]) -> ObjectRef:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name = metadata.get("name") or metadata.get("generateName")
    namespace = metadata.get("namespace")
    return ObjectRef(
        document,
        item,
        _text(obj.get("kind")),
        _text(name),
        _text(namespace),
    )


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int)) and str(value) else None
