"""One quantity parser, as Kubernetes parses quantities.

The vectors are apimachinery's own (k8s.io/apimachinery/pkg/api/resource/quantity_test.go:
TestQuantityParse, TestParseQuantityString, TestQuantityParseEmit, TestInterpretExponentInt32Bounds);
``decQuantity(i, e)`` there is the value i * 10^e. The same parser serves the manifests
(``parse_quantity``) and CEL's ``quantity()`` (``kubectl_gpu.dra.values.Quantity.parse``).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubectl_gpu.dra.values import InvalidValue, Quantity
from kubectl_gpu.dra.quantity import QuantityError, parse_kubernetes_quantity, parse_quantity

MAX_ALLOWED = 2**63 - 1


def dec(i: int, exponent: int) -> Fraction:
    return Fraction(i) * Fraction(10) ** exponent


# TestQuantityParse's table, value for value.
PARSES = [
    ("0", dec(0, 0)), ("0n", dec(0, 0)), ("0u", dec(0, 0)), ("0m", dec(0, 0)), ("0Ki", dec(0, 0)),
    ("0k", dec(0, 0)), ("0Mi", dec(0, 0)), ("0M", dec(0, 0)), ("0Gi", dec(0, 0)), ("0G", dec(0, 0)),
    ("0Ti", dec(0, 0)), ("0T", dec(0, 0)),
    ("1", dec(1, 0)),
    ("1Ki", dec(1024, 0)), ("8Ki", dec(8 * 1024, 0)), ("7Mi", dec(7 * 2**20, 0)), ("6Gi", dec(6 * 2**30, 0)),
    ("5Ti", dec(5 * 2**40, 0)), ("4Pi", dec(4 * 2**50, 0)), ("3Ei", dec(3 * 2**60, 0)),
    ("10Ti", dec(10 * 2**40, 0)), ("100Ti", dec(100 * 2**40, 0)),
    ("5n", dec(5, -9)), ("4u", dec(4, -6)), ("3m", dec(3, -3)), ("9", dec(9, 0)), ("8k", dec(8, 3)),
    ("50k", dec(5, 4)), ("7M", dec(7, 6)), ("6G", dec(6, 9)), ("5T", dec(5, 12)), ("40T", dec(4, 13)),
    ("300T", dec(3, 14)), ("2P", dec(2, 15)), ("1E", dec(1, 18)),
    ("1E-3", dec(1, -3)), ("1e3", dec(1, 3)), ("1E6", dec(1, 6)), ("1e9", dec(1, 9)), ("1E12", dec(1, 12)),
    ("1e15", dec(1, 15)), ("1E18", dec(1, 18)),
    ("1e14", dec(1, 14)), ("1e13", dec(1, 13)), ("100.035k", dec(100035, 0)),
    ("0.001", dec(1, -3)), ("0.0005k", dec(5, -1)), ("0.005", dec(5, -3)), ("0.05", dec(5, -2)),
    ("0.5", dec(5, -1)), ("0.00050k", dec(5, -1)), ("0.00500", dec(5, -3)), ("0.05000", dec(5, -2)),
    ("0.50000", dec(5, -1)), ("0.5e0", dec(5, -1)), ("0.5e-1", dec(5, -2)), ("0.5e-2", dec(5, -3)),
    ("10.035M", dec(10035, 3)),
    ("1.2e3", dec(12, 2)), ("1.3E+6", dec(13, 5)), ("1.40e9", dec(14, 8)), ("1.53E12", dec(153, 10)),
    ("1.6e15", dec(16, 14)), ("1.7E18", dec(17, 17)),
    ("9.01", dec(901, -2)), ("8.1k", dec(81, 2)), ("7.123456M", dec(7123456, 0)),
    ("6.987654321G", dec(6987654321, 0)), ("5.444T", dec(5444, 9)), ("40.1T", dec(401, 11)),
    ("300.2T", dec(3002, 11)), ("2.5P", dec(25, 14)), ("1.01E", dec(101, 16)),
    # Things that saturate/round
    ("3.001n", dec(4, -9)), ("1.1E-9", dec(2, -9)), ("0.0000000001", dec(1, -9)),
    ("0.0000000005", dec(1, -9)), ("0.00000000050", dec(1, -9)), ("0.5e-9", dec(1, -9)), ("0.9n", dec(1, -9)),
    ("0.00000012345", dec(124, -9)), ("0.00000012354", dec(124, -9)),
    ("9Ei", Fraction(MAX_ALLOWED)), ("9223372036854775807Ki", Fraction(MAX_ALLOWED)), ("12E", dec(12, 18)),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", dec(10243584, -2)), ("0.5Mi", dec(2**19, 0)), ("0.05Gi", dec(536870912, -1)),
    ("0.025Ti", dec(274877906944, -1)),
    # Things written by trolls
    ("0.000000000001Ki", dec(2, -9)), (".001", dec(1, -3)), (".0001k", dec(100, -3)), ("1.", dec(1, 0)),
    ("1.G", dec(1, 9)),
]

# TestQuantityParse's invalid list (an exponent past the int32 scale is refused, not truncated;
# no space is trimmed).
REFUSED = ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e4294967297",
           " 1", "1 ", "Non-Numeric"]


@pytest.mark.parametrize(("text", "value"), PARSES)
def test_kubernetes_parses_every_upstream_vector_with_either_sign(text, value):
    assert parse_kubernetes_quantity(text) == value
    assert parse_kubernetes_quantity("+" + text) == value
    assert parse_kubernetes_quantity("-" + text) == -value
    assert Quantity.parse(text).value == value


@pytest.mark.parametrize("text", REFUSED)
def test_kubernetes_refuses_every_upstream_invalid_vector(text):
    with pytest.raises(QuantityError):
        parse_kubernetes_quantity(text)
    assert not Quantity.is_valid(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("aoeu", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ("1.1.M", "quantities must match the regular expression"),
        ("0.1mi", "unable to parse quantity's suffix"),
        ("1e4294967297", "unable to parse quantity's suffix"),
        # Only the inf.Dec path reads the number's text, and it needs one digit ("no digits read").
        (".Ei", "unable to parse numeric part of quantity"),
        (".e-10", "unable to parse numeric part of quantity"),
    ],
)
def test_cel_quantity_errors_are_apimachinerys(text, message):
    with pytest.raises(InvalidValue) as err:
        Quantity.parse(text)
    assert str(err.value).startswith(message)


def test_a_number_with_no_digit_is_zero_where_kubernetes_reads_it_as_zero():
    # TestParseQuantityString: "." and "-." scan as the number 0; the int64 fast path then gives 0.
    # A bare unit ("k", "u") is a quantity too: kubernetes/apimachinery#165, closed unchanged.
    for text in (".", "-.", "+", "-", "Ki", "Gi", ".Ti", "m", "k", "u"):
        assert parse_kubernetes_quantity(text) == 0


def test_exponents_at_the_int32_bounds():
    # TestInterpretExponentInt32Bounds: [-MaxInt32, MaxInt32] is accepted, one past it is not.
    assert parse_kubernetes_quantity("1E-2147483647") == dec(1, -9)  # rounded up to 1n
    assert parse_kubernetes_quantity("0E2147483647") == 0
    for text in ("1E2147483648", "1E-2147483648", "1E9223372036854775808"):
        with pytest.raises(QuantityError):
            parse_kubernetes_quantity(text)


@pytest.mark.parametrize(("text", "value"), [("1Ki", 1024), (".001Ki", dec(1024, -3)), (".000000000001Ki", dec(2, -9))])
def test_binary_fractions_round_up_to_nano_units(text, value):
    # TestQuantityParseEmit: ".000000000001Ki" is emitted as "2n".
    assert parse_kubernetes_quantity(text) == value


def test_manifest_values_are_trimmed_as_the_api_server_unmarshals_them():
    # Quantity.UnmarshalJSON: ParseQuantity(strings.TrimSpace(value)).
    assert parse_quantity(" 500m ") == dec(5, -1)
    assert parse_quantity(0.5) == dec(5, -1)
    assert parse_quantity(2) == 2
    assert parse_quantity("1e-10") == dec(1, -9)


@pytest.mark.parametrize("value", ["9Ei", "12E", 2**63, "1e19", "1e99999999"])
def test_manifest_values_beyond_int64_are_refused_with_what_to_change(value):
    with pytest.raises(QuantityError, match=r"larger than any quantity Kubernetes holds \(2\^63-1\)"):
        parse_quantity(value)


@pytest.mark.parametrize("value", ["10GB", "1 Gi", True, float("nan"), "١"])
def test_manifest_non_quantities_name_the_examples(value):
    with pytest.raises(QuantityError, match="is not a quantity"):
        parse_quantity(value)


def test_quantity_fields_of_objects_read_as_the_api_server_unmarshals_them():
    # A claim written by hand (`explain -f claim.yaml`) reaches the scheduler through
    # Quantity.UnmarshalJSON, which trims; CEL's quantity() does not.
    assert Quantity.read(" 40Gi ").value == 40 * 2**30
    assert Quantity.read(0.5).value == dec(5, -1)
    with pytest.raises(InvalidValue):
        Quantity.parse(" 40Gi ")
