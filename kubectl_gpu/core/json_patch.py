"""RFC 6901/6902 helpers: the core speaks JSON Patch so both faces apply the same change."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class PatchError(ValueError):
    """A patch operation does not fit the document it is applied to."""


def escape(token: str) -> str:
    """One JSON Pointer reference token: `nvidia.com/gpu` -> `nvidia.com~1gpu`."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    if "~" not in token:  # nearly every token; this runs on the webhook's request path
        return token
    return token.replace("~1", "/").replace("~0", "~")


def split(pointer: str) -> list[str]:
    """A JSON Pointer's reference tokens, unescaped: `/limits/nvidia.com~1gpu` -> [limits, nvidia.com/gpu]."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer {pointer!r} must start with '/'")
    return [unescape(token) for token in pointer[1:].split("/")]


def prefix(ops: Iterable[dict[str, Any]], path: str) -> tuple[dict[str, Any], ...]:
    """The same patch for a document that holds the patched one at `path` (e.g. "/spec/template")."""
    if not path:
        return tuple(ops)
    out = []
    for op in ops:
        moved = {**op, "path": path + op["path"]}
        if "from" in op:
            moved["from"] = path + op["from"]
        out.append(moved)
    return tuple(out)
