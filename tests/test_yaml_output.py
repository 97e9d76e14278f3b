"""-o yaml and the YAML files migrate --from-cluster writes: PyYAML's safe_dump text, whichever of its
emitters writes it (libyaml's, or the pure-Python one for what libyaml cannot encode).

Scripts diff and parse these outputs, and kubectl (go-yaml, YAML 1.1) reads the written files, so
the text must not change with the emitter: quoting of "yes"/"0123", escapes, line folding."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_gpu.cli import yaml_output

# Text as YAML and JSON inputs can carry it: any code point, lone surrogates included ("\ud800" is a
# valid escape in both), and the scalars YAML 1.1 readers take for something else.
TEXT = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=40),
    st.sampled_from(["yes", "on", "off", "no", "0123", "1e3", "null", "~", "- a", ": b", "#c", "", " x ", "\ud800",
                     "a\u2028b", "\x85", "\ufeff", "tab\there", "NVIDIA H100 80GB HBM3 " * 8]),
)
# What Kubernetes objects and this tool's reports are made of: printable ASCII (names, CEL
# expressions, messages), long text that folds, and the scalars YAML 1.1 readers would misread.
ASCII = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=120),
    st.sampled_from(["yes", "on", "off", "no", "0123", "1e3", "null", "~", "- a", ": b", "#c", "", " x ", "a\nb\n",
                     "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3' " * 3]),
)
# Keys as Kubernetes objects have them (field names, label and capacity names): non-empty ASCII.
KEYS = st.one_of(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=127),
                 st.sampled_from(["yes", "0123", "null", "a: b", "- x", "#", "resource.kubernetes.io/pciBusID"]))


def data_of(text, keys):
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text)
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


# The two emitters write such data the same, character for character.  Elsewhere they differ in
# form only, never in meaning: where a long double-quoted string full of escapes folds, and an
# empty key or one of 128 characters or more (libyaml counts UTF-8 bytes) written as "? key".
DATA = data_of(ASCII, KEYS)
ANY_DATA = data_of(TEXT, TEXT)


@settings(max_examples=500, deadline=None)
@given(DATA)
def test_a_document_is_written_as_pyyaml_safe_dump_writes_it(data):
    assert yaml_output.dump(data) == yaml.safe_dump(data, sort_keys=False)


@settings(max_examples=150, deadline=None)
@given(st.lists(DATA, max_size=4))
def test_several_documents_are_written_as_pyyaml_safe_dump_all_writes_them(documents):
    assert yaml_output.dump_all(documents) == yaml.safe_dump_all(documents, sort_keys=False)


@settings(max_examples=300, deadline=None)
@given(ANY_DATA)
def test_any_data_reads_back_as_itself(data):
    assert yaml.safe_load(yaml_output.dump(data)) == data


def test_a_lone_surrogate_is_written_as_its_escape_not_a_traceback():
    # libyaml encodes to UTF-8 and cannot; the text keeps YAML's own escape, which reads back the same.
    text = yaml_output.dump({"name": "gpu-\ud800"})
    assert text == 'name: "gpu-\\uD800"\n'
    assert yaml.safe_load(text) == {"name": "gpu-\ud800"}


def test_explain_o_yaml_prints_the_explanation_that_o_json_prints(tmp_path):
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    slices = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n-gpu"},
              "spec": {"driver": "gpu.nvidia.com", "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
                       "nodeName": "n", "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]}}
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
    (tmp_path / "slices.json").write_text(json.dumps(slices))
    run = [sys.executable, "-m", "kubectl_gpu.cli.main", "explain", "-f", str(tmp_path / "claim.yaml"),
           "--slices", str(tmp_path / "slices.json"), "-o"]
    as_yaml = subprocess.run([*run, "yaml"], capture_output=True, text=True, check=True).stdout
    as_json = subprocess.run([*run, "json"], capture_output=True, text=True, check=True).stdout
    assert yaml.safe_load(as_yaml) == json.loads(as_json)
    assert as_yaml == yaml.safe_dump(json.loads(as_json), sort_keys=False)
