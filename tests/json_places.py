"""Test helper: a JSON value with another value put at one place in it (malformed-input tests)."""

from __future__ import annotations

import copy
from typing import Any

REMOVED = object()  # as the new value: delete what is at that place


def with_value_at(original: Any, path: tuple[str | int, ...] | str, new: Any, separator: str = ".") -> Any:
    """A deep copy of ``original`` with ``new`` at ``path`` (a tuple of keys and indexes, or a
    string like ``spec.devices.requests.0`` split at ``separator``); an empty path is the whole."""
    steps = tuple(int(s) if s.isdigit() else s for s in path.split(separator)) if isinstance(path, str) else path
    if not steps:
        return new
    value = copy.deepcopy(original)
    holder = value
    for step in steps[:-1]:
        holder = holder[step]
    if new is REMOVED:
        del holder[steps[-1]]
    else:
        holder[steps[-1]] = new
    return value
