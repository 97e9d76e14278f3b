"""Selectors generated as one Python function (kubectl_gpu/cel/codegen.py) answer as cel-python
does, also where the generated code leaves a subtree to its closure: past its nesting limit, and
for the shapes it does not write itself.  tests/test_cel_differential.py holds the whole fast path
to cel-python; these cases pin the seams between generated code and closures."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.cel import CelCompileError, compile_selector
from kubectl_gpu.dra.devices import make_device
from kubectl_gpu.cel import codegen
from kubectl_gpu.cel.checker import NEWEST
from kubectl_gpu.cel.cost import MAX_COST
from kubectl_gpu.cel.quick_parser import parse_quick
from tests.cel_reference import CELPY
from tests.cel_reference import compile_selector as compile_on
from tests.test_cel_differential import DOMAIN, GATES, devices, expressions, outcome, verdict

EVERYDAY = [
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('h100')",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
    "has(device.attributes['gpu.nvidia.com'].index) && device.attributes['gpu.nvidia.com'].index in [0, 1]",
    "device.attributes['gpu.nvidia.com']['productName'] != 'NVIDIA A100' || !device.allowMultipleAllocations",
]


def _generated(expression):
    return codegen.generate(parse_quick(expression), NEWEST, MAX_COST)


@pytest.mark.parametrize("expression", EVERYDAY)
def test_everyday_selectors_are_one_generated_function(expression):
    assert _generated(expression) is not None


@pytest.mark.parametrize("expression", [
    "device.attributes['gpu.nvidia.com'].models.exists(m, m == 'a')",
    "cel.bind(d, device.attributes['gpu.nvidia.com'], d.type == 'gpu')",
])
def test_macros_and_bind_stay_on_the_closures(expression):
    # their variables live in a frame the closures carry, with the macros' run-time cost
    assert _generated(expression) is None


DEVICES = [
    make_device(DOMAIN, "gpu-0", attributes={"type": "gpu", "index": 1}),
    make_device(DOMAIN, "gpu-1", attributes={"type": 3}),  # a wrong-typed value
    make_device(DOMAIN, "gpu-2"),  # no attributes at all
    make_device("other.example.com", "dev-0", attributes={"type": "gpu"}),  # no gpu.nvidia.com domain
]


def _chain(depth, op, leaf):
    expression = leaf
    for i in range(depth):
        expression = f"(device.attributes['{DOMAIN}'].index == {i} {op} {expression})"
    return expression


@pytest.mark.parametrize("expression", [
    _chain(10, "&&", "device.attributes['gpu.nvidia.com'].missing == 1"),
    _chain(10, "||", "device.attributes['gpu.nvidia.com'].type == 'gpu'"),
    _chain(10, "||", "(device.attributes['gpu.nvidia.com'].type == 'gpu' ? 1 : 2) == 1"),
])
def test_nesting_past_the_generated_limit_still_answers_as_cel_python(expression):
    generated = _generated(expression)
    assert generated is not None and "(d, None)" in generated.source  # the deepest part is a closure
    fast = compile_selector(expression, stored=True)
    reference = compile_on(expression, CELPY, stored=True)
    expected = [outcome(reference, d) for d in DEVICES]
    assert [outcome(fast, d) for d in DEVICES] == expected
    assert [verdict(v) for v in fast.verdicts(DEVICES)] == expected


@contextmanager
def nesting_limit(limit):
    original, codegen.MAX_NESTING = codegen.MAX_NESTING, limit
    try:
        yield
    finally:
        codegen.MAX_NESTING = original


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=expressions(), device_list=st.lists(devices(), min_size=1, max_size=3),
       nesting=st.integers(0, 2))
def test_any_nesting_limit_gives_cel_python_answers(expression, device_list, nesting):
    """The same selectors with the limit at 0, 1, 2: every &&, || and ?: below it is its closure,
    called from generated code."""
    try:
        reference = compile_on(expression, CELPY, gates=GATES, stored=True)
    except CelCompileError:
        return  # the checker's, shared by both engines
    ast = parse_quick(expression)
    if ast is None:
        return  # not an everyday shape (left to cel-python's grammar)
    with nesting_limit(nesting):
        generated = codegen.generate(ast, NEWEST, MAX_COST)
    if generated is None:
        return  # macros and cel.bind: the closures, held to cel-python by the differential test
    expected = [outcome(reference, d) for d in device_list]
    assert [verdict(v) for v in generated.every(device_list)] == expected, expression


# Names the generated function uses for itself (device d, locals v1.., constants _k3, its list
# out and error err) as attribute names and map keys, and literals Python would read differently
# were they pasted into the source: each is a constant of the function, never source text.
COLLIDING = make_device(DOMAIN, "gpu-9", attributes={
    "d": "x", "v1": 3, "_k3": "y", "out": True, "err": 1, "text": 'a"b\'c\\n{}%s\u00e9\u212a',
})


@pytest.mark.parametrize("expression", [
    "device.attributes['gpu.nvidia.com'].d == 'x' && device.attributes['gpu.nvidia.com'].v1 == 3",
    "device.attributes['gpu.nvidia.com']['_k3'] == 'y' || device.attributes['gpu.nvidia.com'].out",
    "device.attributes['gpu.nvidia.com'].err + 1 == 2 && {'d': 1, 'out': 2}.out == 2",
    "device.attributes['gpu.nvidia.com'].text == 'a\"b\\'c\\\\n{}%s\\u00e9\\u212a'",
    "device.attributes['gpu.nvidia.com'].text.lowerAscii().startsWith('a\"b')",
    "device.attributes['gpu.nvidia.com'].text.matches('\\\\{\\\\}%s') && !has(device.attributes['gpu.nvidia.com'].v2)",
])
def test_generated_names_and_literals_never_meet_the_selector(expression):
    fast = compile_selector(expression, stored=True)
    reference = compile_on(expression, CELPY, stored=True)
    assert _generated(expression) is not None
    expected = [outcome(reference, d) for d in [COLLIDING, *DEVICES]]
    assert expected[0] is True
    assert [verdict(v) for v in fast.verdicts([COLLIDING, *DEVICES])] == expected
    assert fast.verdicts([]) == []  # no device, no verdict
