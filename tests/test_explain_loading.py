"""explain reads its input files fast and exactly: JSON, `kubectl get -o yaml`
lists through the compiled YAML parser, everything else through PyYAML (YAML 1.1, as Kubernetes'
sigs.k8s.io/yaml reads manifests), and bad input gets a message with the place to fix."""

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_gpu.explain.loading import UnreadableInput, load_documents

SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-a"},
         "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-a", "pool": {"name": "node-a"},
                  "devices": [{"name": "gpu-0", "attributes": {"productName": {"string": "on"},
                                                               "index": {"string": "010"}}}]}}
KUBECTL_LIST = {"apiVersion": "v1", "items": [SLICE], "kind": "List", "metadata": {"resourceVersion": ""}}


def test_a_kubectl_yaml_list_reads_as_pyyaml_reads_it():
    text = yaml.safe_dump(KUBECTL_LIST)  # quoted 'on' / '010', as kubectl quotes them
    assert text.startswith("apiVersion: v1\nitems:\n")
    assert load_documents(text) == [KUBECTL_LIST]


# A list as `kubectl get resourceslices -o yaml` prints it: go-yaml double-quotes every string that a
# YAML reader would resolve to something else, timestamps and dates included (metadata.creationTimestamp
# is always printed as creationTimestamp: "2026-11-02T09:14:07Z").
KUBECTL_PRINTED = """\
apiVersion: v1
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata:
    creationTimestamp: "2026-11-02T09:14:07Z"
    name: node-a
  spec:
    devices:
    - attributes:
        firmwareDate:
          string: "2026-11-02"
        firmwareTime:
          string: '2026-11-02 09:14:07'
      name: gpu-0
    driver: gpu.nvidia.com
    nodeName: node-a
    pool:
      name: node-a
kind: List
metadata:
  resourceVersion: ""
"""


def test_quoted_timestamps_in_a_kubectl_list_stay_strings():
    """A quoted scalar is a string whatever it looks like (YAML 1.2 spec, 10.3.2 Tag Resolution: only
    plain scalars are resolved; YAML 1.1's timestamp type too applies to plain scalars), and the API
    server stores these fields as strings: a device whose string attribute looks like a date is a
    valid device, and metadata reads back as JSON would give it."""
    (listing,) = load_documents(KUBECTL_PRINTED)
    (item,) = listing["items"]
    assert item["metadata"]["creationTimestamp"] == "2026-11-02T09:14:07Z"
    attributes = item["spec"]["devices"][0]["attributes"]
    assert attributes == {"firmwareDate": {"string": "2026-11-02"}, "firmwareTime": {"string": "2026-11-02 09:14:07"}}
    assert listing == yaml.safe_load(KUBECTL_PRINTED)


def test_json_reads_through_the_json_path():
    import json

    assert load_documents(json.dumps(KUBECTL_LIST, indent=2)) == [KUBECTL_LIST]
    assert load_documents(json.dumps([SLICE, SLICE])) == [SLICE, SLICE]


def test_hand_written_yaml_keeps_yaml_1_1_meanings():
    """sigs.k8s.io/yaml (go-yaml v2) reads unquoted yes/on as booleans and 010 as octal."""
    text = "apiVersion: v1\nitems:\n- a: on\n  b: 010\nkind: List\n"
    assert load_documents(text) == [{"apiVersion": "v1", "items": [{"a": True, "b": 8}], "kind": "List"}]


def test_several_documents_and_empty_ones():
    assert load_documents("a: 1\n---\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


def test_json_looking_yaml_is_still_read():
    assert load_documents("{a: 1}") == [{"a": 1}]


@pytest.mark.parametrize("text", ["a: [1, 2\n", "{\"a\": 1", "key: value\n  bad indent: x\n"])
def test_bad_input_says_where(text):
    with pytest.raises(UnreadableInput, match=r"claim.yaml is not valid YAML/JSON \(line \d+, column \d+\)"):
        load_documents(text, "claim.yaml")


# Hand-written YAML (a claim, a DeviceClass) may be read by yaml-rs where PyYAML, which reads YAML 1.1
# as kubectl's go-yaml does, would read the same objects; anything else is PyYAML's.  These tokens are
# where YAML 1.1 and 1.2 (and Rust's number parsing) part: booleans, octal and 0o numerals, exponents
# with and without a sign or dot, signs before a dot, infinities and NaNs, underscores, sexagesimals,
# timestamps, merge and value keys, numbers beyond 64 bits.
TRICKY = ["yes", "No", "ON", "off", "y", "n", "true", "True", "TRUE", "false", "null", "Null", "NULL", "~",
          "010", "08", "-010", "0o17", "0x1F", "-0x1F", "0X1F", "0b101", "+12", "-0", "00", "0", "7",
          "1e3", "1E3", "1.5e3", "1.5e+3", "1.5E-3", ".5", "5.", "+.5", "-.5", "3.14", "-7.25",
          ".inf", "-.Inf", "+.INF", ".NaN", "inf", "nan", "NaN", "Infinity", "-inf",
          "1_000", "1__0", "0x_1F", "1:30", "190:20:30.15", "2026-01-01", "2026-01-01T10:00:00Z",
          "2026-01-01 10:00:00", "<<", "=", "12345678901234567890123", "-9223372036854775809",
          "gpu", "NVIDIA H100 80GB HBM3", "node-01", "h100e", "GPU-1e2b", "40Gi", "a.b/c",
          "1_", "_", "_0", "-_1", "+", "-", ".", "0.", "00.5", "1.2.3", "1e", "e3", "0x", "0o", "0b", "0xg",
          "1,000", "1/2", "1-2", "12:34:56", "-1:30", "0:0", "1.5:30", "0.1_0", "1.e3", "1e+", "++1", "+-1",
          "0x1.8p1", "infinity", "+inf", "NAN", ".Nan", "1d", "1f", "0.0", "-0.0", "+0", "0e0", "1E+3",
          "9223372036854775807", "-9223372036854775808", "18446744073709551616", "0.000001", "1e-7"]
WORDS = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=12)


