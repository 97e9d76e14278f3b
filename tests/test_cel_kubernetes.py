"""DRA CEL exactly as Kubernetes evaluates it, on both engines.

Vectors written from Kubernetes' own sources (kubernetes/kubernetes):

* staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go: the environment (``cel.bind``
  from ext.Bindings; attributes typed ``any`` before DRAListTypeAttributes and ``dyn`` with it
  "so that iterate functions can work (e.g. exists, all) for list type attributes";
  ``includes()``; the attribute map whose missing domain reads as an empty map, found by every
  lookup including has()), the runtime cost limit CELSelectorExpressionMaxCost;
* staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go: expressions, devices and
  ``expectCost`` (cel-go's worst-case estimate);
* pkg/apis/resource/validation: "too complex, exceeds cost limit" for a new selector whose
  estimate exceeds the limit;
* cel-go interpreter (evalFold): "got '%T', expected iterable type" for a macro over a scalar,
  and runtime_cost.go: "operation cancelled: actual cost limit exceeded".
"""

from __future__ import annotations

import pytest

from kubectl_gpu.cel import CelCompileError, CelRuntimeError
from kubectl_gpu.dra.devices import devices_from_slice, make_device
from kubectl_gpu.dra.gates import default_gates
from kubectl_gpu.dra.values import Semver
from tests.cel_reference import ENGINES, FAST, compile_selector
DRIVER = "dra.example.com"
LIST_GATES = frozenset({"DRAListTypeAttributes"})


def device(**attributes):
    return make_device(DRIVER, "dev-0", attributes=attributes, capacity={"quantity": "1Mi"})


def outcome(expression, dev, engine, **options):
    try:
        return compile_selector(expression, engine, **options).matches(dev)
    except CelRuntimeError as err:
        return f"runtime error: {err.message}"


# -- booleans read by index ---------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("expression", [
    'device.attributes["dra.example.com"]["flag"] == true && has(device.attributes["dra.example.com"].s)',
    'device.attributes["dra.example.com"]["flag"] && has(device.attributes["dra.example.com"].s)',
    'device.attributes["dra.example.com"]["flag"] && [1].size() + 1 == 2',
])
def test_a_bool_attribute_read_by_index_stays_a_bool(expression, engine):
    """compile_test.go "driver-name-qualifier-map-lookup": ``["name"]`` on a BoolValue attribute
    is the bool itself (a selector may be just that lookup)."""
    assert outcome(expression, device(flag=True, s="x"), engine) is True


# -- macros on single-valued attributes ----------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value, go_type", [("NVIDIA", "types.String"), (3, "types.Int"), (True, "types.Bool"),
                                            (Semver.parse("1.2.3"), "cel.Semver")])
def test_a_macro_over_a_single_value_is_a_runtime_error_not_characters(value, go_type, engine):
    """With dyn attributes (DRAListTypeAttributes, or a stored selector) a macro over a scalar
    compiles and cel-go's evalFold fails: the scheduler aborts, it never iterates characters."""
    expression = 'device.attributes["dra.example.com"].productName.exists(c, c == "N")'
    expected = f"runtime error: got '{go_type}', expected iterable type"
    assert outcome(expression, device(productName=value), engine, gates=LIST_GATES) == expected
    assert outcome(expression, device(productName=value), engine, stored=True) == expected


def test_without_list_type_attributes_a_macro_over_an_attribute_does_not_compile():
    """Before 1.36 (and with the gate off) attribute values are ``any``, which cel-go's checker
    refuses as a comprehension range: the API server rejects the new selector."""
    with pytest.raises(CelCompileError, match="expression of type 'any' cannot be range of a comprehension"):
        compile_selector('device.attributes["dra.example.com"].productName.all(c, c != "x")',
                         gates=default_gates("1.35"))


# -- cel.bind ------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_cel_bind_names_a_domain_once(engine):
    """compile_test.go "bind" (and compile.go's own example)."""
    expression = 'cel.bind(dra, device.attributes["dra.example.com"], dra.name)'
    assert compile_selector(expression, engine).max_cost == 15
    assert outcome(expression, device(name=True), engine) is True
    both = 'cel.bind(dra, device.attributes["dra.example.com"], dra.oneBool && dra.anotherBool)'
    assert outcome(both, device(oneBool=True, anotherBool=False), engine) is False


