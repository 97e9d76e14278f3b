"""DRA selectors evaluate like Kubernetes: qualified names, missing attributes are errors, errors
are absorbed commutatively, compile errors carry positions.  Both engines must agree."""

import pytest

from kubectl_gpu.cel import CelCompileError, CelRuntimeError
from kubectl_gpu.dra.devices import devices_from_slice, InvalidResourceSlice, make_device
from kubectl_gpu.dra.values import Semver
from tests.cel_reference import CELPY, ENGINES, FAST, compile_selector

SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-a-gpu"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "node-a",
        "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "productName": {"string": "NVIDIA H100 80GB HBM3"},
                    "type": {"string": "gpu"},
                    "driverVersion": {"version": "570.133.20"},
                    "gpu.nvidia.com/architecture": {"string": "Hopper"},
                    "example.com/rack": {"int": 7},
                    "example.com/healthy": {"bool": True},
                },
                "capacity": {"memory": {"value": "80Gi"}, "example.com/slots": {"value": "4"}},
            }
        ],
    },
}


@pytest.fixture(scope="module")
def device():
    (only,) = devices_from_slice(SLICE)
    return only


def run(expression, device, engine):
    return compile_selector(expression, engine).matches(device)


def test_slice_names_map_to_domains_like_kubernetes(device):
    assert device.id == "gpu.nvidia.com/node-a/gpu-0"
    assert device.node_name == "node-a"
    # unqualified and driver-qualified names land in the driver's domain; others in their own
    assert set(device.attributes) == {"gpu.nvidia.com", "example.com"}
    assert device.attributes["gpu.nvidia.com"]["architecture"] == "Hopper"
    assert device.attributes["gpu.nvidia.com"]["driverVersion"] == Semver.parse("570.133.20")
    assert device.capacity["example.com"]["slots"].value == 4


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "expression, expected",
    [
        ("device.driver == 'gpu.nvidia.com'", True),
        ("device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'", True),
        ("device.attributes['gpu.nvidia.com'].architecture == 'Hopper'", True),
        ("device.attributes['gpu.nvidia.com']['type'] == 'gpu'", True),
        ("device.attributes['example.com'].rack == 7", True),
        ("device.attributes['example.com'].rack > 5 && device.attributes['example.com'].healthy", True),
        ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", True),
        ("device.attributes['gpu.nvidia.com'].driverVersion == semver('570.133.20')", True),
        ("device.capacity['example.com'].slots.asInteger() == 4", True),
        ("device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'", False),
        # heterogeneous equality: a string attribute compared with an int is simply unequal
        ("device.attributes['gpu.nvidia.com'].productName == 1", False),
        ("device.attributes['gpu.nvidia.com'].productName != 1", True),
        ("'gpu.nvidia.com' in device.attributes", True),
        ("'other.com' in device.attributes", False),
        ("device.attributes['gpu.nvidia.com'].productName in ['NVIDIA A100', 'NVIDIA H100 80GB HBM3']", True),
        ("device.allowMultipleAllocations == false", True),
        ("device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*h100.*$')", True),
        ("device.attributes['gpu.nvidia.com'].productName.upperAscii().startsWith('NVIDIA H')", True),
        ("device.attributes['gpu.nvidia.com'].productName.split(' ')[1] == 'H100'", True),
        ("device.attributes['gpu.nvidia.com'].productName.replace('NVIDIA ', '') == 'H100 80GB HBM3'", True),
        ("device.attributes['gpu.nvidia.com'].productName.indexOf('H100') == 7", True),
        ("device.attributes['gpu.nvidia.com'].productName.lastIndexOf('H') == 17", True),
        ("device.attributes['gpu.nvidia.com'].productName.substring(7, 11) == 'H100'", True),
        ("device.attributes['gpu.nvidia.com'].productName.charAt(0) == 'N'", True),
        ("' x '.trim() == 'x' && ['a', 'b'].join('-') == 'a-b' && 'abc'.contains('b')", True),
        ("device.attributes['gpu.nvidia.com'].productName.find('[0-9]+GB') == '80GB'", True),
        ("device.attributes['gpu.nvidia.com'].productName.endsWith('HBM3') ? true : false", True),
        ("[3, 1, 2].max() == 3 && [1, 2, 3].isSorted() && [1, 2].sum() == 3", True),
        ("[3, 1, 2].min() == 1 && ['b', 'a', 'c'].min() == 'a' && ['b', 'c', 'a'].max() == 'c'", True),
        # beyond the fast path: macros, has(), arithmetic run on cel-python
        ("has(device.attributes['gpu.nvidia.com'].productName)", True),
        ("has(device.attributes['gpu.nvidia.com'].index)", False),
        ("device.attributes['gpu.nvidia.com'].exists(k, k == 'productName')", True),
        ("device.attributes['example.com'].rack + 1 == 8", True),
    ],
)
def test_selector_values(expression, expected, device, engine):
    assert run(expression, device, engine) is expected


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "expression, message",
    [
        # the NVIDIA driver removed index/minor in v25.8.0: selecting on them fails, it does not "not match"
        ("device.attributes['gpu.nvidia.com'].index == 0", "no such key: index"),
        ("device.attributes['gpu.nvidia.com']['minor'] == 0", "no such key: minor"),
        ("device.capacity['gpu.nvidia.com'].cores.isGreaterThan(quantity('1'))", "no such key: cores"),
        # a domain nobody publishes is an empty map, so the attribute lookup fails the same way
        ("device.attributes['nvidia.com'].productName == 'x'", "no such key: productName"),
        ("true && device.attributes['gpu.nvidia.com'].index == 0", "no such key: index"),
        ("device.attributes['gpu.nvidia.com'].productName < 3", "no such overload"),
        ("device.attributes['gpu.nvidia.com'].productName", "could not be converted to bool"),
        ("[].min() == 0", "min called on empty list"),
        ("[].max() == 0", "max called on empty list"),
        ("['a', 1].min() == 'a'", "no such overload: min"),  # cel-python's own min() macro would raise TypeError
    ],
)
def test_runtime_errors_are_errors_not_mismatches(expression, message, device, engine):
    with pytest.raises(CelRuntimeError, match=message):
        run(expression, device, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "expression, expected",
    [
        ("false && device.attributes['gpu.nvidia.com'].index == 0", False),
        ("device.attributes['gpu.nvidia.com'].index == 0 && false", False),
        ("true || device.attributes['gpu.nvidia.com'].index == 0", True),
        ("device.attributes['gpu.nvidia.com'].index == 0 || true", True),
        ("device.driver != 'gpu.nvidia.com' && device.attributes['x'].y == 1", False),
    ],
)
def test_logical_operators_absorb_errors_commutatively(expression, expected, device, engine):
    assert run(expression, device, engine) is expected


