"""The structured allocator answers Kubernetes' own allocator test table case for case.

The cases are k8s.io/dynamic-resource-allocation structured/internal/allocatortesting/
allocator_testing.go (TestAllocator's table) at the commit in the data file, transcribed by
scripts/port_allocator_cases.py into tests/data/allocator/upstream_cases.json: each case's claims
(of one pod), classes, slices, node and allocated devices, with the features it runs under, and
what upstream expects: the devices of each claim and the allocation's node selector, no
allocation, or an error containing a text.  Where upstream also counts the search's steps
(NumAllocateOneInvocations), the count must be the same: the same search, not only the same answer.
"""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.allocator_cases import allocated_state, claim, device_class, features, node, quantity_value, slices
from kubectl_gpu.allocator import ALLOCATED, ERROR, UPSTREAM_COMMIT, Allocator, DeviceResult
from kubectl_gpu.dra.devices import InvalidResourceSlice

DATA = json.loads((Path(__file__).parent / "data" / "allocator" / "upstream_cases.json").read_text())
CASES = {case["name"]: case for case in DATA["cases"]}


def test_the_table_is_transcribed_whole_from_the_commit_the_allocator_follows() -> None:
    assert DATA["commit"] == UPSTREAM_COMMIT
    assert DATA["not_ported"] == {}
    assert len(CASES) == len(DATA["cases"]) > 200


def _device(result: DeviceResult) -> dict[str, Any]:
    out: dict[str, Any] = {"request": result.request, "driver": result.driver, "pool": result.pool, "device": result.device}
    if result.admin_access:
        out["adminAccess"] = True
    if result.tolerations:
        out["tolerations"] = [{k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value),
                                                  ("effect", t.effect)) if v} for t in result.tolerations]
    if result.shared:
        out["shareID"] = "(a share)"
    if result.consumed_capacity:
        out["consumedCapacity"] = {name.split("/", 1)[1] if name.startswith(result.driver + "/") else name: str(Fraction(value))
                                   for name, value in result.consumed_capacity.items()}
    if result.binding_conditions:
        out["bindingConditions"] = list(result.binding_conditions)
    if result.binding_failure_conditions:
        out["bindingFailureConditions"] = list(result.binding_failure_conditions)
    return out


def _expected_device(raw: dict[str, Any]) -> dict[str, Any]:
    out = {k: raw[k] for k in ("request", "driver", "pool", "device")}
    if raw.get("adminAccess"):
        out["adminAccess"] = True
    if raw.get("tolerations"):
        out["tolerations"] = [{k: v for k, v in t.items() if v} for t in raw["tolerations"]]
    if raw.get("shareID"):
        out["shareID"] = "(a share)"
    if raw.get("consumedCapacity"):
        out["consumedCapacity"] = {k: str(quantity_value(v)) for k, v in raw["consumedCapacity"].items()}
    for key in ("bindingConditions", "bindingFailureConditions"):
        if raw.get(key):
            out[key] = list(raw[key])
    return out


def _selector(selector: Any) -> Any:
    """A node selector compared as upstream's matcher does: terms, requirements and values in any order."""
    if selector is None:
        return None
    return Counter(
        frozenset((kind, frozenset((r["key"], r["operator"], frozenset(r.get("values") or ())) for r in term.get(kind) or ()))
                  for kind in ("matchExpressions", "matchFields"))
        for term in selector["nodeSelectorTerms"])


def _config(source: str, requests: Any, configuration: Any) -> str:
    return json.dumps([source, list(requests or ()), configuration], sort_keys=True)


def _canonical(devices: list[dict[str, Any]]) -> Counter:
    return Counter(json.dumps(d, sort_keys=True, default=str) for d in devices)


# Slices whose attribute values the API server refuses (a value of no known kind, an empty list):
# upstream's allocator, fed them in memory, fails with "unsupported attribute value"; this tool's
# one slice reader refuses such a slice as the API server would, naming the attribute.
REFUSED_BY_THE_SLICE_READER = {
    "list-attributes-distinct-constaint-with-empty-or-unknown-type",
    "list-attributes-match-constaint-with-empty-or-unknown-type",
    "with-distinct-constraints-unknown-type-attribute",
}


@pytest.mark.parametrize("name", sorted(REFUSED_BY_THE_SLICE_READER))
def test_upstream_case_with_a_slice_the_api_server_refuses(name: str) -> None:
    case = CASES[name]
    assert case["expectError"] == "unsupported attribute value"
    with pytest.raises(InvalidResourceSlice, match="attributes"):
        slices(case)


@pytest.mark.parametrize("name", sorted(set(CASES) - REFUSED_BY_THE_SLICE_READER))
def test_upstream_case(name: str) -> None:
    case = CASES[name]
    allocator = Allocator(slices(case), {c.name: c for c in map(device_class, case["classes"])}, features(case["features"]),
                          allocated_state(case))
    outcome = allocator.allocate([claim(c) for c in case["claims"]], node(case["node"]))

    if case["expectError"] is not None:
        assert outcome.kind == ERROR, outcome
        assert case["expectError"] in outcome.error
        return
    assert outcome.kind != ERROR, outcome.error
    expected = case["expectResults"] or []
    got = [a for a in outcome.allocations] if outcome.kind == ALLOCATED else []
    if not expected:
        # Upstream expects no results: nothing allocated, or no claims at all.
        assert not any(a.devices for a in got), outcome
        return
    # ConsistOf: one allocation per claim, in any order.
    # Each allocation's devices (any order), node selector and device configuration (in order).
    assert Counter(json.dumps([sorted(_canonical([_device(d) for d in a.devices]).elements()),
                               sorted(map(repr, (_selector(a.node_selector) or {}).items())),
                               [_config(c.source, c.requests, c.configuration) for c in a.config]], default=str)
                   for a in got) == Counter(
        json.dumps([sorted(_canonical([_expected_device(d) for d in e["devices"]["results"]]).elements()),
                    sorted(map(repr, (_selector(e["nodeSelector"]) or {}).items())),
                    [_config(c["source"], c.get("requests"), c["deviceConfiguration"])
                     for c in e["devices"].get("config") or ()]], default=str)
        for e in expected)
    if case["expectSteps"]:
        assert outcome.steps == case["expectSteps"]
