"""The fast path and cel-python give identical answers: a differential property test over
generated selectors and devices (values, runtime errors and their messages alike).

cel-python is the reference engine (its own interpreter, with Kubernetes' DRA library bound in);
the fast path is what explain runs: one function generated per selector (kubectl_gpu/cel/codegen.py),
which calls the closures of kubectl_gpu/cel/fastpath.py for what it does not write itself, and the
closures alone for macros and cel.bind.  Generated selectors mix what real DRA selectors are made
of: attribute and capacity lookups (present, missing, wrong type, another driver's device without
the domain), comparisons, logic with errors to absorb, has(), macros over lists and list
attributes, cel.bind, arithmetic and library calls.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gpu.cel import CelCompileError, CelRuntimeError
from kubectl_gpu.dra.devices import make_device
from kubectl_gpu.dra.values import Semver
from tests.cel_reference import CELPY, FAST, compile_selector

DOMAIN = "gpu.nvidia.com"
GATES = frozenset({"DRAListTypeAttributes", "DRAConsumableCapacity"})

attribute_values = st.one_of(
    st.sampled_from(["NVIDIA A100", "NVIDIA H100", "gpu", "mig", ""]),
    st.integers(-3, 90),
    st.booleans(),
    st.sampled_from([Semver.parse("550.54.15"), Semver.parse("12.4.0")]),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3),
    st.lists(st.integers(0, 5), min_size=1, max_size=3),
)
NAMES = ["productName", "type", "index", "flag", "driverVersion", "models"]


@st.composite
def devices(draw):
    attributes = {name: draw(attribute_values) for name in NAMES if draw(st.booleans())}
    capacity = {"memory": draw(st.sampled_from(["40Gi", "80Gi", "24Gi"]))} if draw(st.booleans()) else {}
    # another driver's device: its attributes are in its own domain, so gpu.nvidia.com's is missing
    driver = draw(st.sampled_from([DOMAIN, DOMAIN, "other.example.com"]))
    return make_device(driver, "gpu-0", attributes=attributes, capacity=capacity,
                       allow_multiple_allocations=draw(st.booleans()))


def attr(name: str, style: int) -> str:
    if style == 0:
        return f'device.attributes["{DOMAIN}"].{name}'
    if style == 1:
        return f'device.attributes["{DOMAIN}"]["{name}"]'
    return f'cel.bind(d, device.attributes["{DOMAIN}"], d.{name})'


literals = st.sampled_from(['"NVIDIA A100"', '"gpu"', f'"{DOMAIN}"', "1", "0", "90", "true", "false", '"a"', "[1, 2]", '["a", "b"]',
                            "2.5", "3u", 'semver("550.0.0")', 'quantity("40Gi")', "null"])
references = st.builds(attr, st.sampled_from(NAMES + ["missing"]), st.integers(0, 2)) | st.sampled_from([
    "device.driver", "device.allowMultipleAllocations", f'device.capacity["{DOMAIN}"].memory',
    'device.attributes["other.example.com"].x',
])
values = st.one_of(literals, references)


def _binary(op: str):
    return lambda a, b: f"({a} {op} {b})"


def expressions():
    def extend(inner):
        return st.one_of(
            st.builds(_binary("=="), values, values),
            st.builds(_binary("!="), values, values),
            st.builds(_binary("<"), values, values),
            st.builds(_binary(">="), values, values),
            st.builds(_binary("+"), values, values),
            st.builds(_binary("%"), values, values),
            st.builds(_binary("&&"), inner, inner),
            st.builds(_binary("||"), inner, inner),
            st.builds(lambda a: f"!({a})", inner),
            st.builds(lambda c, a, b: f"({c} ? {a} : {b})", inner, values, inner),
            st.builds(lambda a, b: f"({a} in {b})", values, values),
            st.builds(lambda n: f'has(device.attributes["{DOMAIN}"].{n})', st.sampled_from(NAMES)),
            st.builds(lambda m, r, b: f"{r}.{m}(x, {b})",
                      st.sampled_from(["all", "exists", "exists_one", "filter", "map"]),
                      st.sampled_from(["[1, 2, 3]", '["a", "b"]', attr("models", 0), attr("productName", 0), "[0, 1]"]),
                      st.sampled_from(["x == 1", 'x == "a"', "1 / x > 0", "x", "x > 0 || true", "size(x) > 0"])),
            st.builds(lambda v, f: f"{v}.{f}", references,
                      st.sampled_from(['startsWith("NV")', "size() > 3", 'matches("A1")', 'lowerAscii() == "gpu"',
                                       'includes("a")', 'isGreaterThan(semver("1.0.0"))', 'compareTo(quantity("40Gi")) >= 0',
                                       'isLessThan(semver("560.0.0"))', 'isLessThan(quantity("40Gi"))', 'matches("(")',
                                       'compareTo(semver("12.4.0")) == 0', 'lowerAscii().matches("^nvidia a")'])),
            st.builds(lambda v: f"int({v}) > 0", values),
            st.builds(lambda v: f'string({v}) == "1"', values),
        )

    return st.recursive(extend(values), extend, max_leaves=6)


def outcome(selector, device):
    try:
        return selector.matches(device)
    except CelRuntimeError as err:
        return f"error: {err.message}"


def verdict(value):
    return f"error: {value.message}" if isinstance(value, CelRuntimeError) else value


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=expressions(), device_list=st.lists(devices(), min_size=1, max_size=3))
def test_fast_path_and_cel_python_agree(expression, device_list):
    try:
        fast = compile_selector(expression, FAST, gates=GATES, stored=True)
    except CelCompileError:
        return  # the compile check is shared by both engines
    reference = compile_selector(expression, CELPY, gates=GATES, stored=True)
    expected = [outcome(reference, device) for device in device_list]
    for device, wanted in zip(device_list, expected):
        assert outcome(fast, device) == wanted, (expression, device)
    # every device in one call (what explain runs: kubectl_gpu/cel/codegen.py's every())
    assert [verdict(v) for v in fast.verdicts(device_list)] == expected, expression
