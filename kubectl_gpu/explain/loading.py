"""Read the objects explain works on from text: JSON, and YAML through a compiled parser.

`kubectl get resourceslices -o yaml` on 1,000 nodes (8,000 devices) is 2.4-4.4 MB.  Measured on
this machine (CPU seconds): PyYAML's pure-Python loader ~12 s, its libyaml loader (CSafeLoader)
~1.2-3.6 s, the Rust-backed ``yaml-rs`` ~0.12 s, JSON ~0.05-0.1 s.  Only the last two
fit explain's 0.5 s budget, so:

* text that starts like JSON is read as JSON;
* a list as `kubectl get -o yaml` prints it (one document, ``apiVersion: v1`` then ``items:``,
  ending with ``kind: List`` and ``metadata: {resourceVersion: ""}``) is read by ``yaml-rs``.
  yaml-rs reads YAML 1.2, Kubernetes' sigs.k8s.io/yaml and PyYAML YAML 1.1; they differ only on plain scalars such as yes/on/010/1e3,
  which kubectl always quotes (it writes through go-yaml, which quotes every string YAML 1.1
  would read as something else), so for kubectl's output both read the same objects.  yaml-rs
  reads timestamps as datetimes by default, quoted ones too ("2026-11-02T09:14:07Z", a string to
  the API server and to every YAML reader); that is turned off;
* other YAML in one document (a hand-written claim or DeviceClass) is read by yaml-rs too, when
  nothing in it can mean something else in YAML 1.1 (see _as_yaml_1_1_reads_it below): PyYAML's
  import alone is ~90 M instructions, a fifth of explain's start-up;
* anything else (YAML 1.1 readings, several documents, yaml-rs missing or failing) goes to PyYAML
  with libyaml when available, which also words the errors (line and column).

Each YAML reader is imported when text needs it (PyYAML ~20 ms, yaml-rs ~2 ms of a run's start):
JSON inputs load neither.

Measured and not taken (CPU, 1,000 slices, loaded machine): orjson, which the webhook uses, read
the 10 MB JSON list no faster than the standard library (0.05-0.09 s each) and takes 30-35 ms to
import; for the 5.6 MB YAML list, fastyaml-rs took 0.42 s and libfyaml 0.38 s (parse and convert)
against yaml-rs's 0.22-0.30 s.  Measured again on 2026-11-23 (same list, CPU, one run): yaml-rs
0.30 s, fastyaml 0.34 s, pyyaml-rs 0.51 s, ryaml 0.82 s.  rapidyaml, parsing and emitting JSON for
``json.loads``, is the only one that does less work (1,232 M instructions against yaml-rs's 1,418 M,
a fresh process reading the file, its 33 ms import included), but it reads plain ``~``, ``True``,
``0o17`` and ``.inf`` as strings where YAML 1.2 (and yaml-rs) read null, a bool, 15 and infinity:
a hand-edited list would silently mean something else, for a 13% saving.
"""

from __future__ import annotations

from typing import Any

import json
import math
import re


_KUBECTL_TRAILERS = ('kind: List\nmetadata:\n  resourceVersion: ""\n', "kind: List\nmetadata:\n  resourceVersion: ''\n")


def _kubectl_list(text: str) -> bool:
    """``kubectl get ... -o yaml`` output: one v1 List document, in kubectl's (sorted) key order,
    from its first line to its ``metadata: {resourceVersion: ""}`` trailer."""
    return text.startswith("apiVersion: v1\nitems:\n") and text.endswith(_KUBECTL_TRAILERS) and "\n---" not in text


class UnreadableInput(ValueError):
    """The text is neither JSON nor YAML; the message says where and why."""


