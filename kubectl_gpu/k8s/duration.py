"""Durations as kubectl reads them: Go's time.ParseDuration, which every kubectl `--timeout`
(rollout status, wait, delete, drain: pflag's DurationVar) uses.

`5m`, `90s`, `1h30m`, `1.5h`, `300ms`, `0`; a sign, several terms of one unit (`1h1h`) and
fractions (`.5s`, `1.s`) as Go allows them.  A bare number other than 0 is refused with Go's
words ("missing unit in duration"), as kubectl refuses `--timeout 90`; `--request-timeout` alone
takes bare seconds (client-go's clientcmd.ParseTimeout), in kubectl_gpu/k8s/options.py.
"""

from __future__ import annotations

# Go's unitMap (time/format.go), in seconds; µ is U+00B5 (micro sign), μ U+03BC (Greek mu).
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                 "h": 3600.0}
_DIGITS = "0123456789"


def parse_duration(text: str) -> float:
    """Seconds, or ValueError with Go's message (`time: missing unit in duration "90"`)."""
    original, rest = text, text
    negative = False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f"time: invalid duration {_quote(original)}")
    seconds = 0.0
    while rest:
        if rest[0] != "." and rest[0] not in _DIGITS:
            raise ValueError(f"time: invalid duration {_quote(original)}")
        whole, rest = _leading_digits(rest)
        fraction = ""
        if rest[:1] == ".":
            fraction, rest = _leading_digits(rest[1:])
            if not whole and not fraction:  # ".s", "-.s": no digits at all
                raise ValueError(f"time: invalid duration {_quote(original)}")
        end = 0
        while end < len(rest) and rest[end] != "." and rest[end] not in _DIGITS:
            end += 1
        if end == 0:
            raise ValueError(f"time: missing unit in duration {_quote(original)}")
        unit, rest = rest[:end], rest[end:]
        if unit not in _UNIT_SECONDS:
            raise ValueError(f"time: unknown unit {_quote(unit)} in duration {_quote(original)}")
        seconds += float(f"{whole or '0'}.{fraction or '0'}") * _UNIT_SECONDS[unit]
    return -seconds if negative else seconds


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
