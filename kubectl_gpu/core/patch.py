"""RFC 6901/6902 helpers: the core speaks JSON Patch so both faces apply the same change."""

from __future__ import annotations


def escape(token: str) -> str:
    """One JSON Pointer reference token: `nvidia.com/gpu` -> `nvidia.com~1gpu`."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    if "~" not in token:  # nearly every token; this runs on the webhook's request path
        return token
    return token.replace("~1", "/").replace("~0", "~")


def prefix(ops: tuple[dict, ...] | list[dict], path: str) -> list[dict]:
    """The same patch applied to a pod template nested at `path` (e.g. "/spec/template")."""
    return [{**op, "path": path + op["path"]} for op in ops]
