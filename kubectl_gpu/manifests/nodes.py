"""Conversions between ruamel's round-trip nodes and plain JSON-like Python values."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarint import ScalarInt
from ruamel.yaml.scalarstring import SingleQuotedScalarString

# Kubernetes reads manifests with a YAML 1.1 resolver (sigs.k8s.io/yaml): these plain
# scalars are booleans there, and a leading zero makes an integer octal (`defaultMode: 0755`).
YAML11_TRUE = frozenset("y Y yes Yes YES on On ON".split())
YAML11_FALSE = frozenset("n N no No NO off Off OFF".split())
_YAML11_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")


def to_plain(node: Any) -> Any:
    """A plain dict/list/str/int/float/bool/None copy of a round-trip tree, with the values
    Kubernetes would read from the same text.  The tree must come from a loader that
    preserves quotes (YamlCodec): only an unquoted `yes` is a boolean."""
    if isinstance(node, Mapping):
        return {_plain_key(key): to_plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [to_plain(value) for value in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, ScalarBoolean):
        return bool(node)
    if isinstance(node, int):
        return _plain_int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        if type(node) is str:  # a plain (unquoted) scalar
            if node in YAML11_TRUE:
                return True
            if node in YAML11_FALSE:
                return False
        return str(node)
    if isinstance(node, datetime.datetime):
        return node.isoformat().replace("+00:00", "Z")
    if isinstance(node, datetime.date):
        return node.isoformat()
    return node


def _plain_key(key: Any) -> Any:
    return key if type(key) is str else str(to_plain(key)) if isinstance(key, (Mapping, list)) else to_plain(key)


def _plain_int(node: int) -> int:
    width = getattr(node, "_width", None)
    if type(node) is ScalarInt and width and width > len(str(int(node))):
        digits = str(int(node)).rjust(width, "0")
        if all(d in "01234567" for d in digits):
            return int(digits, 8)
    return int(node)


def to_round_trip(value: Any) -> Any:
    """Turn a plain value a patch brings in into round-trip nodes (block style)."""
    if isinstance(value, Mapping):
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[key] = to_round_trip(item)
        return mapping
    if isinstance(value, list):
        return CommentedSeq(to_round_trip(item) for item in value)
    if type(value) is str and reads_otherwise_in_yaml11(value):
        return SingleQuotedScalarString(value)
    return value


def reads_otherwise_in_yaml11(text: str) -> bool:
    """ruamel writes YAML 1.2, where a plain `yes` or `0755` is text; Kubernetes would read it as a
    boolean or an octal number, so such text is written quoted."""
    return text in YAML11_TRUE or text in YAML11_FALSE or bool(_YAML11_OCTAL.match(text))
