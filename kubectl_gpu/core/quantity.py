"""Kubernetes resource quantities, exactly (no floats): "500m", "0.5", "16Gi", 2, 0.5."""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


class QuantityError(ValueError):
    pass


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity as the API server would; raise QuantityError saying what is wrong."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            # YAML `.nan`/`.inf` (or a number too large for a float, like 1e400): no quantity.
            raise QuantityError(f"{value!r} is not a quantity (examples: 1, 500m, 0.5, 16Gi)")
        # YAML turns `0.5` into a float; its decimal text is what the user wrote.
        return _bounded(Fraction(repr(value)), repr(value))
    if isinstance(value, int):
        return _bounded(Fraction(value), str(value))
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"{text!r} is not a quantity (examples: 1, 500m, 0.5, 16Gi)")
    number, exponent, suffix = match.groups()
    amount = Fraction(number)
    if exponent:
        power = int(exponent[1:]) if len(exponent) <= _MAX_EXPONENT_DIGITS else None
        if amount == 0:
            return Fraction(0)
        if power is None or power > _MAX_EXPONENT:
            if power is None and exponent[1] == "-":
                return _NANO if amount > 0 else -_NANO
            raise QuantityError(f"{text!r} is larger than any quantity Kubernetes holds (2^63-1)")
        if power < -_MAX_EXPONENT:
            # Kubernetes rounds a quantity finer than its smallest unit up to that unit.
            return _NANO if amount > 0 else -_NANO
        return _bounded(amount * Fraction(10) ** power, text)
    if suffix in _BINARY:
        return _bounded(amount * _BINARY[suffix], text)
    return _bounded(amount * _DECIMAL[suffix or ""], text)


# Kubernetes quantities are int64 multiples of a nano unit at most (resource.Quantity): bounding
# the exponent keeps `1e99999999` from computing a number with a hundred million digits.
_INT64_MAX = 2**63 - 1
_NANO = Fraction(1, 10**9)
_MAX_EXPONENT = 40
_MAX_EXPONENT_DIGITS = 6  # the sign and up to 4 digits


def _bounded(amount: Fraction, text: str) -> Fraction:
    if abs(amount) > _INT64_MAX:
        raise QuantityError(f"{text!r} is larger than any quantity Kubernetes holds (2^63-1)")
    return amount


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
