"""Reading text a person wrote, with every failure an error that says what to change: bytes decoded
as kubectl decodes files and stdin; one PyYAML loader for every reader of files the CLI did not write
(explain's inputs, the cluster profile, plan -f, kubeconfigs, the webhook's configuration), where a
value that cannot be read is an error at its line; and the one wording of a number too long to read.

PyYAML's constructors fail with bare Python errors, no YAMLError, when a value does not fit its
tag: ``!!int abc`` and ``!!float abc`` (ValueError), ``!!bool linux`` (KeyError), ``!!timestamp x``
(AttributeError).  So does every integer longer than CPython converts (sys.get_int_max_str_digits(),
4,300 digits: its guard against quadratic-time conversion), in PyYAML and json alike, with Python's
own advice ("use sys.set_int_max_str_digits()").  migrate's ruamel reader turns the same failures
into errors at their line (kubectl_gpu/manifests/yamlio.py); `load_all` and `load` do it for PyYAML:
the error is a ConstructorError (a YAMLError with the node's line), which each reader already
reports.

A leaf: PyYAML is imported on the first call, so a reader that never needs it never loads it.
Most hand-written files never need it: `read_as_yaml_1_1_reads_it` (below) reads them with yaml-rs
where PyYAML would read the same objects (explain's inputs, kubectl_gpu/explain/loading.py;
kubeconfigs, kubectl_gpu/k8s/kubeconfig_files.py).
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from typing import Any, Iterator

# Integers are 64-bit in every Kubernetes field, and quantities at most 2^63-1
# (k8s.io/apimachinery pkg/api/resource/quantity.go): 19 digits.
_TOO_LONG = ("a number of {digits} digits, which no Kubernetes field holds (integers are 64-bit: 19 digits "
             "at most); shorten it, or quote it if it is text")
_TAG_PREFIX = "tag:yaml.org,2002:"


# kubectl reads files and stdin through unicode.BOMOverride(unicode.UTF8.NewDecoder())
# (k8s.io/cli-runtime/pkg/resource/visitor.go): a UTF-8 byte order mark is dropped, a UTF-16 one
# says the rest is UTF-16 in that byte order.  The encoding is kept to write a file back in it.
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


class NotText(ValueError):
    """Bytes that are not text in the encoding kubectl would read them in; the message says so."""


def decode(data: bytes, display: str) -> tuple[str, str]:
    """The text of ``data`` as kubectl reads it, and its encoding ("utf-8", or "utf-8-sig",
    "utf-16-le", "utf-16-be" when it starts with a byte order mark).  NotText names ``display``."""
    encoding, mark = "utf-8", b""
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding, mark = name, bom
            break
    try:
        return data[len(mark):].decode(encoding.removesuffix("-sig")), encoding
    except UnicodeDecodeError as err:
        raise NotText(f"{display}: not {encoding.removesuffix('-sig').upper()} text ({err.reason} at byte "
                      f"{err.start + len(mark)}); save it as UTF-8") from None


def encode(text: str, encoding: str) -> bytes:
    """``text`` as the file it was read from was encoded, its byte order mark included."""
    mark = dict((name, bom) for bom, name in _BOMS).get(encoding, b"")
    return mark + text.encode(encoding.removesuffix("-sig"))


def number_too_long(text: str) -> str | None:
    """What to change when ``text`` (a scalar) is an integer too long for Python to read, else None."""
    limit = sys.get_int_max_str_digits()
    digits = sum(character.isdigit() for character in text)
    return _TOO_LONG.format(digits=digits) if limit and digits > limit else None


def number_too_long_in(text: str) -> tuple[int, str] | None:
    """The 1-based line of the first integer in ``text`` too long for Python to read (JSON's and
    YAML's readers fail on it without a position), and what to change; None when there is none."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return None
    for match in re.finditer(r"[0-9][0-9_]{%d,}" % limit, text):
        problem = number_too_long(match.group())
        if problem:
            return text.count("\n", 0, match.start()) + 1, problem
    return None


def json_problem(error: ValueError, text: str | bytes) -> Any:
    """What a JSON reader's ValueError about ``text`` means to a person: its own error, except for an
    integer too long to read, where Python's advice (sys.set_int_max_str_digits) becomes the line
    and what to change.  One wording for every JSON reader (migrate, NVML recordings, the webhook)."""
    if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
        return error
    found = number_too_long_in(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)
    return f"line {found[0]}: {found[1]}" if found else error


def load_all(text: str, *, libyaml: bool = False) -> Iterator[Any]:
    """The documents of ``text``, as yaml.safe_load_all reads them (with libyaml's parser, when PyYAML
    has it and ``libyaml``: several times faster, but it refuses a lone surrogate escape such as
    "\\ud800" that PyYAML's own reads); a value that does not fit its tag is a yaml.YAMLError at its line."""
    import yaml

    return yaml.load_all(text, Loader=_loader(libyaml))


def load(stream: Any) -> Any:
    """The one document of ``stream`` (text or a file), as yaml.safe_load reads it; errors as load_all."""
    import yaml

    return yaml.load(stream, Loader=_loader(False))


_LOADERS: dict[bool, Any] = {}


def _loader(libyaml: bool) -> Any:
    loader = _LOADERS.get(libyaml)
    if loader is None:
        import yaml
        from yaml.constructor import ConstructorError

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader) if libyaml else yaml.SafeLoader

        class CheckedSafeLoader(base):  # type: ignore[misc, valid-type]
            """The safe loader, with a value its tag's constructor cannot build an error at its node."""

            def construct_object(self, node: Any, deep: bool = False) -> Any:
                try:
                    return super().construct_object(node, deep=deep)
                except yaml.YAMLError:
                    raise
                except (ValueError, TypeError, KeyError, AttributeError, IndexError):
                    raise ConstructorError(None, None, _does_not_fit(node), node.start_mark) from None

        loader = _LOADERS[libyaml] = CheckedSafeLoader
    return loader


