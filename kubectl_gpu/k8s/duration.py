"""Durations as kubectl reads them: Go's time.ParseDuration, which every kubectl `--timeout`
(rollout status, wait, delete, drain: pflag's DurationVar) uses.

`5m`, `90s`, `1h30m`, `1.5h`, `300ms`, `0`; a sign, several terms of one unit (`1h1h`) and
fractions (`.5s`, `1.s`) as Go allows them.  A bare number other than 0 is refused with Go's
words ("missing unit in duration"), as kubectl refuses `--timeout 90`; `--request-timeout` alone
takes bare seconds (client-go's clientcmd.ParseTimeout), in kubectl_gpu/k8s/options.py.
"""

from __future__ import annotations

# Go's unitMap (time/format.go), in nanoseconds; µ is U+00B5 (micro sign), μ U+03BC (Greek mu).
_UNIT_NANOSECONDS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9,
                     "m": 60 * 10**9, "h": 3600 * 10**9}
_DIGITS = "0123456789"
# A Go Duration is an int64 of nanoseconds: ParseDuration refuses a value beyond it ("invalid
# duration"), so no timeout here is infinite or too large for a timer (about 292 years at most).
_LIMIT = 1 << 63


def parse_duration(text: str) -> float:
    """Seconds, or ValueError with Go's message (`time: missing unit in duration "90"`).  Counted in
    whole nanoseconds with Go's overflow checks (golang/go src/time/format.go ParseDuration)."""
    original, rest = text, text
    negative = False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0.0
    invalid = ValueError(f"time: invalid duration {_quote(original)}")
    if not rest:
        raise invalid
    total = 0
    while rest:
        if rest[0] != "." and rest[0] not in _DIGITS:
            raise invalid
        whole, rest = _leading_digits(rest)
        fraction = ""
        if rest[:1] == ".":
            fraction, rest = _leading_digits(rest[1:])
            if not whole and not fraction:  # ".s", "-.s": no digits at all
                raise invalid
        end = 0
        while end < len(rest) and rest[end] != "." and rest[end] not in _DIGITS:
            end += 1
        if end == 0:
            raise ValueError(f"time: missing unit in duration {_quote(original)}")
        unit, rest = rest[:end], rest[end:]
        if unit not in _UNIT_NANOSECONDS:
            raise ValueError(f"time: unknown unit {_quote(unit)} in duration {_quote(original)}")
        value = int(whole or "0")
        if value > _LIMIT // _UNIT_NANOSECONDS[unit]:  # leadingInt's and the unit's overflow
            raise invalid
        value *= _UNIT_NANOSECONDS[unit]
        numerator, scale = _leading_fraction(fraction)
        if numerator:
            value += int(float(numerator) * (float(_UNIT_NANOSECONDS[unit]) / scale))
            if value > _LIMIT:
                raise invalid
        total += value
        if total > _LIMIT:
            raise invalid
    if not negative and total > _LIMIT - 1:
        raise invalid
    return (-total if negative else total) / 1e9


def _leading_fraction(digits: str) -> tuple[int, float]:
    """Go's leadingFraction: the digits as an integer and their scale, precision dropped (not an
    error) once another digit would overflow."""
    value, scale = 0, 1.0
    for digit in digits:
        if value > (_LIMIT - 1) // 10 or value * 10 + int(digit) > _LIMIT:
            break
        value, scale = value * 10 + int(digit), scale * 10
    return value, scale


def _leading_digits(text: str) -> tuple[str, str]:
    end = 0
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return text[:end], text[end:]


def _quote(text: str) -> str:
    """Go's strconv.Quote for the texts a person types (a backslash or quote escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_duration(seconds: float) -> str:
    """Go's Duration.String for whole seconds, as kubectl shows a default (`5m0s`, `1h30m0s`, `30s`)."""
    whole = int(seconds)
    if whole != seconds or whole <= 0:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
