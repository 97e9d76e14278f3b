"""Kubernetes resource quantities, exactly (no floats): "500m", "0.5", "16Gi", 2, 0.5.

One parser for the whole project, faithful to ``resource.ParseQuantity``
(k8s.io/apimachinery/pkg/api/resource/quantity.go and suffix.go): the same scanner, the same
three errors, values finer than a nano unit rounded up (away from zero), binary-suffixed values
capped at 2^63-1. Two faces read it:

* ``parse_kubernetes_quantity(text)``: exactly ``ParseQuantity`` (CEL's ``quantity()``; no space
  trimming); its errors carry the apimachinery message in ``QuantityError.reason``.
* ``parse_quantity(value)``: a value read from a manifest (text, YAML int or float), trimmed as
  ``Quantity.UnmarshalJSON`` trims it, and refused when larger than 2^63-1 (a request that large
  is a mistake; Kubernetes would cap a binary one, keep a decimal one).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXPONENT = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENT = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}

# apimachinery's three parse errors, word for word (CEL shows them as the scheduler would).
FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC_ERROR = "unable to parse numeric part of quantity"
SUFFIX_ERROR = "unable to parse quantity's suffix"

# parseQuantityString as one expression: sign, leading zeros, whole digits, "." and fraction
# digits, suffix letters, then an optional signed exponent. ASCII digits only, and fullmatch:
# Go's scanner refuses a trailing newline that "$" would let through.
_SCAN = re.compile(r"([+-]?)(0*)([0-9]*)(?:(\.)([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[+-]?[0-9]+")
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_NANO = Fraction(1, 10**9)
# A decimal exponent Kubernetes accepts (up to 2^31-1) can describe a number with billions of
# digits; past this one kubectl-gpu refuses to compute it (no request or selector means it).
_LARGEST_EXPONENT_EVALUATED = 4096


class QuantityError(ValueError):
    """A text that is not a quantity: ``str()`` says what to change, ``reason`` is apimachinery's error."""

    def __init__(self, message: str, reason: str = FORMAT_ERROR) -> None:
        super().__init__(message)
        self.reason = reason


def parse_kubernetes_quantity(text: str) -> Fraction:
    """``resource.ParseQuantity(text)``: its value, or QuantityError carrying its error."""
    value, binary = _scan(text)
    if binary and abs(value) > _INT64_MAX:
        return Fraction(_INT64_MAX if value > 0 else -_INT64_MAX)  # "The max is just a simple cap."
    return value


def parse_quantity(value: object) -> Fraction:
    """A quantity as written in a manifest (text, YAML int or float), as the API server reads it;
    raise QuantityError saying what is wrong (also for one larger than 2^63-1)."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, float):
        if not math.isfinite(value):
            # YAML `.nan`/`.inf` (or a number too large for a float, like 1e400): no quantity.
            raise QuantityError(f"{value!r} is not a quantity (examples: 1, 500m, 0.5, 16Gi)")
        text = repr(value)  # YAML turns `0.5` into a float; its decimal text is what the user wrote
    elif isinstance(value, int):
        text = str(value)
    else:
        text = str(value).strip()  # Quantity.UnmarshalJSON trims the text
    try:
        amount, _binary = _scan(text)
    except QuantityError as err:
        if err.reason == _TOO_LARGE:
            raise QuantityError(_larger_than_int64(text), err.reason) from None
        raise QuantityError(f"{text!r} is not a quantity (examples: 1, 500m, 0.5, 16Gi)", err.reason) from None
    if abs(amount) > _INT64_MAX:
        raise QuantityError(_larger_than_int64(text))
    return amount


def _scan(text: str) -> tuple[Fraction, bool]:
    """The value of ``text`` rounded up to whole nano units (not capped), and whether its suffix
    was binary; apimachinery's parseQuantityString, suffixer.interpret and ParseQuantity."""
    match = _SCAN.fullmatch(text) if text else None
    if match is None:
        raise QuantityError(f"{text!r}: {FORMAT_ERROR}", FORMAT_ERROR)
    sign, zeros, whole, _point, fraction, suffix = match.groups()
    fraction = fraction or ""
    binary = suffix in _BINARY_EXPONENT
    if binary:
        exponent = _BINARY_EXPONENT[suffix]
    elif suffix in _DECIMAL_EXPONENT:
        exponent = _DECIMAL_EXPONENT[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix[1:]) and abs(int(suffix[1:])) <= _INT32_MAX:
        exponent = int(suffix[1:])  # strconv.ParseInt, then refused outside the int32 scale
    else:
        raise QuantityError(f"{text!r}: {SUFFIX_ERROR}", SUFFIX_ERROR)
    digits = whole + fraction
    if not zeros and not digits:
        # No digit at all ("-", ".", "Ki"): Kubernetes' int64 fast path reads it as 0, but its
        # inf.Dec path ("no digits read") refuses it: 2^50 and up, or a scale below nano units.
        if (binary and exponent >= 50) or (not binary and exponent < -9):
            raise QuantityError(f"{text!r}: {NUMERIC_ERROR}", NUMERIC_ERROR)
        return Fraction(0), binary
    mantissa = int(digits) if digits else 0
    if mantissa == 0:
        return Fraction(0), binary
    if sign == "-":
        mantissa = -mantissa
    if binary:
        scale = -len(fraction)  # a power of ten; the binary factor is a whole number
        value = Fraction(mantissa * _BINARY[suffix], 10 ** len(fraction))
    else:
        scale = exponent - len(fraction)
        if exponent + len(whole) <= -9:
            # Below 10^(digits before the point + exponent) <= 1n: rounds up to 1n.
            return (-_NANO if mantissa < 0 else _NANO), binary
        if scale > _LARGEST_EXPONENT_EVALUATED:
            raise QuantityError(_larger_than_int64(text), _TOO_LARGE)
        value = Fraction(mantissa * 10**scale) if scale >= 0 else Fraction(mantissa, 10**-scale)
    if scale < -9:
        nanos = value * 10**9
        if nanos.denominator != 1:
            # "rounds non-zero values up to the minimum representable value" (away from zero).
            rounded = math.ceil(abs(nanos))
            value = Fraction(rounded if mantissa > 0 else -rounded, 10**9)
    return value, binary


_TOO_LARGE = f"kubectl-gpu does not evaluate a quantity of 10^{_LARGEST_EXPONENT_EVALUATED} or more"


def _larger_than_int64(text: str) -> str:
    return f"{text!r} is larger than any quantity Kubernetes holds (2^63-1)"


def format_bytes(amount: Fraction | int) -> str:
    """The shortest exact binary-suffixed quantity for a byte count: 4294967296 -> "4Gi"."""
    value = Fraction(amount)
    if value.denominator != 1:
        value = Fraction(int(value) + 1)  # round a fraction of a byte up
    whole = int(value)
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if whole and whole % unit == 0:
            return f"{whole // unit}{suffix}"
    return str(whole)


def format_plain(amount: Fraction) -> str:
    """A number as a person reads it: 2 -> "2", 1/2 -> "0.5"."""
    if amount.denominator == 1:
        return str(amount.numerator)
    return f"{float(amount):g}"
