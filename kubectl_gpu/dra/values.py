"""Kubernetes' CEL value types for DRA: ``Quantity`` and ``Semver``.

Both are plain immutable Python objects shared by the cel-python path and the fast path, so the
two evaluate to identical results.  Semantics follow ``k8s.io/apimachinery/pkg/api/resource``
(Quantity, exact arithmetic, nano precision) and ``github.com/blang/semver/v4`` (Semver), which
Kubernetes' CEL libraries wrap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from .quantity import FORMAT_ERROR, QuantityError, format_bytes, parse_kubernetes_quantity

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_NANO = Fraction(1, 10**9)


class InvalidValue(ValueError):
    """A value CEL cannot use (bad quantity or version text, integer overflow...); the message is
    the one Kubernetes returns, so it can be shown to people as the scheduler would."""


@dataclass(frozen=True, eq=False)
class Quantity:
    """A Kubernetes resource.Quantity: an exact rational value (nano precision, rounded up)."""

    value: Fraction
    text: str

    @classmethod
    def parse(cls, text: str) -> "Quantity":
        """CEL's ``quantity(text)``: resource.ParseQuantity (dra/quantity.py), its errors word for word."""
        if not isinstance(text, str):
            raise InvalidValue(FORMAT_ERROR)
        try:
            return cls(parse_kubernetes_quantity(text), text)
        except QuantityError as err:
            raise InvalidValue(err.reason) from None

    @classmethod
    def read(cls, value: object) -> "Quantity":
        """A quantity field of an API object (a capacity, a claim's request, a request policy) as
        the API server unmarshals it: text trimmed (Quantity.UnmarshalJSON), a YAML number as
        written."""
        return cls.parse(value.strip() if isinstance(value, str) else str(value))

    @classmethod
    def of(cls, value: Fraction) -> "Quantity":
        """A computed quantity (a sum, a rounded request), written as people read quantities."""
        return cls(value, _format(value))

    @staticmethod
    def is_valid(text: object) -> bool:
        try:
            Quantity.parse(text)  # type: ignore[arg-type]
        except InvalidValue:
            return False
        return True

    # CEL methods (k8s.io/apiserver/pkg/cel/library/quantity.go)
    def compare_to(self, other: "Quantity") -> int:
        a, b = self.value, other.value
        if a.denominator == 1 and b.denominator == 1:  # whole numbers: compare the ints, not Fractions
            a, b = a.numerator, b.numerator
        return (a > b) - (a < b)

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def is_integer(self) -> bool:
        value = self.value
        return value.denominator == 1 and INT64_MIN <= value.numerator <= INT64_MAX

    def as_integer(self) -> int:
        if not self.is_integer():
            raise InvalidValue("cannot convert value to integer")
        return int(self.value)

    def as_approximate_float(self) -> float:
        return float(self.value)

    def add(self, other: "Quantity | int") -> "Quantity":
        delta = other.value if isinstance(other, Quantity) else Fraction(other)
        return Quantity.of(self.value + delta)

    def sub(self, other: "Quantity | int") -> "Quantity":
        delta = other.value if isinstance(other, Quantity) else Fraction(other)
        return Quantity.of(self.value - delta)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


def _format(value: Fraction) -> str:
    """A canonical-enough rendering for computed quantities (display only)."""
    if value.denominator == 1:
        return format_bytes(value)
    nanos = value / _NANO
    return f"{int(nanos)}n"


_SEMVER_IDENT = re.compile(r"^[0-9A-Za-z-]+$")


@dataclass(frozen=True, eq=False)
class Semver:
    """A semantic version (SemVer 2.0, as github.com/blang/semver/v4 parses it)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str | int, ...]
    build: tuple[str, ...]
    text: str

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> "Semver":
        if not isinstance(text, str):
            raise InvalidValue("Version string empty")
        source = _normalize(text) if normalize else text
        if not source:
            raise InvalidValue("Version string empty")
        parts = source.split(".", 2)
        if len(parts) != 3:
            raise InvalidValue("No Major.Minor.Patch elements found")
        major_text, minor_text, rest = parts
        numbers = []
        for label, part in (("major", major_text), ("minor", minor_text)):
            numbers.append(_semver_number(label, part))
        build: tuple[str, ...] = ()
        pre: tuple[str | int, ...] = ()
        patch_text = rest
        if "+" in patch_text:
            patch_text, build_text = patch_text.split("+", 1)
            build = tuple(build_text.split("."))
            for item in build:
                if not item or not _SEMVER_IDENT.match(item):
                    raise InvalidValue(f"Invalid character(s) found in build meta data {item!r}")
        if "-" in patch_text:
            patch_text, pre_text = patch_text.split("-", 1)
            items: list[str | int] = []
            for item in pre_text.split("."):
                if not item:
                    raise InvalidValue("Prerelease is empty")
                if item.isdigit():
                    if len(item) > 1 and item.startswith("0"):
                        raise InvalidValue(f"Numeric PreRelease version must not contain leading zeroes {item!r}")
                    items.append(int(item))
                elif _SEMVER_IDENT.match(item):
                    items.append(item)
                else:
                    raise InvalidValue(f"Invalid character(s) found in prerelease {item!r}")
            pre = tuple(items)
        numbers.append(_semver_number("patch", patch_text))
        return cls(numbers[0], numbers[1], numbers[2], pre, build, text)

    @staticmethod
    def is_valid(text: object, normalize: bool = False) -> bool:
        try:
            Semver.parse(text, normalize)  # type: ignore[arg-type]
        except InvalidValue:
            return False
        return True

    def compare_to(self, other: "Semver") -> int:
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        # A pre-release sorts before the release; build metadata never matters.
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre):
            if a == b:
                continue
            if isinstance(a, int) and isinstance(b, int):
                return 1 if a > b else -1
            if isinstance(a, int):
                return -1
            if isinstance(b, int):
                return 1
            return 1 if a > b else -1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare_to(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def _semver_number(label: str, text: str) -> int:
    if not text or not text.isdigit() or not text.isascii():
        raise InvalidValue(f"Invalid character(s) found in {label} number {text!r}")
    if len(text) > 1 and text.startswith("0"):
        raise InvalidValue(f"{label.capitalize()} number must not contain leading zeroes {text!r}")
    return int(text)


def _normalize(text: str) -> str:
    """Kubernetes' normalizeAndParse: drop a "v" prefix, pad to x.y.z, drop leading zeros."""
    text = text[1:] if text.startswith("v") else text
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            if not trimmed or not trimmed[0].isdigit():
                trimmed = "0" + trimmed
            parts[i] = trimmed
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise InvalidValue("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)
