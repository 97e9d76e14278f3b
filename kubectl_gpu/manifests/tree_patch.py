"""RFC 6901 JSON Pointers and RFC 6902 JSON Patch, applied in place.

Works on plain dicts/lists and on ruamel's CommentedMap/CommentedSeq alike, so a patch
is first tried on a plain copy (nothing half-applied if it does not fit) and then applied
to the round-trip tree, where every comment and key order the patch does not touch stays.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, MutableMapping, MutableSequence
from typing import Any

from kubectl_gpu.core import escape_pointer, split_pointer

from kubectl_gpu.core import PatchError

from .comments import attach_trailing_lines, detach_trailing_lines


# A key added to a mapping goes at its end, except these, placed before their neighbour: readers
# expect an object's metadata above its spec.
PLACED_BEFORE = {"metadata": "spec"}


def join_pointer(tokens: Iterable[str | int]) -> str:
    return "".join("/" + escape_pointer(str(token)) for token in tokens)


def resolve(document: Any, pointer: str) -> Any:
    node = document
    for token in split_pointer(pointer):
        node = _child(node, token, pointer)
    return node


def _child(node: Any, token: str, pointer: str) -> Any:
    if isinstance(node, Mapping):
        if token not in node:
            raise PatchError(f"{pointer}: no key {token!r}")
        return node[token]
    if isinstance(node, list):
        index = _index(token, len(node), pointer, allow_end=False)
        return node[index]
    raise PatchError(f"{pointer}: cannot descend into a {type(node).__name__}")


def _index(token: str, length: int, pointer: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (token.startswith("0") and token != "0"):
        raise PatchError(f"{pointer}: {token!r} is not an array index")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PatchError(f"{pointer}: index {index} is out of range (length {length})")
    return index


def _parent(document: Any, pointer: str) -> tuple[Any, str]:
    tokens = split_pointer(pointer)
    if not tokens:
        raise PatchError("the whole document cannot be replaced by this patch")
    parent = document
    for token in tokens[:-1]:
        parent = _child(parent, token, pointer)
    return parent, tokens[-1]


Wrap = Callable[[Any], Any]


def apply_patch(document: Any, operations: Iterable[Mapping[str, Any]], wrap: Wrap = copy.deepcopy) -> None:
    """Apply `operations` to `document` in place.  `wrap` turns each value the patch brings
    in into the document's own node types (ruamel maps for a round-trip tree)."""
    orphans: list[tuple[list[str], str]] = []  # comment lines whose block was removed
    for operation in operations:
        op = operation.get("op")
        path = operation.get("path")
        if not isinstance(path, str):
            raise PatchError(f"patch operation {dict(operation)!r} has no path")
        if op == "add":
            _add(document, path, wrap(operation["value"]))
        elif op == "remove":
            orphan = _remove(document, path)
            if orphan is not None:
                orphans.append((split_pointer(path)[:-1], orphan))
        elif op == "replace":
            _replace(document, path, wrap(operation["value"]))
        elif op == "move":
            value = resolve(document, operation["from"])
            comment = _end_of_line_comment(document, operation["from"])
            _remove(document, operation["from"])
            _add(document, path, value)
            if comment is not None:
                _attach_end_of_line(*_parent(document, path), comment)
        elif op == "copy":
            _add(document, path, wrap(resolve(document, operation["from"])))  # wrap makes the copy
        elif op == "test":
            if resolve(document, path) != operation["value"]:
                raise PatchError(f"{path}: test failed")
        else:
            raise PatchError(f"unknown patch operation {op!r}")
    _restore_orphans(document, orphans)


def _add(document: Any, path: str, value: Any) -> None:
    parent, token = _parent(document, path)
    if isinstance(parent, MutableMapping):
        before = PLACED_BEFORE.get(token)
        if before is not None and before in parent and token not in parent and hasattr(parent, "insert"):
            parent.insert(list(parent).index(before), token, value)
        elif token not in parent:
            _append_keeping_comments(parent, lambda: parent.__setitem__(token, value))
        else:
            parent[token] = value
    elif isinstance(parent, MutableSequence):
        index = _index(token, len(parent), path, allow_end=True)
        if index == len(parent):
            _append_keeping_comments(parent, lambda: parent.append(value))
        else:
            parent.insert(index, value)
    else:
        raise PatchError(f"{path}: cannot add into a {type(parent).__name__}")


def _append_keeping_comments(parent: Any, append: Callable[[], None]) -> None:
    lines = detach_trailing_lines(parent) if hasattr(parent, "ca") else None
    append()
    if lines is not None:
        attach_trailing_lines(parent, lines)


