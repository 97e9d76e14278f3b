"""cel-go's macro semantics, step by step, for both evaluation paths.

cel-go expands each macro into a comprehension (parser/macro.go) and evaluates it one step per
element of the range (a list's elements, a map's keys; anything else: "got 'types.String',
expected iterable type"):

* ``all(x, p)``: accu = true; continue while accu is not false; accu = accu && p
* ``exists(x, p)``: accu = false; continue while accu is not true; accu = accu || p
* ``exists_one(x, p)``: accu = 0; accu = p ? accu + 1 : accu; result accu == 1
* ``map(x, t)``: accu = []; accu = accu + [t]   (``map(x, p, t)``: p ? accu + [t] : accu)
* ``filter(x, p)``: accu = []; accu = p ? accu + [x] : accu

so an error is absorbed only where ``&&``/``||`` absorb it (``[1, 0].all(i, 1 / i > 0 && false)``
is false), and otherwise surfaces after the loop.  ``body(arg, item, d, f)`` evaluates argument
``arg`` of the macro with the variable bound to ``item`` (``d``, ``f``: the caller's evaluation
context, passed through) and returns its value, or the EvalError it failed with; ``tick(f)``
charges one iteration's cost and raises when the limit is passed.
"""

from __future__ import annotations

from typing import Any, Callable

from . import lib
from .errors import EvalError

Body = Callable[[int, Any, Any, Any], Any]
Tick = Callable[[Any], None]


def _is_bool(value: Any) -> bool:
    return value is True or value is False


def run(kind: str, items: list, arity: int, body: Body, tick: Tick, d: Any = None, f: Any = None) -> Any:
    """The macro's value, or raises its EvalError."""
    if kind == "exists" or kind == "all":
        return _quantifier(kind == "exists", items, body, tick, d, f)
    if kind == "exists_one":
        return _exists_one(items, body, tick, d, f)
    if kind == "filter":
        return _filter(items, body, tick, d, f)
    return _map(items, arity, body, tick, d, f)


def _quantifier(stop: bool, items: list, body: Body, tick: Tick, d: Any, f: Any) -> Any:
    accu: Any = not stop
    for item in items:
        tick(f)
        value = body(0, item, d, f)
        if value is stop:
            return stop
        if isinstance(accu, EvalError):
            continue  # the first error stays; only the absorbing value replaces it
        if isinstance(value, EvalError):
            accu = value
        elif not _is_bool(value):
            accu = lib.no_overload("_||_" if stop else "_&&_", value)
    if isinstance(accu, EvalError):
        raise accu
    return accu


def _exists_one(items: list, body: Body, tick: Tick, d: Any, f: Any) -> Any:
    count: Any = 0
    for item in items:
        tick(f)
        value = body(0, item, d, f)
        if isinstance(value, EvalError):
            count = value
        elif not _is_bool(value):
            count = lib.no_overload("_?_:_", value)
        elif value and not isinstance(count, EvalError):
            count += 1
    if isinstance(count, EvalError):
        raise count
    return count == 1


def _map(items: list, arity: int, body: Body, tick: Tick, d: Any, f: Any) -> Any:
    result: Any = []
    for item in items:
        tick(f)
        if arity == 2:
            keep = body(0, item, d, f)
            if isinstance(keep, EvalError):
                result = keep
                continue
            if not _is_bool(keep):
                result = lib.no_overload("_?_:_", keep)
                continue
            if not keep:
                continue
        value = body(arity - 1, item, d, f)
        if isinstance(result, EvalError):
            continue
        result = value if isinstance(value, EvalError) else result + [value]
    if isinstance(result, EvalError):
        raise result
    return result


def _filter(items: list, body: Body, tick: Tick, d: Any, f: Any) -> Any:
    result: Any = []
    for item in items:
        tick(f)
        keep = body(0, item, d, f)
        if isinstance(keep, EvalError):
            result = keep
        elif not _is_bool(keep):
            result = lib.no_overload("_?_:_", keep)
        elif keep and not isinstance(result, EvalError):
            result = result + [item]
    if isinstance(result, EvalError):
        raise result
    return result