def _does_not_fit(node: Any) -> str:
    tag = str(node.tag).replace(_TAG_PREFIX, "!!")
    if isinstance(node.value, str):
        if tag == "!!int":
            too_long = number_too_long(node.value)
            if too_long:
                return too_long
        return f"{tag} cannot hold {_clipped(node.value)!r}; remove the tag or fix the value"
    return f"{tag} cannot hold this {node.id}; remove the tag or fix the value"


def _clipped(value: str, most: int = 60) -> str:
    return value if len(value) <= most else f"{value[:most]}..."


# -- hand-written YAML through yaml-rs, where YAML 1.1 reads the same ---------------------------------
#
# A claim, a DeviceClass or a kubeconfig is small, but reading it with PyYAML costs PyYAML's import
# (~90 M instructions: a fifth of explain's start-up, ~12 ms of describe's; most of it one regex
# compiled in yaml.reader).  yaml-rs
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
_LEFT_TO_PYYAML = r"""
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
"""

# The implicit types YAML 1.1 gives a plain scalar (PyYAML's resolver: bool, float, int, merge, null,
# timestamp, value).  A string yaml-rs read that matches one of them may have been plain, and PyYAML
# would have read something else.
_YAML_1_1_TYPED = r"""^(?:
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
)$"""


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The two patterns above, compiled when text is first read, not by every command loading this leaf."""
    return re.compile(_LEFT_TO_PYYAML, re.X | re.M), re.compile(_YAML_1_1_TYPED, re.X)


UNREAD: Any = object()  # yaml-rs did not read the text (missing, failing, or not trusted to)


def read_with_yaml_rs(text: str) -> Any:
    """The one document yaml-rs reads in ``text``, or UNREAD: PyYAML then reads it again and words
    the error.  Timestamps stay text: yaml-rs would make datetimes of them, quoted ones included."""
    try:
        import yaml_rs
    except ImportError:  # pragma: no cover - an optional accelerator; PyYAML reads everything too
        return UNREAD
    try:
        return yaml_rs.loads(text, parse_datetime=False)
    except Exception:  # noqa: BLE001 - yaml-rs errors are PyYAML's to word
        return UNREAD


def read_as_yaml_1_1_reads_it(text: str) -> Any:
    """The one document of hand-written YAML as yaml-rs reads it, when PyYAML would read the same
    objects; UNREAD when PyYAML must read it."""
    if _patterns()[0].search(text):
        return UNREAD
    document = read_with_yaml_rs(text)
    if document is UNREAD or not _types_agree(document):
        return UNREAD
    return document


def _types_agree(value: Any) -> bool:
    """Only string keys, no string YAML 1.1 would have typed, and no infinity or NaN (Rust reads
    "inf" and "nan" as numbers), anywhere in ``value``."""
    typed = _patterns()[1]
    stack = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            if typed.match(item):
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
