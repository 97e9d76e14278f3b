"""Rewrite a document as edits of its own text: what a patch removed is cut out, what it added is
written in, and every other byte stays as it was read.

This is how migrate writes a plain block-style document (fast_read.py reads it): ruamel's round trip
would cost ten times the whole rewrite, and the text of what did not change (quotes, comments, blank
lines, indentation, a flow-style label map) cannot come out closer to the original than unchanged.
New entries are written as the codec's writer writes them (its indentation; ruamel's choice of plain
or quoted for each scalar), where ruamel would put them: at the end of their mapping or sequence,
`metadata` before `spec`.

A flow collection the patch changed is written again on one line, keeping the text of what it
kept; a block collection emptied becomes `{}`/`[]` on its key's line, and a key that held nothing
(`key:`, `{}`) gets its new value in block style.

The edit is never trusted: the new text is read again and must read as the patched tree, or None
is returned and the document goes through ruamel as before.  So is every shape this does not
write (a flow collection holding a comment, a key first on a `- ` line removed, a collection
replaced by another or emptied at the top, a string needing double quotes or a block scalar).
"""

from __future__ import annotations

import re
from typing import Any

from yaml import MappingNode, ScalarNode, SequenceNode

from .fast_read import node_value, read_fast, scalar_value
from .tree_patch import PLACED_BEFORE
from .yamlio import Indentation, written_scalar


class _Unsupported(Exception):
    """A change this module does not write as text."""


_DASH_ONLY = re.compile(r"[ \t]*-[ \t]+\Z")


def rewrite_text(text: str, root: Any, nodes: dict[int, tuple[Any, Any]], after: Any, indentation: Indentation,
                 newline: str) -> str | None:
    """`text` (whose node tree is `root`) edited to read as `after`: the tree read from it, patched
    in place or as a copy whose dicts and lists `nodes` maps (by id, to themselves and the node) to
    the nodes they were read from.  None when the change is not one this writes, or the edited text
    does not read back as `after`."""
    if text and not text.endswith("\n"):
        text += newline  # the last line ends like the others, so what is added after it starts on its own
    writer = _Writer(text, nodes, indentation, newline)
    try:
        writer.value(after, root)
    except _Unsupported:
        return None
    edited = writer.result()
    if edited is None:
        return None
    check = read_fast(edited)
    if check is None or not same(check.tree, after):
        return None
    return edited


