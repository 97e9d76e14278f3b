"""Which YAML documents migrate writes back without reading them with ruamel.

A GitOps repository is mostly Services, ConfigMaps and Deployments that ask for no GPU; reading
each with ruamel's round-trip reader only to write its text back unchanged is most of what
migrating such a repository costs (issue 29: 10,000 documents, 30% with GPUs).  A document
whose text names nothing migrate reacts to is therefore written back as the bytes it was,
counted as one object, and only checked by libyaml's C composer (fast_read.compose, about a
hundredth of ruamel's time) for what migrate reports of any document: a syntax error, a
duplicate key, nesting too deep, a value its tag cannot hold.  Anything that composer refuses
or that this module cannot vouch for goes to ruamel as before, which words the report: the
shortcut never changes what migrate writes or says, only how fast.

Sent to ruamel (every test is conservative: a false positive only costs a parse):
- a text of `kubectl_gpu.core.legacy_texts()` (every legacy or untranslated resource name and
  GPU-only annotation key the core knows), matched lower-cased, as the core's NVIDIA check is;
- a kind whose GPU count is read by kind (locate.COUNT_FIELD_KINDS), and a DRA kind a cluster
  profile may have rewritten to the version the cluster serves (dra/conversion.py CONVERTED_KINDS);
- a backslash (a double-quoted escape such as `"nvidia.com\\x2fgpu"` can spell any name), a `!`
  (a tag, which ruamel may refuse for its value), `List` (a `kind: List` holds several objects),
  and directives (`%YAML 1.1` changes what the text means);
- a document that is not one block or flow mapping, whose keys are not all plain words or
  quoted strings, told apart (YAML 1.1 and 1.2 read `yes`, `1` or `<<` differently), that
  nests deeper than half of yamlio.MAX_DEPTH or shares a node (an alias), or that holds a plain
  scalar that reads as a number or date and is not a short decimal or quantity (ruamel refuses
  `2024-13-45` and numbers longer than Python reads).
"""

from __future__ import annotations

import re
from typing import Any

from kubectl_gpu.core import legacy_texts
from kubectl_gpu.dra.conversion import CONVERTED_KINDS

from .fast_read import compose
from .locate import COUNT_FIELD_KINDS
from .stream import Chunk
from .yamlio import MAX_DEPTH

_TEXTS = tuple(sorted(legacy_texts()))
_CASED_TEXTS = (*COUNT_FIELD_KINDS, *CONVERTED_KINDS, "List", "\\", "!")
_CONTENT_LINE = re.compile(r"^(?![ \t]*(?:#|\r?$))", re.MULTILINE)
_WORD_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_NOT_TEXT_WORDS = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})
_NUMBER_LIKE = re.compile(r"[-+.]?[0-9]")  # where YAML's int, float and timestamp forms start
_SHORT_NUMBER = re.compile(r"[-+]?[0-9]{1,30}(?:\.[0-9]{1,30})?(?:[eE][-+]?[0-9]{1,3}|[A-Za-z]{1,3})?")


class PassThrough:
    """The test of one migrate run: `run(chunk)` is True when `chunk` can be written back without
    ruamel, as its text names nothing migrate rewrites or reports and libyaml reads it as one
    plain mapping (or it holds nothing).  libyaml's composer is migrate's own reader of the
    documents it rewrites as text (fast_read.py), so it is loaded anyway."""

    def __call__(self, chunk: Chunk) -> bool:
        body = chunk.body
        if chunk.directives or any(text in body for text in _CASED_TEXTS):
            return False
        lowered = body.lower()
        if any(text in lowered for text in _TEXTS):
            return False
        if _CONTENT_LINE.search(body) is None:
            return True  # blank or comments only: ruamel reads nothing either
        return _reads_plainly(body)


def objects_in(chunk: Chunk) -> int:
    """Objects a chunk that passes through holds: one mapping, or none when it is blank."""
    return 0 if _CONTENT_LINE.search(chunk.body) is None else 1


def _reads_plainly(body: str) -> bool:
    root = compose(body)  # None: no libyaml, or it refuses the text (ruamel's to word)
    if type(root).__name__ != "MappingNode":
        return False
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH // 2 or id(node) in seen:
            return False
        seen.add(id(node))
        kind = node.id
        if kind == "mapping":
            keys: set[str] = set()
            for key, value in node.value:
                if key.id != "scalar" or not _is_text_key(key) or key.value in keys:
                    return False
                keys.add(key.value)
                stack.append((value, depth + 1))
        elif kind == "sequence":
            stack.extend((item, depth + 1) for item in node.value)
        elif not node.style and _NUMBER_LIKE.match(node.value) and not _SHORT_NUMBER.fullmatch(node.value):
            return False
    return True


def _is_text_key(key: Any) -> bool:
    """A key that is a string under YAML 1.1 and 1.2 alike, so equal texts are equal keys.  (A
    plain scalar's style is None in PyYAML's Python composer, "" in libyaml's.)"""
    if key.style in ("'", '"'):
        return True
    return not key.style and bool(_WORD_KEY.fullmatch(key.value)) and key.value.lower() not in _NOT_TEXT_WORDS
