"""Un-share the YAML nodes a patch is about to change.

An anchor and its aliases (`limits: &l {...}` / `requests: *l`, a container reused in
`initContainers`, a PyTorchJob `Master.template: &t` reused as `Worker.template: *t`) are one
Python object in ruamel's tree: changing it through one path changes every path, and the
second removal finds nothing left.  A merge key (`<<: *defaults`) makes keys appear in a
mapping that do not belong to it, so removing them there is impossible (and silently
leaves the legacy request behind).  Every shared or merged collection on the way to a change
is therefore replaced, in its parent, by a private copy holding all its keys as its own.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ruamel.yaml.comments import Comment, CommentedMap, CommentedSeq

from kubectl_gpu.core import split_pointer

_COLLECTIONS = (CommentedMap, CommentedSeq)


def _reference_counts(tree: Any) -> dict[int, int]:
    counts: dict[int, int] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, _COLLECTIONS):
            continue
        counts[id(node)] = counts.get(id(node), 0) + 1
        if counts[id(node)] > 1:
            continue  # its children are counted once, through the first reference
        # A mapping's merged-in keys are its own once copied: only its own values count here.
        stack.extend(v for _, v in node.non_merged_items()) if isinstance(node, CommentedMap) else stack.extend(node)
    return counts


def _private_copy(node: Any) -> Any:
    if isinstance(node, CommentedMap):
        fresh = CommentedMap()
        for key, value in node.items():  # merged keys included, as the reader sees them
            fresh[key] = copy.deepcopy(value)
        setattr(fresh, Comment.attrib, copy.deepcopy(node.ca))
        if node.fa.flow_style():
            fresh.fa.set_flow_style()
        return fresh
    fresh_seq = CommentedSeq(copy.deepcopy(list(node)))
    setattr(fresh_seq, Comment.attrib, copy.deepcopy(node.ca))
    if node.fa.flow_style():
        fresh_seq.fa.set_flow_style()
    return fresh_seq


def _needs_copy(node: Any, counts: dict[int, int]) -> bool:
    if not isinstance(node, _COLLECTIONS):
        return False
    merged = isinstance(node, CommentedMap) and bool(getattr(node, "merge", None))
    return merged or counts.get(id(node), 0) > 1


def unshare_paths(tree: Any, pointers: Iterable[str]) -> bool:
    """Make every collection on the way to (and at) each pointer's parent private to this path.
    Returns True when anything was copied."""
    counts = _reference_counts(tree)
    changed = False
    for pointer in pointers:
        tokens = split_pointer(pointer)[:-1]
        node = tree
        for token in tokens:
            if isinstance(node, Mapping):
                if token not in node:
                    break
                key: Any = token
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                key = int(token)
            else:
                break
            child = node[key]
            if _needs_copy(child, counts):
                child = _private_copy(child)
                node[key] = child
                counts = _reference_counts(tree)
                changed = True
            node = child
    return changed


def operation_pointers(operations: Iterable[Mapping[str, Any]]) -> list[str]:
    pointers: list[str] = []
    for operation in operations:
        for key in ("path", "from"):
            value = operation.get(key)
            if isinstance(value, str):
                pointers.append(value)
    return pointers
