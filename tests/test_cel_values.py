"""Quantity and semver behave like Kubernetes' CEL libraries (apimachinery Quantity, blang/semver)."""

from fractions import Fraction

import pytest

from kubectl_gpu.cel import CelRuntimeError
from kubectl_gpu.dra.devices import make_device
from kubectl_gpu.dra.values import InvalidValue, Quantity, Semver
from tests.cel_reference import ENGINES, compile_selector
DEVICE = make_device("gpu.nvidia.com", "gpu-0", attributes={"type": "gpu"}, capacity={"memory": "80Gi"})


def evaluate(expression: str, engine: str) -> bool:
    return compile_selector(expression, engine).matches(DEVICE)


@pytest.mark.parametrize(
    "text, value",
    [
        ("40Gi", 40 * 2**30),
        ("1.5Gi", 3 * 2**29),
        ("500M", 500 * 10**6),
        ("100m", Fraction(1, 10)),
        ("1e3", 1000),
        ("2E-3", Fraction(2, 1000)),
        ("+7", 7),
        ("-1Ki", -1024),
        ("0.5", Fraction(1, 2)),
    ],
)
def test_quantity_parses_kubernetes_suffixes(text, value):
    assert Quantity.parse(text).value == value


# A bare "Gi" is a quantity (0) to Kubernetes (kubernetes/apimachinery#165); tests/test_quantity.py.
@pytest.mark.parametrize("text", ["", "1GB", "1.2.3", "1 Gi", "abc", "1Gix"])
def test_invalid_quantities_are_rejected_with_kubernetes_message(text):
    with pytest.raises(InvalidValue):
        Quantity.parse(text)
    assert not Quantity.is_valid(text)


def test_quantity_below_nano_rounds_up_like_kubernetes():
    assert Quantity.parse("0.1n").value == Fraction(1, 10**9)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "expression",
    [
        "quantity('1Gi') == quantity('1024Mi')",
        "quantity('1Gi').compareTo(quantity('1G')) == 1",
        "quantity('1G').compareTo(quantity('1Gi')) == -1",
        "quantity('1k').compareTo(quantity('1000')) == 0",
        "quantity('2Gi').isGreaterThan(quantity('1Gi'))",
        "quantity('1Gi').isLessThan(quantity('2Gi'))",
        "!quantity('1Gi').isLessThan(quantity('1Gi'))",
        "quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')",
        "quantity('1Gi').add(1) == quantity('1073741825')",
        "quantity('1Gi').sub(quantity('512Mi')) == quantity('512Mi')",
        "quantity('1Gi').sub(1).asInteger() == 1073741823",
        "quantity('80Gi').asInteger() == 85899345920",
        "quantity('1.5').asApproximateFloat() == 1.5",
        "quantity('100m').isInteger() == false",
        "quantity('5').isInteger()",
        "quantity('-3').sign() == -1 && quantity('0').sign() == 0 && quantity('2m').sign() == 1",
        "isQuantity('10Gi') && !isQuantity('10GB')",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "device.capacity['gpu.nvidia.com'].memory == quantity('80Gi')",
    ],
)
def test_quantity_functions(expression, engine):
    assert evaluate(expression, engine) is True


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "expression, message",
    [
        ("quantity('10GB').sign() == 1", "quantities must match the regular expression"),
        ("quantity('100m').asInteger() == 0", "cannot convert value to integer"),
        ("quantity('1E30').asInteger() == 0", "cannot convert value to integer"),
    ],
)
def test_quantity_errors_are_runtime_errors(expression, message, engine):
    with pytest.raises(CelRuntimeError, match=message):
        evaluate(expression, engine)


@pytest.mark.parametrize(
    "smaller, larger",
    [
        ("1.2.3", "1.2.4"),
        ("1.2.3", "1.10.0"),
        ("1.0.0-alpha", "1.0.0"),
        ("1.0.0-alpha", "1.0.0-alpha.1"),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
        ("1.0.0-beta.2", "1.0.0-beta.11"),
        ("1.0.0-rc.1", "1.0.0"),
    ],
)
def test_semver_precedence(smaller, larger):
    assert Semver.parse(smaller).compare_to(Semver.parse(larger)) == -1
    assert Semver.parse(larger).compare_to(Semver.parse(smaller)) == 1


def test_semver_ignores_build_metadata_and_rejects_loose_forms():
    assert Semver.parse("1.2.3+build.5") == Semver.parse("1.2.3")
    for text in ["1.2", "v1.2.3", "01.2.3", "1.2.x", ""]:
        assert not Semver.is_valid(text)
    assert Semver.parse("v1.2", normalize=True) == Semver.parse("1.2.0")
    assert Semver.parse("01.02.03", normalize=True) == Semver.parse("1.2.3")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "expression",
    [
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('550.54.15').isGreaterThan(semver('535.104.5'))",
        "semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))",
        "semver('1.2.3').compareTo(semver('1.2.3')) == 0",
        "semver('v2', true) == semver('2.0.0')",
        "isSemver('1.2.3') && !isSemver('1.2') && isSemver('1.2', true)",
    ],
)
def test_semver_functions(expression, engine):
    assert evaluate(expression, engine) is True


@pytest.mark.parametrize("engine", ENGINES)
def test_invalid_semver_is_a_runtime_error(engine):
    with pytest.raises(CelRuntimeError, match="No Major.Minor.Patch"):
        evaluate("semver('1.2').major() == 1", engine)
