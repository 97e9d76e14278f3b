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
  nothing in it can mean something else in YAML 1.1 (kubectl_gpu/input_text.py's
  read_as_yaml_1_1_reads_it): PyYAML's import alone is ~90 M instructions, a fifth of explain's start-up;
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

from kubectl_gpu.input_text import UNREAD, read_as_yaml_1_1_reads_it, read_with_yaml_rs


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
        document = read_with_yaml_rs(text)  # kubectl quotes every string YAML 1.1 would type
    else:
        document = read_as_yaml_1_1_reads_it(text)
    if document is not UNREAD:
        return [] if document is None else [document]
    import yaml

    from kubectl_gpu.input_text import load_all

    try:
        return [doc for doc in load_all(text, libyaml=True) if doc is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise UnreadableInput(f"{source} is not valid YAML/JSON{where}: {getattr(err, 'problem', None) or err}") from None