def _scalar(token: str, style: str) -> str:
    if style == "single":
        return "'" + token.replace("'", "''") + "'"
    if style == "double":
        return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return token


SCALARS = st.builds(_scalar, st.one_of(st.sampled_from(TRICKY), WORDS),
                    st.sampled_from(["plain", "plain", "single", "double"]))


def _render(node, indent: int = 0) -> str:
    pad = " " * indent
    if isinstance(node, dict):
        if not node:
            return pad + "{}\n"
        lines = []
        for key, value in node.items():
            if isinstance(value, (dict, list)) and value:
                lines.append(f"{pad}{key}:\n{_render(value, indent + 2)}")
            else:
                lines.append(f"{pad}{key}: {_render(value).strip()}\n")
        return "".join(lines)
    if isinstance(node, list):
        if not node:
            return pad + "[]\n"
        return "".join(f"{pad}- {_render(item, indent + 2).lstrip()}" for item in node)
    return pad + node + "\n"


DOCUMENTS = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, min_size=1, max_size=3),
    st.dictionaries(SCALARS, inner, min_size=1, max_size=3)), max_leaves=12)


def _pyyaml_reads(text: str):
    try:
        return [d for d in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d is not None]
    except (yaml.YAMLError, IndexError, ValueError):
        # PyYAML refuses it: a tag that cannot hold its value can also escape as Python's own error
        # (`!!int` alone: construct_yaml_int reads value[0] of '' and raises IndexError).
        return UnreadableInput


def _same(a, b) -> bool:
    """Equal, with NaN equal to NaN and each value's type kept (1 is not 1.0, True is not 1)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(_same(ka, kb) and _same(va, vb)
                                        for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _reads_as_pyyaml_reads(text: str) -> None:
    """explain reads ``text`` into the objects PyYAML reads, or refuses it where PyYAML does."""
    expected = _pyyaml_reads(text)
    if expected is UnreadableInput:
        with pytest.raises(UnreadableInput):
            load_documents(text, "claim.yaml")
    else:
        assert _same(load_documents(text, "claim.yaml"), expected), text


@pytest.mark.parametrize("text", ["!!int", "!!int\n", "a: !!int", "- !!float"])
def test_a_tag_with_no_value_is_refused_with_the_line_where_pyyaml_crashes(text):
    """Found by the property below: PyYAML itself raises IndexError on `!!int` with nothing after
    it; explain refuses such a file with an error naming the line and what to change."""
    assert _pyyaml_reads(text) is UnreadableInput
    with pytest.raises(UnreadableInput, match="line 1"):
        load_documents(text, "claim.yaml")


@settings(max_examples=1500, deadline=None)
@given(DOCUMENTS)
def test_hand_written_yaml_reads_as_pyyaml_reads_it(document):
    _reads_as_pyyaml_reads(_render(document))


# Lines of every shape a hand-written file has (flow collections, block scalars, comments, continued
# plain scalars, bad indentation), in any order: most such files are invalid, and both readers must
# then refuse them alike.
FRAGMENTS = ["a: 1", "b:", "  - x", "  - 010", "- [1, yes, '2', .5]", "c: {d: on, e: 0o17}", "f: |", "  text",
             "  ~", "g: >-", "  folded", "# comment", "h: a # comment", "i: device.x == 'a' &&", "  device.y",
             "j: 'it''s'", 'k: "tab\\t \\u00e9"', "l: -", "m: ? n", "o: 1:30", "p: 2026-01-01", "  q: bad",
             "r: [", "s: }", "t: \"", "u: !!str 010", "v: &a 1", "w: *a", "x: 1e3", "y: .nan", "z: 12_000"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.builds(lambda k, v: f"{k}: {v}", WORDS, SCALARS)),
                min_size=1, max_size=8))
def test_any_mix_of_lines_reads_or_fails_as_pyyaml_reads_it(lines):
    _reads_as_pyyaml_reads("\n".join(lines) + "\n")


@pytest.mark.parametrize("token", TRICKY)
@pytest.mark.parametrize("style", ["plain", "single", "double"])
def test_each_tricky_scalar_reads_as_pyyaml_reads_it(token, style):
    for text in (f"key: {_scalar(token, style)}\n", f"{_scalar(token, style)}: value\n", f"- {_scalar(token, style)}\n"):
        _reads_as_pyyaml_reads(text)


CLAIM_TEXT = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: bench
  namespace: ml
spec:
  devices:
    requests:
    - exactly:
        count: 4
        deviceClassName: gpu.nvidia.com
        selectors:
        - cel:
            expression: device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('h100')
        - cel:
            expression: device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi'))
              >= 0
      name: gpu
"""


def test_an_ordinary_claim_is_read_without_loading_pyyaml():
    """PyYAML's import is ~90 M instructions (a fifth of explain's start-up); a claim that means the
    same in YAML 1.1 and 1.2 does not need it."""
    import subprocess
    import sys

    code = ("import sys; from kubectl_gpu.explain.loading import load_documents; "
            f"docs = load_documents({CLAIM_TEXT!r}); "
            "assert docs[0]['spec']['devices']['requests'][0]['exactly']['count'] == 4, docs; "
            "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert load_documents(CLAIM_TEXT) == [yaml.safe_load(CLAIM_TEXT)]
