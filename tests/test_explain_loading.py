"""explain reads its input files fast and exactly: JSON, `kubectl get -o yaml`
lists through the compiled YAML parser, everything else through PyYAML (YAML 1.1, as Kubernetes'
sigs.k8s.io/yaml reads manifests), and bad input gets a message with the place to fix."""

import pytest
import yaml

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
