"""The general path: cel-python's interpreter with Kubernetes' DRA environment bound in.

cel-python provides the language (macros, has(), arithmetic, conversions); this module overrides
the operators whose cel-python behaviour differs from cel-go as Kubernetes runs it (heterogeneous
equality, commutative ``&&``/``||`` returning the left error, "no such key: X" messages) and binds
the shared :mod:`lib` functions.  See :mod:`fastpath` for why it is not the default path.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Callable

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import CELEvalError

from . import lib
from .device import Device
from .errors import EvalError


class _DomainMap(ct.MapType):
    """Missing domains read as an empty map, as in Kubernetes."""

    def __missing__(self, key: Any) -> ct.MapType:
        return ct.MapType({})


def to_cel(value: Any) -> Any:
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int) and not isinstance(value, ct.IntType):
        return ct.IntType(value)
    if isinstance(value, float) and not isinstance(value, ct.DoubleType):
        return ct.DoubleType(value)
    if isinstance(value, str) and not isinstance(value, ct.StringType):
        return ct.StringType(value)
    if isinstance(value, bytes) and not isinstance(value, ct.BytesType):
        return ct.BytesType(value)
    if isinstance(value, list) and not isinstance(value, ct.ListType):
        return ct.ListType([to_cel(v) for v in value])
    return value


def device_activation(device: Device) -> dict[str, Any]:
    def domains(source: Any) -> _DomainMap:
        return _DomainMap(
            {ct.StringType(domain): ct.MapType({ct.StringType(k): to_cel(v) for k, v in values.items()})
             for domain, values in source.items()}
        )

    return {
        "device": ct.MapType(
            {
                ct.StringType("driver"): ct.StringType(device.driver),
                ct.StringType("allowMultipleAllocations"): ct.BoolType(device.allow_multiple_allocations),
                ct.StringType("attributes"): domains(device.attributes),
                ct.StringType("capacity"): domains(device.capacity),
            }
        )
    }


def _guard(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        for arg in args:
            if isinstance(arg, CELEvalError):
                return arg
        try:
            return to_cel(function(*args))
        except EvalError as err:
            return CELEvalError(err.message)

    call.__name__ = getattr(function, "__name__", "cel_function")
    return call


def _logic(name: str, stop: bool) -> Callable[[Any, Any], Any]:
    def combine(a: Any, b: Any) -> Any:
        a_bool = isinstance(a, ct.BoolType)
        b_bool = isinstance(b, ct.BoolType)
        if (a_bool and bool(a) is stop) or (b_bool and bool(b) is stop):
            return ct.BoolType(stop)
        if a_bool and b_bool:
            return ct.BoolType(not stop)
        if isinstance(a, CELEvalError):
            return a
        if isinstance(b, CELEvalError):
            return b
        return CELEvalError(lib.no_overload(name, b if a_bool else a).message)

    return combine


def _not(value: Any) -> Any:
    if isinstance(value, CELEvalError):
        return value
    if isinstance(value, ct.BoolType):
        return ct.BoolType(not value)
    return CELEvalError(lib.no_overload("!_", value).message)


def _compare(op: str) -> Callable[[Any, Any], Any]:
    return _guard(lambda a, b: lib.compare(op, a, b))


FUNCTIONS: dict[str, Callable[..., Any]] = {name: _guard(fn) for name, fn in lib.FUNCTIONS.items()}
FUNCTIONS.update(
    {
        "_==_": _guard(lib.equals),
        "_!=_": _guard(lambda a, b: not lib.equals(a, b)),
        "_<_": _compare("<"),
        "_<=_": _compare("<="),
        "_>_": _compare(">"),
        "_>=_": _compare(">="),
        "_in_": _guard(lib.contains_in),
        "_[_]": _guard(lib.index),
        "_&&_": _logic("_&&_", False),
        "_||_": _logic("_||_", True),
        "!_": _not,
    }
)

_MISSING_MEMBER = re.compile(r"^no such member in mapping: '(.*)'$")


def error_message(error: CELEvalError) -> str:
    """cel-python's error text, reworded as cel-go (and so the scheduler) words it."""
    message = str(error.args[0]) if error.args else "evaluation error"
    missing = _MISSING_MEMBER.match(message)
    if missing:
        return f"no such key: {missing.group(1)}"
    if message == "no such key" and len(error.args) > 2 and error.args[2]:
        return f"no such key: {error.args[2][0]}"
    return message


# cel-python evaluates ``list.min()`` as a built-in macro (Python's min): other messages than
# Kubernetes ("min called on empty list") and a TypeError escaping for ['a', 1].min().  Calls are
# renamed to this name, bound to the shared lib.f_min like every other function.
_LIB_MIN = "kubectl_gpu_lib_min"
FUNCTIONS[_LIB_MIN] = FUNCTIONS["min"]


def _without_min_macro(tree: lark.Tree) -> lark.Tree:
    renamed = copy.deepcopy(tree)  # the caller's tree stays as parsed
    for node in renamed.iter_subtrees():
        if node.data in {"member_dot_arg", "member_dot"}:
            node.children = [
                child.update(value=_LIB_MIN) if isinstance(child, lark.Token) and child == "min" else child
                for child in node.children
            ]
    return renamed


class CelpyProgram:
    """A compiled cel-python program for one selector."""

    def __init__(self, tree: lark.Tree) -> None:
        self._runner = celpy.Environment().program(_without_min_macro(tree), functions=FUNCTIONS)

    def evaluate(self, device: Device) -> Any:
        """The CEL value, with Python types; raises EvalError for a CEL error."""
        try:
            value = self._runner.evaluate(device_activation(device))
        except CELEvalError as err:
            raise EvalError(error_message(err)) from None
        if isinstance(value, CELEvalError):
            raise EvalError(error_message(value))
        if isinstance(value, ct.BoolType):
            return bool(value)
        return value