@pytest.mark.parametrize("engine", ENGINES)
def test_cel_bind_fails_only_where_the_bound_value_is_read(engine):
    """ext.Bindings expands to a comprehension whose accumulator holds the value, error or not."""
    assert outcome("cel.bind(x, 1 / 0, true)", device(), engine) is True
    assert outcome("cel.bind(x, 1 / 0, x > 0)", device(), engine) == "runtime error: division by zero"


def test_cel_bind_with_a_non_identifier_name_is_a_compile_error():
    with pytest.raises(CelCompileError, match="simple identifiers"):
        compile_selector('cel.bind(device.x, 1, true)')


# -- has() -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("expression, expected", [
    # a missing domain is an empty map: the attribute is absent, no error
    ('has(device.attributes["missing.example.com"].name)', False),
    ('has(device.attributes["dra.example.com"].name)', True),
    ('has(device.attributes["dra.example.com"].other)', False),
    # the attribute map's Find always finds a domain (the empty default), so has() is true
    ("has(device.attributes.anything)", True),
    ('!has(device.attributes["missing.example.com"].name) || device.attributes["missing.example.com"].name', True),
])
def test_has_on_attribute_domains_is_pinned(expression, expected, engine):
    assert outcome(expression, device(name=True), engine) is expected


# -- list-typed attributes (Kubernetes 1.36, DRAListTypeAttributes) ------------------------------

LIST_SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-a-nic"},
    "spec": {
        "driver": DRIVER,
        "nodeName": "node-a",
        "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
        "devices": [{
            "name": "nic-0",
            "attributes": {
                "models": {"strings": ["cx7", "cx8"]},
                "vlans": {"ints": [10, 20]},
                "modes": {"bools": [True]},
                "firmware": {"versions": ["1.2.3", "2.0.0"]},
                "model": {"string": "cx7"},
            },
        }],
    },
}


def test_a_slice_with_list_attributes_is_read_not_rejected():
    (nic,) = devices_from_slice(LIST_SLICE)
    assert nic.attribute("models") == ["cx7", "cx8"]
    assert nic.attribute("vlans") == [10, 20]
    assert [str(v) for v in nic.attribute("firmware")] == ["1.2.3", "2.0.0"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("expression, expected", [
    ('device.attributes["dra.example.com"].models.includes("cx8")', True),
    ('device.attributes["dra.example.com"].vlans.includes(30)', False),
    # includes() on a single value is equality
    ('device.attributes["dra.example.com"].model.includes("cx7")', True),
    ('device.attributes["dra.example.com"].vlans.exists(v, v > 15)', True),
    ('device.attributes["dra.example.com"].firmware.all(v, v.isGreaterThan(semver("1.0.0")))', True),
    ('"cx7" in device.attributes["dra.example.com"].models', True),
])
def test_list_attributes_behind_their_gate(expression, expected, engine):
    (nic,) = devices_from_slice(LIST_SLICE)
    assert outcome(expression, nic, engine, gates=LIST_GATES) is expected


# -- cost ------------------------------------------------------------------------------------------

UPSTREAM_COSTS = {
    '"no-such-domain" in device.attributes': 3,
    'device.driver == ""': 2,
    'device.driver == "dra.example.com"': 4,
    'device.attributes["dra.example.com"]["name"]': 4,
    'device.attributes["dra.example.com"].name > 0': 5,
    'device.attributes["dra.example.com"].name == "fish"': 5,
    'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))': 6,
    'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))': 6,
    '!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))': 11,
    'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c': 12,
}


@pytest.mark.parametrize("expression, cost", UPSTREAM_COSTS.items())
def test_cost_estimates_match_kubernetes(expression, cost):
    assert compile_selector(expression).max_cost == cost


# compile_test.go at kubernetes/kubernetes 052bb7dc (1.36 development), each run with
# DRAListTypeAttributes off and on: the same expectCost both ways, because every attribute is
# declared with MaxElements max(DeviceAttributeMaxValueLength 64, ResourceSliceMaxAttributeValuesPerDevice 48).
LIST_ELEMENTS = 64  # maxElementsListTypeEnabled
UPSTREAM_COSTS_LIST_ERA = {
    # exists: loop condition @not_strictly_false(!accu) is 3, one more than all's
    'device.attributes["dra.example.com"].name.exists(x, x > 0)': 5 + (3 + 3) * LIST_ELEMENTS,
    'device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))': 5 + (3 + 4) * LIST_ELEMENTS,
    'device.attributes["dra.example.com"].names.all(x, x != "")': 5 + (2 + 2) * LIST_ELEMENTS,
    'device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))': 5 + (2 + 4) * LIST_ELEMENTS,
    # includes() costs ResourceSliceMaxAttributeValuesPerDevice (48); `in` the declared MaxElements
    'device.attributes["dra.example.com"].name.includes("fish")': 4 + 48,
    'device.attributes["dra.example.com"].name.includes(semver("1.0.0"))': 4 + 48 + 1,
    '1 in device.attributes["dra.example.com"].names': 4 + 64,
    'device.attributes["dra.example.com"].names.size() == 2': 6,
    'device.attributes["dra.example.com"].names': 4,
    'cel.bind(dra, device.attributes["dra.example.com"], dra.name)': 15,
    # apiserver library cost.go: split is 2 x 0.1 per character, find a regex like matches()
    'device.attributes["dra.example.com"].services.split("example").size() >= 2': 19,
    'device.attributes["dra.example.com"].services.matches("[^a]?sym")': 18,
    'device.attributes.exists_one(x, x == "dra.example.com")': 164,
    'device.attributes["dra.example.com"].exists_one(x, x == "services")': 133,
    'device.capacity.exists_one(x, x == "dra.example.com")': 164,
    'device.capacity["dra.example.com"].exists_one(x, x == "memory")': 133,
    'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)': 7,
    '"name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))': 10,
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all("
    "z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    ".all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))": 85555551,
}


