"""The small AST of a CEL expression that the checker, the cost estimate and the fast path share
(kubectl_gpu/cel/parser.py builds it from cel-python's parse tree, kubectl_gpu/cel/quick_parser.py
from the text of everyday selectors).

Plain frozen data with no reference to lark or cel-python, so an expression parsed once can be
kept as JSON (``to_json``/``from_json``) and compiled again without loading the parser: see
kubectl_gpu/cel/parser_hook.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, Union

Position = tuple[int, int]

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


@dataclass(frozen=True)
class Lit:
    """A literal: an int, uint, double, string, bytes, bool or null."""

    value: Any
    type: str  # int | uint | double | string | bytes | bool | null_type
    pos: Position


@dataclass(frozen=True)
class Ident:
    """A bare name: ``device``, or a macro's or ``cel.bind``'s variable."""

    name: str
    pos: Position


@dataclass(frozen=True)
class Select:
    """Field selection ``target.field``."""

    target: "Node"
    field: str
    pos: Position


@dataclass(frozen=True)
class Index:
    """Indexing ``target[key]`` into a map or a list."""

    target: "Node"
    key: "Node"
    pos: Position


@dataclass(frozen=True)
class Call:
    """An operator (``_==_``, ``_&&_``, ``!_``, ``@in`` ...), a function or a method call."""

    name: str
    target: Union["Node", None]  # receiver of a method call
    args: tuple["Node", ...]
    pos: Position


@dataclass(frozen=True)
class ListLit:
    """A list literal ``[a, b, ...]``."""

    items: tuple["Node", ...]
    pos: Position


@dataclass(frozen=True)
class MapLit:
    """A map literal ``{key: value, ...}``."""

    entries: tuple[tuple["Node", "Node"], ...]
    pos: Position


@dataclass(frozen=True)
class Macro:
    """``target.all(x, body)`` and friends; ``map`` may carry a filter (``map(x, cond, body)``)."""

    name: str
    target: "Node"
    var: str
    args: tuple["Node", ...]
    pos: Position


@dataclass(frozen=True)
class Bind:
    """``cel.bind(var, init, body)`` (cel-go ext.Bindings, which Kubernetes' DRA environment
    enables): ``body`` evaluated with ``var`` bound to the value of ``init``."""

    var: str
    init: "Node"
    body: "Node"
    pos: Position


Node = Union[Lit, Ident, Select, Index, Call, ListLit, MapLit, Macro, Bind]


def position_at(expression: str, offset: int) -> Position:
    """(line, column), both from 1, of ``expression[offset]``; lines end at ``\n`` only, as lark counts."""
    before = expression[:offset]
    return (before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


def operator_position(expression: str, left_end: int) -> Position:
    """Where both parsers place a binary operator (cel-go points at the operator): the first
    character at or after the end of its left operand that is neither whitespace nor ``)``."""
    offset = left_end
    while offset < len(expression) and (expression[offset].isspace() or expression[offset] == ")"):
        offset += 1
    return position_at(expression, offset)

_NODES: dict[str, type] = {cls.__name__: cls for cls in (Lit, Ident, Select, Index, Call, ListLit, MapLit, Macro, Bind)}
_FIELDS: dict[type, tuple[str, ...]] = {cls: tuple(f.name for f in fields(cls)) for cls in _NODES.values()}


def to_json(node: Node) -> str:
    """The AST as JSON text that :func:`from_json` reads back equal: a node is ``{"Class": [its
    fields in order]}``, a tuple a list, bytes ``{"bytes": "<hex>"}``; literals stay JSON values
    (an int, a float, a bool and a string are told apart by JSON itself)."""
    return json.dumps(_plain(node), separators=(",", ":"))


def _plain(value: Any) -> Any:
    cls = value.__class__
    if cls in _FIELDS:
        return {cls.__name__: [_plain(getattr(value, name)) for name in _FIELDS[cls]]}
    if cls is tuple:
        return [_plain(item) for item in value]
    if cls is bytes:
        return {"bytes": value.hex()}
    if value is None or cls in (str, int, float, bool):
        return value
    raise TypeError(f"no JSON form for {cls.__name__} in a CEL AST")


def from_json(text: str) -> Node | None:
    """The AST :func:`to_json` wrote, or None when ``text`` is not one (damaged or foreign: the
    caller parses the expression again)."""
    try:
        node = _node(json.loads(text))
    except (ValueError, TypeError, RecursionError):
        return None
    return node if node.__class__ in _FIELDS else None


def _node(value: Any) -> Any:
    cls = value.__class__
    if cls is list:
        return tuple(_node(item) for item in value)
    if cls is dict:
        if len(value) != 1:
            raise ValueError("not an AST value")
        ((name, body),) = value.items()
        if name == "bytes":
            return bytes.fromhex(body)
        node_class = _NODES.get(name)
        if node_class is None or body.__class__ is not list or len(body) != len(_FIELDS[node_class]):
            raise ValueError(f"not an AST node: {name}")
        return node_class(*(_node(item) for item in body))
    return value
