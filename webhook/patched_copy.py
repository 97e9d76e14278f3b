"""RFC 6902 JSON Patch: applying one to a copy, and the patch between two documents.

The webhook answers with ``diff(original, changed)``: it makes its changes on a copy, then diffs
once, as controller-runtime's admission.PatchResponseFromRaw does (gomodules.xyz/jsonpatch), so
no answer is ever computed by applying one hand-built patch to compute the next.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

import jsonpatch

from kubectl_gpu.core import PatchError
from kubectl_gpu.core import escape_pointer as escape  # noqa: F401 (re-exported)
from kubectl_gpu.core import split_pointer as _split


def apply(doc: Any, ops: Iterable[dict[str, Any]]) -> Any:
    """``doc`` with ``ops`` applied (add/remove/replace/test/copy/move); ``doc`` is not modified.

    Copy on write: only the containers on each operation's path are copied, the rest is shared
    with ``doc`` (this runs on every admitted GPU pod, and pods are mostly untouched subtrees).
    Treat the result as read-only, or patch it again with this function.
    """
    result = doc
    for op in ops:
        result = _apply_one(result, op)
    return result


def _get(doc: Any, path: str) -> Any:
    node = doc
    try:
        for token in _split(path):
            node = node[int(token)] if isinstance(node, list) else node[token]
    except (IndexError, KeyError, ValueError, TypeError):
        raise PatchError(f"{path} does not exist") from None
    return node


def _child(node: Any, token: str) -> Any:
    if isinstance(node, list):
        return node[int(token)]
    if isinstance(node, dict):
        return node[token]
    raise PatchError(f"cannot descend into a scalar at {token!r}")


def _edit(node: Any, tokens: list[str], kind: str, value: Any) -> Any:
    """A copy of ``node`` with the operation done at ``tokens`` (copies only the path)."""
    if len(tokens) > 1:
        copied = list(node) if isinstance(node, list) else dict(node) if isinstance(node, dict) else None
        if copied is None:
            raise PatchError(f"cannot descend into a scalar at {tokens[0]!r}")
        key: Any = int(tokens[0]) if isinstance(node, list) else tokens[0]
        copied[key] = _edit(_child(node, tokens[0]), tokens[1:], kind, value)
        return copied
    last = tokens[0]
    if isinstance(node, list):
        out = list(node)
        index = len(out) if last == "-" else int(last)
        if kind == "add":
            if not 0 <= index <= len(out):
                raise PatchError(f"index {index} out of range")
            out.insert(index, value)
        elif kind == "replace":
            out[index] = value
        else:
            del out[index]
        return out
    if isinstance(node, dict):
        out_dict = dict(node)
        if kind == "add":
            out_dict[last] = value
        elif last not in out_dict:
            raise PatchError(f"{kind} of missing member {last!r}")
        elif kind == "replace":
            out_dict[last] = value
        else:
            del out_dict[last]
        return out_dict
    raise PatchError(f"cannot {kind} under a scalar at {last!r}")


def _apply_one(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if kind == "test":
        if _get(doc, op["path"]) != op["value"]:
            raise PatchError(f"test failed at {op['path']}")
        return doc
    if kind in ("copy", "move"):
        value = copy.deepcopy(_get(doc, op["from"]))
        if kind == "move":
            doc = _apply_one(doc, {"op": "remove", "path": op["from"]})
        return _apply_one(doc, {"op": "add", "path": op["path"], "value": value})
    if kind not in ("add", "replace", "remove"):
        raise PatchError(f"unknown op {kind!r}")
    tokens = _split(op["path"])
    if not tokens:
        if kind == "remove":
            raise PatchError("cannot remove the whole document")
        return op["value"]
    try:
        return _edit(doc, tokens, kind, op.get("value"))
    except (IndexError, KeyError, ValueError, TypeError) as exc:
        if isinstance(exc, PatchError):
            raise
        raise PatchError(f"{kind} {op['path']}: {exc}") from None


def diff(original: Any, changed: Any) -> list[dict[str, Any]]:
    """The JSON Patch that turns ``original`` into ``changed`` (neither is modified).

    ``changed`` comes from `apply`, which shares every untouched subtree with ``original``: those
    are skipped by identity, and maps and equal-length lists are compared member by member, so the
    cost follows what changed, not the object's size (a Deployment UPDATE with a 50,000-entry env
    list took 8.6 s in jsonpatch's list diff).  Lists whose length changed are diffed by jsonpatch.
    """
    ops: list[dict[str, Any]] = []
    _diff(original, changed, "", ops)
    return ops


def _diff(before: Any, after: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if before is after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
        for key, value in after.items():
            if key in before:
                _diff(before[key], value, f"{path}/{escape(key)}", ops)
            else:
                ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": value})
        return
    if isinstance(before, list) and isinstance(after, list):
        if len(before) == len(after):
            for index, (old, new) in enumerate(zip(before, after)):
                _diff(old, new, f"{path}/{index}", ops)
            return
        for op in jsonpatch.JsonPatch.from_diff(before, after).patch:
            ops.append({**op, "path": path + op["path"], **({"from": path + op["from"]} if "from" in op else {})})
        return
    if type(before) is type(after) and before == after:
        return
    ops.append({"op": "replace", "path": path, "value": after})
