"""Read a plain block-style YAML document with libyaml, keeping where each value stands in the text.

ruamel's round-trip reader is what migrate rewrites with, and it is slow: about 30 ms for a
40-line Deployment, where libyaml (C) composes the same text in a fraction of a millisecond.
A document that only needs a few keys added and removed is therefore read here and rewritten
as edits of its own text (text_edit.py); every other one is still read by ruamel.

What this builds must be exactly the value `nodes.to_plain` gives of ruamel's tree for the same
text, so only documents where the two agree by construction are taken.  Plain scalars are
resolved by ruamel's own YAML 1.2 resolver (the one the round-trip reader uses) and then read as
to_plain reads them (`yes` unquoted is true, as Kubernetes reads it); a document is declined
(None) when it holds anything whose reading would need more than that: a tag, an alias, a merge
key, a duplicate or non-string key, a plain number that is not a plain decimal (`0755`, `1e3`,
`0x1f`), a timestamp, or nesting deeper than MAX_DEPTH.  Declined documents cost one libyaml pass.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from yaml import MappingNode, ScalarNode, SequenceNode, YAMLError

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: every document goes through ruamel, as before
    CParser = None

from .nodes import YAML11_FALSE, YAML11_TRUE
from .yamlio import MAX_DEPTH, RESOLVER, STR_TAG, resolve_plain


class QuotedText(str):
    """A string written quoted or as a block scalar: text whatever it reads like (to_plain keeps
    `'yes'` a string, where a plain `yes` is a boolean)."""

    __slots__ = ()


@dataclass(frozen=True)
class FastRead:
    tree: Any  # the plain value (dict/list/str/int/float/bool/None; quoted strings are QuotedText)
    root: Any  # libyaml's node for it: positions (character offsets) of every value
    # id() of each dict/list in `tree` -> (it, its node): the object itself is kept, so that its id
    # cannot be reused by a dict made after it was dropped from a patched copy.
    nodes: dict[int, tuple[Any, Any]]

    def twin(self) -> tuple[Any, dict[int, tuple[Any, Any]]]:
        """A copy of `tree` to patch, and the map of its dicts and lists to their nodes."""
        nodes: dict[int, tuple[Any, Any]] = {}
        return _twin(self.tree, self.nodes, nodes), nodes


class _Declined(Exception):
    """The document holds something this reader does not read exactly as ruamel + to_plain."""


if CParser is not None:
    class _Composer(CParser):
        """libyaml's composer, with tags left unresolved: an untagged node gets tag None, so an
        explicit tag is still seen (and the document declined)."""

        def resolve(self, kind: Any, value: Any, implicit: Any) -> None:  # noqa: ARG002 - libyaml's hook
            return None

        def descend_resolver(self, *_: Any) -> None:
            return None

        def ascend_resolver(self, *_: Any) -> None:
            return None

    COMPOSER: type | None = _Composer
else:
    COMPOSER = None


# A plain scalar starting with anything else is a string in YAML 1.2 (the resolver's own index).
_MAY_RESOLVE = frozenset(ch for ch in RESOLVER.versioned_resolver if ch is not None)
_NULL, _BOOL, _INT, _FLOAT = (f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float"))
# Numbers ruamel reads as to_plain reads int()/float() of the text; others (a leading zero, which
# to_plain reads as octal; `+1`, `1_000`, `1e3`, `.5`) are declined.
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_SIMPLE_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+\Z")


def read_fast(text: str) -> FastRead | None:
    """The document in `text` (one document, no directives) read as described above, or None."""
    root = compose(text)
    if root is None:
        return None
    nodes: dict[int, tuple[Any, Any]] = {}
    try:
        tree = _value(root, nodes, set(), 1)
    except _Declined:
        return None
    return FastRead(tree, root, nodes)


def compose(text: str) -> Any:
    """libyaml's node tree of the one document in `text` (tags left unresolved); None where there is
    no libyaml, no document, or libyaml refuses it (ruamel then reads it and says what is wrong)."""
    if COMPOSER is None:
        return None
    composer = COMPOSER(text)
    try:
        return composer.get_single_node()
    except (YAMLError, RecursionError):
        return None
    finally:
        composer.dispose()


def scalar_value(node: Any) -> Any:
    """What a scalar node reads as (declining what read_fast declines)."""
    if node.tag is not None:
        raise _Declined
    value = node.value
    if node.style:
        return QuotedText(value)
    tag = resolve_plain(value) if not value or value[0] in _MAY_RESOLVE else STR_TAG
    if tag == STR_TAG:
        return True if value in YAML11_TRUE else False if value in YAML11_FALSE else value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return value.lower() == "true"
    try:
        if tag == _INT and _DECIMAL.match(value):
            return int(value)
        if tag == _FLOAT and _SIMPLE_FLOAT.match(value) and not math.isinf(float(value)):
            return float(value)
    except ValueError:
        pass  # longer than Python reads an integer: ruamel's reader says what to change
    raise _Declined


def node_value(node: Any) -> Any:
    """What a node read by read_fast reads as (the value read_fast built for it)."""
    return _value(node, {}, set(), 1)


def _key(node: Any) -> str:
    if not isinstance(node, ScalarNode) or node.tag is not None:
        raise _Declined
    value = node.value
    if not node.style and (not value or value[0] in _MAY_RESOLVE):
        if resolve_plain(value) != STR_TAG:
            raise _Declined  # `true:`, `1:`, `<<:` (a merge), `:` alone
    return value


def _value(node: Any, nodes: dict[int, tuple[Any, Any]], seen: set[int], depth: int) -> Any:
    if id(node) in seen:
        raise _Declined  # an alias: one node in two places
    seen.add(id(node))
    if isinstance(node, ScalarNode):
        return scalar_value(node)
    if node.tag is not None or depth > MAX_DEPTH:
        raise _Declined
    if isinstance(node, MappingNode):
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _key(key_node)
            if key in mapping:
                raise _Declined  # ruamel's reader reports duplicates
            mapping[key] = _value(value_node, nodes, seen, depth + 1)
        nodes[id(mapping)] = (mapping, node)
        return mapping
    if isinstance(node, SequenceNode):
        items = [_value(item, nodes, seen, depth + 1) for item in node.value]
        nodes[id(items)] = (items, node)
        return items
    raise _Declined


def _twin(value: Any, nodes: dict[int, tuple[Any, Any]], out: dict[int, tuple[Any, Any]]) -> Any:
    if isinstance(value, dict):
        copy = {key: _twin(item, nodes, out) for key, item in value.items()}
    elif isinstance(value, list):
        copy = [_twin(item, nodes, out) for item in value]
    else:
        return value
    out[id(copy)] = (copy, nodes[id(value)][1])
    return copy