@pytest.mark.parametrize(
    "expression, message, position",
    [
        ("device.atributes['gpu.nvidia.com'].type == 'gpu'", "undefined field 'atributes'", (1, 8)),
        ("devices.driver == 'x'", "undeclared reference to 'devices'", (1, 1)),
        ("device.driver.lowerascii() == 'x'", "undeclared reference to 'lowerascii'", (1, 15)),
        ("device.driver == 1", "found no matching overload for '_==_' applied to '(string, int)'", (1, 15)),
        ("device.capacity['d'].memory > quantity('1Gi')", "no matching overload for '_>_'", (1, 29)),
        ("device.capacity['d'].memory.compareTo('1Gi') > 0", "compareTo", (1, 29)),
        ("device.driver", "must evaluate to bool", None),
        ("device.driver ==\n  'a' &&\n  nosuch('x')", "undeclared reference to 'nosuch'", (3, 3)),
        ("device.driver == 'a' &&", "Syntax error", (1, 22)),
    ],
)
def test_compile_errors_carry_kubernetes_message_and_position(expression, message, position):
    with pytest.raises(CelCompileError) as caught:
        compile_selector(expression)
    assert message in caught.value.message
    assert caught.value.position == position
    if position:
        assert f"<input>:{position[0]}:{position[1]}:" in str(caught.value)


def test_compile_once_evaluate_many_prefers_the_fast_path(device):
    selector = compile_selector("device.attributes['gpu.nvidia.com'].productName.matches('H100')")
    assert selector.engine == FAST
    assert compile_selector(selector.expression) is selector  # compiled once
    assert all(selector.matches(device) for _ in range(3))


def test_engines_agree_on_many_devices():
    devices = [
        make_device(
            "gpu.nvidia.com",
            f"gpu-{i}",
            attributes={"type": "gpu" if i % 3 else "mig", "productName": ["NVIDIA H100", "NVIDIA A100", "Tesla T4"][i % 3],
                        **({"profile": "1g.5gb"} if i % 3 == 0 else {}), "gpu.nvidia.com/index": i} if i % 5 else
                       {"type": "gpu"},
            capacity={"memory": f"{(i % 4 + 1) * 20}Gi"},
        )
        for i in range(30)
    ] + [make_device("other.example.com", "dev-0", attributes={"model": "x"})]
    expressions = [
        "device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
        "device.attributes['gpu.nvidia.com'].profile == '1g.5gb' || device.attributes['gpu.nvidia.com'].type == 'gpu'",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0 && device.attributes['gpu.nvidia.com'].index < 20",
        "!(device.attributes['gpu.nvidia.com'].productName in ['Tesla T4']) ? device.attributes['gpu.nvidia.com'].index % 2 == 0 : false",
        "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('a100')",
    ]
    for expression in expressions:
        outcomes = {}
        for engine in ENGINES:
            results = []
            for device in devices:
                try:
                    results.append(compile_selector(expression, engine).matches(device))
                except CelRuntimeError as err:
                    results.append(f"error: {err.message}")
            outcomes[engine] = results
        assert outcomes[FAST] == outcomes[CELPY], expression