def _remove(document: Any, path: str) -> str | None:
    parent, token = _parent(document, path)
    if isinstance(parent, MutableMapping):
        if token not in parent:
            raise PatchError(f"{path}: no key {token!r} to remove")
        value = parent[token]
        orphan = None
        if isinstance(value, (Mapping, list)) and hasattr(value, "ca"):
            orphan = _keep_trailing_comments_of_removed_block(parent, token, value)
        else:
            _keep_comment_of_removed_key(parent, token)
        del parent[token]
        return orphan
    elif isinstance(parent, MutableSequence):
        del parent[_index(token, len(parent), path, allow_end=False)]
    else:
        raise PatchError(f"{path}: cannot remove from a {type(parent).__name__}")
    return None


def _replace(document: Any, path: str, value: Any) -> None:
    parent, token = _parent(document, path)
    if isinstance(parent, MutableMapping):
        if token not in parent:
            raise PatchError(f"{path}: no key {token!r} to replace")
        parent[token] = value
    elif isinstance(parent, MutableSequence):
        parent[_index(token, len(parent), path, allow_end=False)] = value
    else:
        raise PatchError(f"{path}: cannot replace in a {type(parent).__name__}")


def _end_of_line_comment(document: Any, path: str) -> str | None:
    """The comment on the line of a mapping key holding a scalar (`count: 2  # one per rank`), which a
    move carries along with the value."""
    parent, key = _parent(document, path)
    entry = getattr(getattr(parent, "ca", None), "items", {}).get(key) if isinstance(parent, Mapping) else None
    token = entry[2] if entry and len(entry) > 2 else None
    if token is None or isinstance(parent[key], (Mapping, list)):
        return None
    own = token.value.partition("\n")[0]
    return own if own.strip().startswith("#") else None


def _keep_comment_of_removed_key(mapping: Any, key: str) -> None:
    """ruamel stores the comment lines that FOLLOW a key on that key; removing the key
    would silently drop comments that belong to the next lines.  Hand them to the key
    before (when it holds a scalar), so only the removed line itself disappears."""
    comments = getattr(getattr(mapping, "ca", None), "items", None)
    entry = comments.get(key) if comments else None
    token = entry[2] if entry and len(entry) > 2 else None
    if token is None:
        return
    _own, _, following = token.value.partition("\n")
    keys = list(mapping)
    position = keys.index(key)
    if not following.strip() or position == 0:
        return
    previous = keys[position - 1]
    if isinstance(mapping[previous], (Mapping, list)):
        return  # its trailing comments live inside the nested collection
    slot = comments.setdefault(previous, [None, None, None, None])
    if slot[2] is None:
        token.value = "\n" + following
        slot[2] = token
    else:
        slot[2].value += following


def _keep_trailing_comments_of_removed_block(parent: Any, token: str, value: Any) -> str | None:
    """The comment lines after a removed block (`limits:` holding only the GPU) belong to what
    follows it (`# volumes follow` above `volumes:`).  With a sibling before the removed key they
    move to that sibling's end; otherwise they are returned, to be put back at the end of the
    enclosing collection once the whole patch is applied (see `_restore_orphans`)."""
    lines = detach_trailing_lines(value)
    if lines is None:
        return None
    keys = list(parent)
    position = keys.index(token)
    if position > 0 and hasattr(parent, "ca"):
        previous = keys[position - 1]
        target = parent[previous]
        if isinstance(target, (Mapping, list)) and len(target) and hasattr(target, "ca"):
            attach_trailing_lines(target, lines)
        else:
            _attach_after_scalar(parent, previous, lines)
        return None
    return lines


def _restore_orphans(document: Any, orphans: list[tuple[list[str], str]]) -> None:
    for tokens, lines in orphans:
        node, deepest = document, None
        if isinstance(node, (Mapping, list)) and len(node) and hasattr(node, "ca"):
            deepest = node
        for token in tokens:
            try:
                node = _child(node, token, "")
            except PatchError:
                break
            if isinstance(node, (Mapping, list)) and len(node) and hasattr(node, "ca"):
                deepest = node
        if deepest is not None:
            attach_trailing_lines(deepest, lines)


def _attach_after_scalar(mapping: Any, key: Any, lines: str) -> None:
    slot = mapping.ca.items.setdefault(key, [None, None, None, None])
    if slot[2] is None:
        from ruamel.yaml.error import CommentMark
        from ruamel.yaml.tokens import CommentToken

        slot[2] = CommentToken("\n" + lines, CommentMark(0), None)
    else:
        slot[2].value = slot[2].value.rstrip("\n") + "\n" + lines


def _attach_end_of_line(mapping: Any, key: Any, comment: str) -> None:
    """Put a moved key's end-of-line comment back on its line (one space after the value)."""
    if not hasattr(mapping, "ca"):
        return
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    slot = mapping.ca.items.setdefault(key, [None, None, None, None])
    following = slot[2].value if slot[2] is not None else "\n"
    slot[2] = CommentToken(comment + ("\n" if not following.startswith("\n") else "") + following,
                           CommentMark(0), None)