def same(a: Any, b: Any) -> bool:
    """Equal as values, with YAML's types told apart (true is not 1; 1 is not 1.0)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return type(a) is type(b) and a == b


class _Writer:
    """The edits of `text` (cuts, insertions, replacements at character offsets) that make it read
    as a patched tree, found by walking that tree beside the nodes the text was read into."""

    def __init__(self, text: str, nodes: dict[int, tuple[Any, Any]], indentation: Indentation, newline: str) -> None:
        self.text = text
        self.nodes = nodes
        self.indentation = indentation
        self.newline = newline
        self.edits: list[tuple[int, int, int, str]] = []  # (start, end, order, replacement)

    # -- what changed -------------------------------------------------------------------------

    def value(self, value: Any, node: Any) -> None:
        if isinstance(node, ScalarNode):
            if isinstance(value, (dict, list)):
                raise _Unsupported
            if not same(value, scalar_value(node)):
                self._replace_scalar(node, value)
            return
        if self._node_of(value) is not node:
            raise _Unsupported  # a collection put in place of another
        if node.flow_style:
            if not same(value, node_value(node)):
                self._rewrite_flow(value, node)
        elif isinstance(node, MappingNode):
            self._mapping(value, node)
        else:
            self._sequence(value, node)

    def _mapping(self, value: dict[str, Any], node: Any) -> None:
        entries = {key.value: (key, item) for key, item in node.value}
        kept = [key for key in value if key in entries]
        if kept != [key for key in entries if key in value]:
            raise _Unsupported  # reordered
        if not value:
            raise _Unsupported  # emptied: ruamel writes `{}`
        column = node.value[0][0].start_mark.column
        for key, (key_node, item_node) in entries.items():
            if key not in value:
                self._cut(key_node, _end_of(item_node, key_node))
            elif _placeholder(item_node) and not same(value[key], node_value(item_node)):
                self._refill(key_node, item_node, value[key], column)
            elif value[key] in ({}, []) and _block_collection(item_node):
                self._empty(key_node, item_node, value[key])
            else:
                self.value(value[key], item_node)
        end = self._line_end(_end_of(node))
        for key in value:
            if key in entries:
                continue
            before = PLACED_BEFORE.get(key)
            at = self._line_start(entries[before][0]) if before in entries and before in value else end
            self._insert(at, self._entry(key, value[key], column))

    def _sequence(self, value: list[Any], node: Any) -> None:
        items = node.value
        if not value:
            raise _Unsupported  # emptied: ruamel writes `[]`
        dash = node.start_mark.column
        first = items[0]
        content = first.start_mark.column if first.start_mark.line == node.start_mark.line else dash + 2
        matched: set[int] = set()
        pending: list[Any] = []
        position = 0
        for item in value:
            index = self._match(item, items, position)
            if index is None:
                pending.append(item)
                continue
            if pending:
                at = self._line_start(items[index], item=True)
                for new in pending:
                    self._insert(at, self._item(new, dash, content))
                pending = []
            self.value(item, items[index])
            matched.add(index)
            position = index + 1
        for index, item_node in enumerate(items):
            if index not in matched:
                self._cut(item_node, _end_of(item_node), item=True)
        end = self._line_end(_end_of(node))
        for new in pending:
            self._insert(end, self._item(new, dash, content))

    def _node_of(self, value: Any) -> Any:
        """The node a dict or list was read from; None for one the patch brought in."""
        entry = self.nodes.get(id(value))
        return entry[1] if entry is not None and entry[0] is value else None

    def _match(self, item: Any, items: list[Any], position: int) -> int | None:
        """The index (from `position` on) of the node `item` was read from, or None for a new item."""
        if isinstance(item, (dict, list)):
            node = self._node_of(item)
            if node is None:
                return None
            for index in range(len(items)):
                if items[index] is node:
                    if index < position:
                        raise _Unsupported  # reordered
                    return index
            raise _Unsupported  # moved in from elsewhere
        for index in range(position, len(items)):
            if isinstance(items[index], ScalarNode) and same(item, scalar_value(items[index])):
                return index
        return None

    # -- edits of the text ----------------------------------------------------------------------

    def _replace_scalar(self, node: Any, value: Any) -> None:
        start, end = node.start_mark.index, node.end_mark.index
        if node.style not in ("", "'", '"') or "\n" in self.text[start:end] or start == end:
            raise _Unsupported
        self.edits.append((start, end, len(self.edits), self._scalar(value)))

    def _rewrite_flow(self, value: Any, node: Any) -> None:
        """A flow collection the patch changed, written again on one line: what it kept as its own
        text (quotes and all), what the patch brought in as ruamel writes it in flow context."""
        start, end = node.start_mark.index, node.end_mark.index
        if "#" in self._between_scalars(node):
            raise _Unsupported  # it holds a comment, which one line cannot
        self.edits.append((start, end, len(self.edits), self._flow(value, node)))

    def _between_scalars(self, node: Any) -> str:
        """The text of a collection with its scalars left out: its brackets, separators and comments."""
        spans = sorted(_scalar_spans(node))
        pieces, done = [], node.start_mark.index
        for start, end in spans:
            pieces.append(self.text[done:start])
            done = max(done, end)
        return "".join(pieces) + self.text[done:node.end_mark.index]

    def _flow(self, value: Any, node: Any) -> str:
        if node is None or isinstance(node, ScalarNode) and isinstance(value, (dict, list)):
            return self._new_flow(value)
        if isinstance(node, ScalarNode):
            if same(value, scalar_value(node)):
                return self.text[node.start_mark.index:node.end_mark.index]
            return self._flow_scalar(value)
        if self._node_of(value) is not node:
            return self._new_flow(value)
        if isinstance(node, MappingNode):
            entries = {key.value: (key, item) for key, item in node.value}
            if [k for k in value if k in entries] != [k for k in entries if k in value]:
                raise _Unsupported  # reordered
            parts = [(self.text[entries[k][0].start_mark.index:entries[k][0].end_mark.index] if k in entries
                      else self._flow_scalar(k, key=True)) + ": " + self._flow(item, entries.get(k, (None, None))[1])
                     for k, item in value.items()]
            return "{" + ", ".join(parts) + "}"
        parts, position = [], 0
        for item in value:
            index = self._match(item, node.value, position)
            parts.append(self._flow(item, None if index is None else node.value[index]))
            position = position if index is None else index + 1
        return "[" + ", ".join(parts) + "]"

    def _new_flow(self, value: Any) -> str:
        if isinstance(value, dict):
            entries = (f"{self._flow_scalar(key, key=True)}: {self._new_flow(item)}" for key, item in value.items())
            return "{" + ", ".join(entries) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self._new_flow(item) for item in value) + "]"
        return self._flow_scalar(value)

    def _flow_scalar(self, value: Any, *, key: bool = False) -> str:
        written = written_scalar(value, key=key, flow=True) if not key or isinstance(value, str) else None
        if written is None:
            raise _Unsupported
        return written

    def _refill(self, key: Any, node: Any, value: Any, column: int) -> None:
        """A key holding nothing (`key:`, `null`, `{}`, `[]`) given a value: its line rewritten."""
        stop = key.end_mark.index if isinstance(node, ScalarNode) and not node.value else node.end_mark.index
        end = self._line_end(stop)
        rest = self.text[stop:end].strip()
        if "\n" in self.text[key.end_mark.index:stop] or rest not in ("", ":"):
            raise _Unsupported  # a comment after it, or the value on a line of its own
        self.edits.append((key.end_mark.index, end, len(self.edits), ":" + self._after_key(value, column)))

    def _empty(self, key: Any, node: Any, value: Any) -> None:
        """A collection the patch emptied, written `{}` or `[]` on its key's line, as ruamel writes it."""
        if self._node_of(value) is not node:
            raise _Unsupported  # a collection put in place of another
        end = self._line_end(_end_of(node))
        self.edits.append((key.end_mark.index, end, len(self.edits), ": " + self._scalar(value) + self.newline))

    def _cut(self, first: Any, last_index: int, *, item: bool = False) -> None:
        """Remove the lines from `first` (a key, or an `item` after its `- `) to `last_index`'s line end."""
        start = self._line_start(first, item=item)
        self.edits.append((start, self._line_end(last_index), len(self.edits), ""))

    def _insert(self, at: int, text: str) -> None:
        self.edits.append((at, at, len(self.edits), text))

    def _line_start(self, node: Any, *, item: bool = False) -> int:
        """Where the line of `node` starts: a key with only indentation before it, or a sequence
        item with only its `- ` (anything else would leave half a line behind)."""
        index = node.start_mark.index
        start = self.text.rfind("\n", 0, index) + 1
        before = self.text[start:index]
        if (_DASH_ONLY.match(before) is None) if item else before.strip(" \t"):
            raise _Unsupported  # the first key of a `- ` item, or an item under a lone `-`
        return start

    def _line_end(self, index: int) -> int:
        if index > 0 and self.text[index - 1] == "\n":
            return index  # a block scalar ends with its line break
        end = self.text.find("\n", index)
        return len(self.text) if end < 0 else end + 1

    def result(self) -> str | None:
        pieces: list[str] = []
        done = 0
        for start, end, _, replacement in sorted(self.edits):
            if start < done:
                return None  # overlapping edits: not a change this writes
            pieces.append(self.text[done:start])
            pieces.append(replacement)
            done = end
        pieces.append(self.text[done:])
        return "".join(pieces)

    # -- new text, as the codec's writer would write it -------------------------------------------

    def _entry(self, key: Any, value: Any, column: int) -> str:
        written = written_scalar(key, key=True) if isinstance(key, str) else None
        if written is None:
            raise _Unsupported
        return " " * column + written + ":" + self._after_key(value, column)

    def _after_key(self, value: Any, column: int) -> str:
        indentation = self.indentation
        if isinstance(value, dict) and value:
            return self.newline + "".join(self._entry(k, v, column + indentation.mapping) for k, v in value.items())
        if isinstance(value, list) and value:
            dash, content = column + indentation.offset, column + indentation.sequence
            return self.newline + "".join(self._item(item, dash, content) for item in value)
        return " " + self._scalar(value) + self.newline

    def _item(self, value: Any, dash: int, content: int) -> str:
        lead = " " * dash + "-" + " " * (content - dash - 1)
        if isinstance(value, dict) and value:
            (key, first), *rest = value.items()
            return (lead + self._entry(key, first, content)[content:]
                    + "".join(self._entry(k, v, content) for k, v in rest))
        if isinstance(value, list) and value:
            raise _Unsupported  # `- - x`
        return lead + self._scalar(value) + self.newline

    def _scalar(self, value: Any) -> str:
        if isinstance(value, dict):
            return "{}"
        if isinstance(value, list):
            return "[]"
        written = written_scalar(value)
        if written is None:
            raise _Unsupported
        return written


def _scalar_spans(node: Any) -> list[tuple[int, int]]:
    if isinstance(node, ScalarNode):
        return [(node.start_mark.index, node.end_mark.index)]
    children = [part for pair in node.value for part in pair] if isinstance(node, MappingNode) else node.value
    return [span for child in children for span in _scalar_spans(child)]


def _block_collection(node: Any) -> bool:
    return isinstance(node, (MappingNode, SequenceNode)) and not node.flow_style


def _placeholder(node: Any) -> bool:
    """A value that holds nothing: an empty `{}` or `[]`, or null written plain."""
    if isinstance(node, ScalarNode):
        return not node.style and node.value in ("", "~", "null", "Null", "NULL")
    return bool(node.flow_style) and not node.value


def _end_of(node: Any, key: Any = None) -> int:
    """The index where the last value inside `node` ends (a block collection ends where its next
    sibling starts, past any comment lines; the last value's own end keeps those)."""
    while _block_collection(node) and node.value:
        if isinstance(node, MappingNode):
            key, node = node.value[-1]
        else:
            key, node = None, node.value[-1]
    end = node.end_mark.index
    return max(end, key.end_mark.index) if key is not None else end