def load_documents(text: str, source: str = "input") -> list[Any]:
    """The documents in ``text`` (empty documents dropped); a top-level JSON array is its items."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except ValueError:
            pass  # YAML is a superset of JSON's look: let the YAML loader decide (and report)
        else:
            documents = value if isinstance(value, list) else [value]
            return [doc for doc in documents if doc is not None]
    if _kubectl_list(text):
        document = _read_with_yaml_rs(text)  # kubectl quotes every string YAML 1.1 would type
    else:
        document = _as_yaml_1_1_reads_it(text)
    if document is not _UNREAD:
        return [] if document is None else [document]
    import yaml

    from kubectl_gpu.input_text import load_all

    try:
        return [doc for doc in load_all(text, libyaml=True) if doc is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise UnreadableInput(f"{source} is not valid YAML/JSON{where}: {getattr(err, 'problem', None) or err}") from None


# -- hand-written YAML through yaml-rs, where YAML 1.1 reads the same ---------------------------------
#
# A claim or DeviceClass file is small, but reading it with PyYAML costs PyYAML's import (~90 M
# instructions, a fifth of explain's start-up, most of it one regex compiled in yaml.reader).  yaml-rs
# reads YAML 1.2; PyYAML, like kubectl's go-yaml, YAML 1.1.  The two differ only in how they type
# plain scalars, so yaml-rs's reading is taken when nothing in the text or in what it read can be
# typed differently, and PyYAML reads everything else (and words every error).
# tests/test_explain_loading.py holds the two to the same objects over generated files.

# What this quick reading leaves to PyYAML, found in the text: characters other than printable ASCII
# and newlines (tabs, CRs, BOMs); document markers and directives; tags, anchors, aliases and reserved
# indicators where a node can start, and block-scalar indicators inside flow collections (PyYAML
# refuses what YAML 1.2 reads there as plain text); merge keys; numerals YAML 1.1 and 1.2 (or Rust's number parsing) read as different
# numbers: 010 and 08 (octal or a string in 1.1), 0o17, 0X1F and 0B1 (strings in 1.1), 1e3 and
# 1.5e3 (floats in 1.2, strings in 1.1), +.5 and -.5 (strings in 1.1), integers beyond 64 bits, and numerals with
# underscores (yaml-rs reads _0 as 0 and 1_0 as 10).  It may find them inside quoted text too:
# that only costs the quick reading.
_LEFT_TO_PYYAML = re.compile(r"""
      [^\n\x20-\x7e]
    | ^(?:---|\.\.\.|%)
    | (?:^[ ]*|[:?-][ ]+|[\[{,][ ]*)[!&*@`]
    | [\[{,][ ]*[|>%]
    | <<
    | (?<![\w.+-])[-+]?0(?:[0-9_]|[oOXB])
    | (?<![\w.+-])[-+]?(?:[0-9][0-9_]*\.?[0-9_]*|\.[0-9]+)[eE]
    | (?<![\w.])[-+]\.[0-9]
    | [0-9]{19}
    | (?<![A-Za-z0-9_.:+-])[-+.0-9:_]*_[-+.0-9:_]*(?![A-Za-z0-9_.:+-])
""", re.X | re.M)

# The implicit types YAML 1.1 gives a plain scalar (PyYAML's resolver: bool, float, int, merge, null,
# timestamp, value).  A string yaml-rs read that matches one of them may have been plain, and PyYAML
# would have read something else.
_YAML_1_1_TYPED = re.compile(r"""^(?:
      yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    | [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    | \.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    | [-+]?\.(?:inf|Inf|INF)
    | \.(?:nan|NaN|NAN)
    | [-+]?0b[0-1_]+
    | [-+]?0[0-7_]+
    | [-+]?(?:0|[1-9][0-9_]*)
    | [-+]?0x[0-9a-fA-F_]+
    | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    | <<
    | ~|null|Null|NULL|
    | [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    | [0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
      (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
    | =
)$""", re.X)


_UNREAD: Any = object()  # yaml-rs did not read the text (missing, failing, or not trusted to)


def _read_with_yaml_rs(text: str) -> Any:
    """The one document yaml-rs reads in ``text``, or _UNREAD: PyYAML then reads it again and words
    the error.  Timestamps stay text: yaml-rs would make datetimes of them, quoted ones included."""
    try:
        import yaml_rs
    except ImportError:  # pragma: no cover - an optional accelerator; PyYAML reads everything too
        return _UNREAD
    try:
        return yaml_rs.loads(text, parse_datetime=False)
    except Exception:  # noqa: BLE001 - yaml-rs errors are PyYAML's to word
        return _UNREAD


def _as_yaml_1_1_reads_it(text: str) -> Any:
    """The one document of hand-written YAML as yaml-rs reads it, when PyYAML would read the same
    objects; _UNREAD when PyYAML must read it."""
    if _LEFT_TO_PYYAML.search(text):
        return _UNREAD
    document = _read_with_yaml_rs(text)
    if document is _UNREAD or not _types_agree(document):
        return _UNREAD
    return document


def _types_agree(value: Any) -> bool:
    """Only string keys, no string YAML 1.1 would have typed, and no infinity or NaN (Rust reads
    "inf" and "nan" as numbers), anywhere in ``value``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            if _YAML_1_1_TYPED.match(item):
                return False
        elif item.__class__ is dict:
            if not all(key.__class__ is str for key in item):
                return False  # a null or number key: YAML 1.2 allows an empty key, PyYAML refuses it
            stack.extend(item)
            stack.extend(item.values())
        elif item.__class__ is list:
            stack.extend(item)
        elif item.__class__ is float:
            if not math.isfinite(item):
                return False
        elif item is not None and item.__class__ not in (int, bool):
            return False  # anything else (a date, bytes) is PyYAML's to read
    return True
