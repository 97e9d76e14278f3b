"""Keep comment lines where a reader expects them when a patch appends to a collection.

ruamel stores the comment lines that follow a block on the deepest last scalar inside
it.  Appending a key after that block would leave those lines stranded between the old
last entry and the new one (`# no node selector` ending up inside `resources:`).  The
lines are moved behind the appended entry, so they still close the block they closed.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken


def _last_slot(node: Any) -> tuple[Any, Any, int] | None:
    """(collection, key, token index) of the deepest last scalar entry of `node`."""
    while True:
        if isinstance(node, CommentedMap) and len(node):
            key: Any = next(reversed(node))
            position = 2
        elif isinstance(node, CommentedSeq) and len(node):
            key, position = len(node) - 1, 0
        else:
            return None
        value = node[key]
        if isinstance(value, (CommentedMap, CommentedSeq)) and len(value):
            node = value
            continue
        return node, key, position


def detach_trailing_lines(node: Any) -> str | None:
    """Remove and return the full comment lines after the last entry of `node` (its own
    end-of-line comment stays)."""
    slot = _last_slot(node)
    if slot is None:
        return None
    collection, key, position = slot
    entry = collection.ca.items.get(key)
    token = entry[position] if entry and len(entry) > position else None
    if token is None:
        return None
    own, _, following = token.value.partition("\n")
    if not following.strip():
        return None
    if own.strip():
        token.value = own + "\n"
    else:
        entry[position] = None
    return following


def attach_trailing_lines(node: Any, lines: str) -> None:
    """Put comment `lines` after the last entry of `node`."""
    slot = _last_slot(node)
    if slot is None:
        return
    collection, key, position = slot
    size = 4 if isinstance(collection, CommentedMap) else 2
    entry = collection.ca.items.setdefault(key, [None] * size)
    token = entry[position]
    if token is None:
        entry[position] = CommentToken("\n" + lines, CommentMark(0), None)
    else:
        token.value = token.value.rstrip("\n") + "\n" + lines
