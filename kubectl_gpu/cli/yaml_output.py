"""Plain data (maps, lists, scalars) as YAML text: every command's -o yaml, and the files
`migrate --from-cluster` and `migrate --device-classes` write.

The text is PyYAML's ``safe_dump`` (keys in the data's order), which quotes what YAML 1.1 readers
such as kubectl's go-yaml would take for something else ("yes", "0123").  libyaml's emitter
(CSafeDumper) writes it about 3x faster: `explain -o yaml` over 8,000 devices spent 5.7 s in the
pure-Python emitter and spends 1.7 s in libyaml's.  Both emitters ask PyYAML's resolver which strings
a YAML 1.1 reader would misread and quote those, so both write what reads back as the same data; for data made
of printable ASCII, as Kubernetes objects and this tool's reports are, they write the same text
character for character.  Elsewhere they differ in form only: where a long double-quoted string of
escapes folds, and an empty key or one of 128 characters or more written as a "? key" entry.

Two cases go through the pure-Python emitter: a lone surrogate (a "\\ud800" escape read from YAML
or JSON input), which libyaml cannot encode and the pure-Python emitter writes as that escape; and
a document that is a bare scalar, which the pure-Python emitter ends with "...".
tests/test_yaml_output.py holds all of this.
"""

from __future__ import annotations

from typing import Any, Iterable

import yaml

_FAST_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when PyYAML was built with it


def dump(data: Any) -> str:
    """One document, as ``yaml.safe_dump(data, sort_keys=False)`` writes it."""
    return dump_all([data])


def dump_all(documents: Iterable[Any]) -> str:
    """Documents separated by ``---``, as ``yaml.safe_dump_all(documents, sort_keys=False)`` writes them."""
    documents = list(documents)
    # A bare scalar document is where the two differ: the pure-Python emitter ends it with "...".
    if all(isinstance(document, (dict, list)) for document in documents):
        try:
            return yaml.dump_all(documents, Dumper=_FAST_DUMPER, sort_keys=False)
        except UnicodeEncodeError:
            pass
    return yaml.dump_all(documents, Dumper=yaml.SafeDumper, sort_keys=False)
