"""The webhook's answer is the RFC 6902 diff of the admitted object and its changed copy
(webhook/patched_copy.diff, as controller-runtime's PatchResponseFromRaw): applied by an
independent implementation (the jsonpatch library, as the API server applies the patch), it must
turn the original into the copy exactly, for any two JSON documents."""

from __future__ import annotations

import copy

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook import patched_copy

KEYS = st.sampled_from(["a", "b", "c", "nvidia.com/gpu", "x~y", ""])
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, width=16) | st.text(max_size=3)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSON, JSON)
def test_the_diff_of_any_two_documents_turns_one_into_the_other(before, after):
    original = copy.deepcopy(before)
    ops = patched_copy.diff(before, after)
    assert jsonpatch.apply_patch(before, ops) == after
    assert before == original  # neither document is modified


@settings(max_examples=200, deadline=None)
@given(JSON, st.lists(st.tuples(KEYS, JSON), max_size=3))
def test_the_diff_of_a_copy_on_write_edit_is_that_edit(before, additions):
    if not isinstance(before, dict):
        before = {"doc": before}
    ops = [{"op": "add", "path": f"/{patched_copy.escape(k)}", "value": v} for k, v in additions]
    after = patched_copy.apply(before, ops)
    assert jsonpatch.apply_patch(before, patched_copy.diff(before, after)) == after


def test_a_large_untouched_list_costs_nothing_to_compare():
    """Shared (untouched) subtrees are skipped by identity: the diff of a Deployment with a
    50,000-entry env list whose limits changed is one operation, not a list diff."""
    env = [{"name": f"V{i}", "value": "v"} for i in range(50_000)]
    before = {"spec": {"containers": [{"env": env, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    after = patched_copy.apply(before, [{"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"}])
    assert patched_copy.diff(before, after) == [
        {"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"}]


STRINGS = st.text(alphabet='[]{}"\\ab', max_size=6)
NESTED = st.recursive(st.none() | STRINGS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3),
                      max_leaves=30)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(NESTED, st.integers(0, 6))
def test_the_nesting_check_agrees_with_a_parser_whatever_the_strings_hold(value, limit):
    """Brackets, quotes and backslashes inside JSON strings (RFC 8259 section 7 escapes) never count
    as nesting: the pre-parse check says what the standard library's parser finds."""
    import json

    from webhook.review import nesting_exceeds

    text = json.dumps(value).encode()
    assert nesting_exceeds(text, limit) == (_depth(json.loads(text)) > limit)