@pytest.mark.parametrize("gates", [frozenset(), LIST_GATES], ids=["list-types-off", "list-types-on"])
@pytest.mark.parametrize("expression, cost", UPSTREAM_COSTS_LIST_ERA.items())
def test_cost_estimates_match_kubernetes_with_and_without_list_attributes(expression, cost, gates):
    assert compile_selector(expression, gates=gates, stored=True).max_cost == cost


MAP_OVER_ATTRIBUTES = ('device.attributes["dra.example.com"].map(key, device.attributes["dra.example.com"][key] * 20)'
                       '.filter(e, e > 50).exists(e, e == 60)')


def test_map_over_every_attribute_is_estimated_as_cel_go_does():
    """compile_test.go TestInterrupt's expression: upstream only asserts that it compiles (it is
    under the limit).  Its estimate, by cel-go checker/cost.go (costComprehension: range +
    accumulator init + result + range size x (loop condition + loop step); a map or filter's result
    has the range's size) with the DRA environment's sizes (a domain's attribute map holds at most
    ResourceSliceMaxAttributesAndCapacitiesPerDevice = 32 entries):

    * ``device.attributes["dra.example.com"]``: 3 (ident, select, index);
    * map: 3 + 10 ([]) + 1 (result) + 32 x (0 (true) + step ``accu + [v * 20]`` = 1 + 1 + 10 + 6) = 590;
    * filter: 590 + 10 + 1 + 32 x (0 + step ``e > 50 ? accu + [e] : accu`` = 2 + 13) = 1081;
    * exists: 1081 + 0 (false) + 1 + 32 x (3 (``@not_strictly_false(!accu)``) + ``accu || e == 60`` = 3) = 1274.
    """
    for gates in (frozenset(), LIST_GATES):
        assert compile_selector(MAP_OVER_ATTRIBUTES, gates=gates, stored=True).max_cost == 1274
        assert compile_selector(MAP_OVER_ATTRIBUTES, gates=gates).max_cost == 1274  # a new selector compiles too


@pytest.mark.parametrize("engine", ENGINES)
def test_includes_refuses_lists_longer_than_a_device_may_hold(engine):
    """compile_test.go "includes-function-on-very-long-list-*": 48 values are searched, 49 are the
    runtime error naming ResourceSliceMaxAttributeValuesPerDevice."""
    longest = make_device("dra.example.com", "d", attributes={"name": [f"value-{i}" for i in range(48)]})
    assert outcome('device.attributes["dra.example.com"].name.includes("value-48")', longest, engine,
                   gates=LIST_GATES) is False
    too_long = make_device("dra.example.com", "d", attributes={"name": [f"value-{i}" for i in range(49)]})
    assert outcome('device.attributes["dra.example.com"].name.includes("value-49")', too_long, engine,
                   gates=LIST_GATES) == ("runtime error: 'includes' function cannot be applied to lists longer "
                                         "than 48 values")


