"""RFC 6902 JSON Patch applied in place, to plain values and to ruamel round-trip trees."""

from __future__ import annotations

import copy
import io

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from kubectl_gpu.manifests.nodes import to_plain, to_round_trip
from kubectl_gpu.manifests.yamlio import YamlCodec
from kubectl_gpu.core import escape_pointer as escape
from kubectl_gpu.manifests.tree_patch import PatchError, apply_patch, join_pointer, split_pointer


def test_pointer_tokens_are_escaped_and_unescaped() -> None:
    assert escape("nvidia.com/gpu") == "nvidia.com~1gpu" and escape("a~b") == "a~0b"
    assert split_pointer("/metadata/annotations/kubectl-gpu.io~1original-resources/~01") == [
        "metadata", "annotations", "kubectl-gpu.io/original-resources", "~1"]
    assert join_pointer(["a/b", 0, "~"]) == "/a~1b/0/~0"


def test_add_remove_replace_and_append() -> None:
    doc = {"spec": {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": 1}}}]}}
    apply_patch(doc, [
        {"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"},
        {"op": "add", "path": "/spec/containers/0/resources/claims", "value": [{"name": "gpu"}]},
        {"op": "add", "path": "/spec/containers/0/resources/claims/-", "value": {"name": "more"}},
        {"op": "add", "path": "/spec/containers/0/resources/claims/0", "value": {"name": "first"}},
        {"op": "replace", "path": "/spec/containers/0/name", "value": "b"},
    ])
    assert doc == {"spec": {"containers": [{"name": "b", "resources": {
        "limits": {"cpu": 1}, "claims": [{"name": "first"}, {"name": "gpu"}, {"name": "more"}]}}]}}


def test_move_copy_and_test() -> None:
    doc = {"a": {"x": 1}, "b": []}
    apply_patch(doc, [{"op": "copy", "from": "/a/x", "path": "/b/-"},
                      {"op": "move", "from": "/a/x", "path": "/c"},
                      {"op": "test", "path": "/c", "value": 1}])
    assert doc == {"a": {}, "b": [1], "c": 1}
    with pytest.raises(PatchError, match="test failed"):
        apply_patch(doc, [{"op": "test", "path": "/c", "value": 2}])


@pytest.mark.parametrize("wrap", [copy.deepcopy, to_round_trip])
def test_a_copied_value_is_its_own_and_later_operations_on_it_leave_the_source_alone(wrap) -> None:
    doc = wrap({"a": {"limits": {"cpu": 1}}})
    apply_patch(doc, [{"op": "copy", "from": "/a", "path": "/b"},
                      {"op": "add", "path": "/b/limits/memory", "value": "1Gi"}], wrap)
    assert doc == {"a": {"limits": {"cpu": 1}}, "b": {"limits": {"cpu": 1, "memory": "1Gi"}}}


@pytest.mark.parametrize("operation,message", [
    ({"op": "remove", "path": "/spec/missing"}, "no key 'missing'"),
    ({"op": "replace", "path": "/spec/list/5", "value": 1}, "out of range"),
    ({"op": "add", "path": "/spec/list/01", "value": 1}, "not an array index"),
    ({"op": "add", "path": "/spec/name/x", "value": 1}, "cannot add into a str"),
    ({"op": "add", "path": "spec", "value": 1}, "must start with '/'"),
    ({"op": "frobnicate", "path": "/spec"}, "unknown patch operation"),
])
def test_operations_that_do_not_fit_say_why(operation: dict, message: str) -> None:
    doc = {"spec": {"list": [1], "name": "n"}}
    with pytest.raises(PatchError, match=message):
        apply_patch(doc, [operation])


def test_a_round_trip_tree_keeps_comments_and_gets_block_style_values() -> None:
    yaml = YAML()
    tree = yaml.load("spec:  # the spec\n  a: 1  # keep me\n  b: 2\n")
    apply_patch(tree, [{"op": "add", "path": "/spec/c", "value": {"d": [1, 2]}}], wrap=to_round_trip)
    out = io.StringIO()
    yaml.dump(tree, out)
    assert out.getvalue() == "spec:  # the spec\n  a: 1  # keep me\n  b: 2\n  c:\n    d:\n    - 1\n    - 2\n"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab/~", max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text("ab/~", max_size=3), children,
                                                                       max_size=3),
    max_leaves=8,
)


def _paths(value, prefix=""):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, f"{prefix}/{escape(key)}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, f"{prefix}/{index}")


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text("ab/~", max_size=3), json_values, min_size=1, max_size=4), st.data())
def test_agrees_with_the_reference_implementation(doc: dict, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
    op = data.draw(st.sampled_from(["add", "remove", "replace"]))
    operation = {"op": op, "path": path, "value": data.draw(json_values)}
    if op == "remove":
        del operation["value"]
    expected = jsonpatch.apply_patch(doc, [operation])
    plain, tree = copy.deepcopy(doc), to_round_trip(doc)
    apply_patch(plain, [operation])
    apply_patch(tree, [operation], wrap=to_round_trip)
    assert plain == expected and to_plain(tree) == expected


@pytest.mark.parametrize("text", ["yes", "off", "y", "0755"])
def test_strings_kubernetes_would_read_as_other_types_are_quoted(text: str) -> None:
    yaml = YAML()
    tree = yaml.load("a: 1\n")
    apply_patch(tree, [{"op": "add", "path": "/b", "value": text}], wrap=to_round_trip)
    out = io.StringIO()
    yaml.dump(tree, out)
    assert out.getvalue() == f"a: 1\nb: '{text}'\n"
    assert to_plain(YamlCodec().parse(out.getvalue()).tree)["b"] == text
