"""RFC 6902 JSON Patch helpers the webhook needs at run time: moving a patch under a prefix, and
applying one to a copy (to look at the pod as it will be after the rewrite)."""

from __future__ import annotations

import copy
from typing import Any, Iterable


class PatchError(ValueError):
    pass


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def prefixed(ops: Iterable[dict[str, Any]], prefix: str) -> tuple[dict[str, Any], ...]:
    """The same operations on a document that holds the patched one at ``prefix``."""
    if not prefix:
        return tuple(ops)
    out = []
    for op in ops:
        moved = dict(op)
        moved["path"] = prefix + op["path"]
        if "from" in op:
            moved["from"] = prefix + op["from"]
        out.append(moved)
    return tuple(out)


def apply(doc: Any, ops: Iterable[dict[str, Any]]) -> Any:
    """A patched deep copy of ``doc`` (add/remove/replace/test/copy/move)."""
    result = copy.deepcopy(doc)
    for op in ops:
        result = _apply_one(result, op)
    return result


def _split(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"path {path!r} must start with /")
    return [_unescape(t) for t in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, list):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            raise PatchError(f"missing parent at {token!r}")
    return node


def _get(doc: Any, path: str) -> Any:
    node = doc
    for token in _split(path):
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _apply_one(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    tokens = _split(op["path"])
    if kind == "test":
        if _get(doc, op["path"]) != op["value"]:
            raise PatchError(f"test failed at {op['path']}")
        return doc
    if kind in ("copy", "move"):
        value = copy.deepcopy(_get(doc, op["from"]))
        if kind == "move":
            doc = _apply_one(doc, {"op": "remove", "path": op["from"]})
        return _apply_one(doc, {"op": "add", "path": op["path"], "value": value})
    if not tokens:
        if kind in ("add", "replace"):
            return copy.deepcopy(op["value"])
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens)
    last = tokens[-1]
    try:
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if kind == "add":
                parent.insert(index, copy.deepcopy(op["value"]))
            elif kind == "replace":
                parent[index] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del parent[index]
            else:
                raise PatchError(f"unknown op {kind!r}")
        elif isinstance(parent, dict):
            if kind == "add":
                parent[last] = copy.deepcopy(op["value"])
            elif kind == "replace":
                if last not in parent:
                    raise PatchError(f"replace of missing {op['path']}")
                parent[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del parent[last]
            else:
                raise PatchError(f"unknown op {kind!r}")
        else:
            raise PatchError(f"cannot apply {kind} under a scalar at {op['path']}")
    except (IndexError, KeyError, ValueError) as exc:
        if isinstance(exc, PatchError):
            raise
        raise PatchError(f"{kind} {op['path']}: {exc}") from None
    return doc