SEVEN_NESTED = "[1,2,3,4,5,6,7,8,9,10].all(a, " * 7 + "true" + ")" * 7


def test_a_new_selector_over_the_cost_limit_is_rejected_like_the_api_server_does():
    with pytest.raises(CelCompileError, match="too complex, exceeds cost limit"):
        compile_selector(SEVEN_NESTED)


def test_a_stored_runaway_selector_aborts_with_kubernetes_message():
    """10**7 iterations: the scheduler stops it at the runtime cost limit (one million); so does
    explain, after about as many steps as cel-go takes."""
    selector = compile_selector(SEVEN_NESTED, FAST, stored=True)
    with pytest.raises(CelRuntimeError, match="operation cancelled: actual cost limit exceeded"):
        selector.matches(device())


# cel-python needs ~1 ms per step: the same accounting, with a lower limit (Options.CostLimit).
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prefix", ["", "false || ", "true && "])
def test_both_engines_abort_at_the_same_cost_and_no_operator_absorbs_it(engine, prefix):
    """cel-go panics out of the evaluation: ``false || <over the limit>`` cannot hide it."""
    selector = compile_selector(prefix + SEVEN_NESTED, engine, stored=True, cost_limit=3_000)
    with pytest.raises(CelRuntimeError, match="actual cost limit exceeded"):
        selector.matches(device())
    small = compile_selector("[1, 2, 3].all(a, [1, 2, 3].all(b, true))", engine, stored=True, cost_limit=3_000)
    assert small.matches(device()) is True


@pytest.mark.parametrize("engine", ENGINES)
def test_runtime_errors_of_upstream_vectors(engine):
    """compile_test.go "runtime-error-lookup-identifier" / "-map"."""
    for expression in ('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
                       'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))'):
        assert outcome(expression, device(), engine) == "runtime error: no such key: noSuchAttr"


# -- macro semantics (cel-go comprehensions) -----------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("expression, expected", [
    ("[0, 1].all(i, 1 / i > 0 && false)", False),  # && absorbs the error
    ("[0, 1].all(i, 1 / i > 0)", "runtime error: division by zero"),
    ("[0, 1].exists(i, 1 / i > 0)", True),  # || absorbs it
    ("[1, 2, 3].exists_one(i, i > 2)", True),
    ("[1, 2, 3].filter(i, i > 1) == [2, 3]", True),
    ("[1, 2, 3].map(i, i * 2) == [2, 4, 6]", True),
    ("[1, 2, 3].map(i, i > 1, i * 10) == [20, 30]", True),
    ('{"a": 1, "b": 2}.all(k, k in ["a", "b"])', True),
    ('device.attributes["dra.example.com"].all(name, name.startsWith("n"))', True),
])
def test_macros_follow_cel_go(expression, expected, engine):
    assert outcome(expression, device(name=True, number=2), engine, stored=True) == expected


def test_nested_conditionals_are_priced_once_each(monkeypatch):
    """cel-go's estimator (checker/cost.go, costCall's Conditional case) prices ``c ? a : b`` as
    c's cost plus the larger of a's and b's, each branch estimated once: a selector of nested
    conditionals compiles in time linear in its length.  The estimate priced every operand
    twice (once for the operands' sum, once for the branches), 2**depth visits: 17 levels took
    4 s, 24 (a 1.3 KB selector) did not finish."""
    from kubectl_gpu.cel.cost import Estimator

    visits = 0
    price = Estimator._cost

    def counted(self, node, scope):
        nonlocal visits
        visits += 1
        return price(self, node, scope)

    monkeypatch.setattr(Estimator, "_cost", counted)
    expression = "true"
    for i in range(16):
        expression = f'(device.attributes["dra.example.com"].index == {i} ? {expression} : false)'
    # each level: its condition, 5 as in UPSTREAM_COSTS (the attribute 4, == 1); literals are free
    assert compile_selector(expression, stored=True).max_cost == 16 * 5
    assert visits <= 10 * 16 + 1  # each level's nodes once: ?:, ==, select, index, its map, device, two literals