def test_v1beta1_and_v1alpha3_slices_unwrap_basic():
    slice_obj = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlice",
        "metadata": {"name": "imex"},
        "spec": {"driver": "gpu.nvidia.com", "pool": {"name": "imex"}, "nodeSelector": {"nodeSelectorTerms": []},
                 "devices": [{"name": "imex-channel-0", "basic": {"attributes": {"channel": {"int": 0}}, "capacity": {"slots": "2"}}}]},
    }
    (device,) = devices_from_slice(slice_obj)
    assert device.attributes["gpu.nvidia.com"]["channel"] == 0
    assert device.capacity["gpu.nvidia.com"]["slots"].value == 2
    assert device.node_name is None and "selected" in device.node_scope


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: s.update(kind="DeviceClass"), "expected a resource.k8s.io ResourceSlice"),
        (lambda s: s["spec"].pop("driver"), "spec.driver is missing"),
        (lambda s: s["spec"]["devices"][0]["attributes"].update(bad={"float": 1.5}), "bad: float"),
        (lambda s: s["spec"]["devices"][0]["attributes"].update(v={"version": "1.2"}), "not semantic versioning"),
        (lambda s: s["spec"]["devices"][0]["capacity"].update(memory={"value": "80 GB"}), "capacity.memory"),
        # Fields of the wrong type (the resource.k8s.io schema gives each one type; files are not validated):
        (lambda s: s.update(metadata="node-a-gpu"), "metadata must be a map"),
        (lambda s: s["spec"].update(pool="node-a"), "spec.pool must be a map"),
        (lambda s: s["spec"]["devices"][0].update(attributes=["productName"]), r"spec.devices\[0\].attributes must be a map"),
        (lambda s: s["spec"]["devices"][0].update(capacity="80Gi"), r"spec.devices\[0\].capacity must be a map"),
    ],
)
def test_bad_slices_say_what_to_fix(mutate, message):
    import copy

    broken = copy.deepcopy(SLICE)
    mutate(broken)
    with pytest.raises(InvalidResourceSlice, match=message):
        devices_from_slice(broken)


from hypothesis import given, settings, strategies as st

_PIECES = st.sampled_from([
    "device", ".", "driver", "attributes", "capacity", "['gpu.nvidia.com']", ".productName", ".index", "==", "!=",
    "<", "&&", "||", "!", "(", ")", "'x'", "1", "2.5", "true", "null", "quantity('1Gi')", ".compareTo(", "semver('1.0.0')",
    ".lowerAscii()", ".matches('a')", "[", "]", ",", "in", "?", ":", "has(", "-", "+", " ", "\n", "\\", "'", "\"",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_any_text_compiles_or_fails_with_a_compile_error_and_never_crashes(text):
    device = make_device("gpu.nvidia.com", "gpu-0", attributes={"productName": "x"}, capacity={"memory": "1Gi"})
    try:
        selector = compile_selector(text)
    except CelCompileError as err:
        assert err.message
        return
    try:
        assert selector.matches(device) in (True, False)
    except CelRuntimeError as err:
        assert err.message


def test_an_operator_type_error_without_a_known_position_is_still_a_clear_compile_error():
    # Found by the property test above: the parser gives some operator nodes no line/column.
    with pytest.raises(CelCompileError) as caught:
        compile_selector("true-device")
    assert "no matching overload for '_-_'" in caught.value.message
    assert str(caught.value).startswith("compilation failed:")


# --- one engine: what the closures do not compile never gets past the checker ----------------


@pytest.mark.parametrize("expression, message", [
    ("x == 1", "undeclared reference to 'x'"),
    ("[1].all(x, y > 0)", "undeclared reference to 'y'"),
    ("device.name == 'gpu-0'", "undefined field 'name'"),
    ("device.driver.reverse() == 'x'", "undeclared reference to 'reverse'"),
    ("uuid('x') == 'y'", "undeclared reference to 'uuid'"),
])
def test_what_no_closure_compiles_is_refused_at_compile_time(expression, message):
    """An unknown identifier, device field or function (the three shapes the closures do not
    compile, once left to cel-python) is a compile error, as the API server's type check makes it."""
    with pytest.raises(CelCompileError) as refused:
        compile_selector(expression)
    assert message in str(refused.value)


def test_every_name_the_checker_declares_has_its_closure():
    from kubectl_gpu.cel import checker, lib
    from kubectl_gpu.cel.fastpath import compile_fast
    from kubectl_gpu.cel.quick_parser import parse_quick

    assert set(checker.METHODS) | set(checker.FUNCTIONS) <= set(lib.FUNCTIONS)
    for field in checker.NEWEST.device_fields:  # the newest environment declares every field
        ast = parse_quick(f"device.{field} == device.{field}")
        assert ast is not None and callable(compile_fast(ast, checker.NEWEST))  # no Unsupported
