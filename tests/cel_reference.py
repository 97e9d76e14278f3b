"""The reference engine the tests hold the product's CEL to: cel-python's interpreter with
Kubernetes' DRA environment bound in.

cel-python provides the language; this module overrides what cel-python does differently from
cel-go as Kubernetes runs it: heterogeneous equality, commutative ``&&``/``||`` returning the left
error, "no such key: X" messages, arithmetic and conversions (the shared :mod:`lib`), the macros
(cel-go's comprehension steps from :mod:`comprehension`: a string is not a list of characters),
``has()`` on the DRA attribute maps, ``cel.bind`` and the run-time cost limit.  See
kubectl_gpu/cel/fastpath.py for why the product does not evaluate with it.

``compile_selector(expression, CELPY, ...)`` compiles as the product does (the same checks,
errors and cost) and evaluates with this engine; any other engine is the product's own.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Callable

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import CELEvalError, Evaluator

from kubectl_gpu.cel import comprehension, lib
from kubectl_gpu.cel import compile_selector as compile_product
from kubectl_gpu.cel.checker import NEWEST, Environment
from kubectl_gpu.cel.cost import ACTUAL_COST_EXCEEDED, MAX_COST, iteration_charge
from kubectl_gpu.cel.errors import EvalError
from kubectl_gpu.cel.fastpath import CostLimitExceeded
from kubectl_gpu.cel.parser import parse, to_ast
from kubectl_gpu.cel.selector import FAST, CompiledSelector, Gates, environment_for
from kubectl_gpu.cel.syntax import MACROS, Macro
from kubectl_gpu.dra.devices import Device

CELPY = "cel-python"
ENGINES = [FAST, CELPY]


class _DomainMap(ct.MapType):
    """Missing domains read as an empty map, as in Kubernetes."""

    def __missing__(self, key: Any) -> ct.MapType:
        return ct.MapType({})


def to_cel(value: Any) -> Any:
    if isinstance(value, ct.BoolType):
        return value  # an int subclass: it must not become an IntType below
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
    if isinstance(value, list):
        return ct.ListType([to_cel(v) for v in value])
    if isinstance(value, dict) and not isinstance(value, ct.MapType):
        return ct.MapType({to_cel(k): to_cel(v) for k, v in value.items()})
    return value


def from_cel(value: Any) -> Any:
    """cel-python's values as the shared library and the comprehension steps read them: BoolType
    is an int subclass, so it becomes a real bool; CELEvalError becomes EvalError."""
    if isinstance(value, ct.BoolType):
        return bool(value)
    if isinstance(value, CELEvalError):
        return EvalError(error_message(value))
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
        "_+_": _guard(lambda a, b: lib.arithmetic("_+_", a, b)),
        "_-_": _guard(lambda a, b: lib.arithmetic("_-_", a, b)),
        "_*_": _guard(lambda a, b: lib.arithmetic("_*_", a, b)),
        "_/_": _guard(lambda a, b: lib.arithmetic("_/_", a, b)),
        "_%_": _guard(lambda a, b: lib.arithmetic("_%_", a, b)),
        "-_": _guard(lib.negate),
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


def _unwrap(tree: Any, rule: str) -> lark.Tree | None:
    """The ``rule`` node an expression tree is made of, through its single-child precedence levels."""
    while isinstance(tree, lark.Tree):
        if tree.data == rule:
            return tree
        if len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return None


class _Run:
    """One evaluation's cost, shared by the evaluator and the sub-evaluators of its macros."""

    __slots__ = ("cost", "limit", "charges")

    def __init__(self, limit: int, charges: dict[int, int]) -> None:
        self.cost = 0
        self.limit = limit
        self.charges = charges


class _DraEvaluator(Evaluator):
    """cel-python's evaluator with cel-go's macros, has() and cel.bind."""

    run: _Run

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        nested = _DraEvaluator(ast, activation=self.activation)
        nested.run = self.run
        return nested

    def expr(self, tree: lark.Tree) -> Any:
        """``c ? a : b``: an error condition is the result (cel-python reports no overload)."""
        if len(tree.children) != 3:
            return super().expr(tree)
        cond_tree, yes_tree, no_tree = tree.children
        cond = self.visit(cond_tree)
        if isinstance(cond, CELEvalError):
            return cond
        if isinstance(cond, ct.BoolType):
            return self.visit(yes_tree if cond else no_tree)
        return CELEvalError(lib.no_overload("_?_:_", cond).message)

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        member_tree, name = tree.children[:2]
        if str(name) in MACROS:
            return self._macro(tree)
        if str(name) == "bind":
            receiver = _unwrap(member_tree, "ident")
            if receiver is not None and str(receiver.children[0]) == "cel":
                return self._bind(tree)
        return super().member_dot_arg(tree)

    def _bind(self, tree: lark.Tree) -> Any:
        var_tree, init_tree, body_tree = tree.children[2].children
        name = str(_unwrap(var_tree, "ident").children[0])  # type: ignore[union-attr]
        value = self.visit(init_tree)  # an error is bound as a value (cel-go's accumulator)
        try:
            return self.sub_evaluator(body_tree).evaluate({name: value})
        except CELEvalError as err:
            return err

    def _macro(self, tree: lark.Tree) -> Any:
        member_tree, name = tree.children[:2]
        var_tree, *arg_trees = tree.children[2].children
        source = self.visit(member_tree)
        if isinstance(source, CELEvalError):
            return source
        variable = str(_unwrap(var_tree, "ident").children[0])  # type: ignore[union-attr]
        nested = [self.sub_evaluator(t) for t in arg_trees]
        run = self.run
        charge = run.charges[id(tree)]

        def body(arg: int, item: Any, d: Any, f: Any) -> Any:
            try:
                return from_cel(nested[arg].evaluate({variable: item}))
            except CELEvalError as err:
                return from_cel(err)

        def tick(f: Any) -> None:
            run.cost += charge
            if run.cost > run.limit:
                raise CostLimitExceeded()

        try:
            items = lib.iteration_items(source)
            return to_cel(comprehension.run(str(name), items, len(arg_trees), body, tick))
        except CostLimitExceeded:
            raise
        except EvalError as err:
            return CELEvalError(err.message)

    def macro_has_eval(self, exprlist: lark.Tree) -> Any:
        selection = _unwrap(exprlist.children[0], "member_dot")
        if selection is None:
            return super().macro_has_eval(exprlist)
        target_tree, field = selection.children
        target = self.visit(target_tree)
        if isinstance(target, CELEvalError):
            return target
        if isinstance(target, _DomainMap):
            return ct.BoolType(True)  # the DRA mapper finds every domain (an empty map when missing)
        if isinstance(target, ct.MapType):
            return ct.BoolType(ct.StringType(str(field)) in target)
        return CELEvalError(f"type '{lib.type_name(target)}' does not support field selection")


class CelpyProgram:
    """A compiled cel-python program for one selector."""

    def __init__(self, tree: lark.Tree, expression: str = "", environment: Environment = NEWEST,
                 cost_limit: int = MAX_COST) -> None:
        self._tree = _without_min_macro(tree)
        self._limit = cost_limit
        # Each macro's per-iteration charge, by the identity of its node in the tree run.
        self._charges = {
            id(node): iteration_charge(macro, environment)
            for node in self._tree.iter_subtrees()
            if node.data == "member_dot_arg" and str(node.children[1]) in MACROS
            and isinstance(macro := to_ast(node, expression), Macro)
        }
        self._base = celpy.Environment().program(self._tree, functions=FUNCTIONS)

    def evaluate(self, device: Device) -> Any:
        """The CEL value, with Python types; raises EvalError for a CEL error."""
        evaluator = _DraEvaluator(ast=self._tree, activation=self._base.new_activation())
        evaluator.run = _Run(self._limit, self._charges)
        try:
            value = evaluator.evaluate(device_activation(device))
        except CostLimitExceeded:
            raise EvalError(ACTUAL_COST_EXCEEDED) from None
        except CELEvalError as err:
            raise EvalError(error_message(err)) from None
        if isinstance(value, CELEvalError):
            raise EvalError(error_message(value))
        if isinstance(value, ct.BoolType):
            return bool(value)
        return value


def compile_selector(expression: str, engine: str | None = None, *, gates: Gates = None, stored: bool = False,
                     cost_limit: int = MAX_COST) -> CompiledSelector:
    """The product's compile_selector; with ``engine=CELPY`` the same compile (its errors, its cost
    estimate), evaluated by cel-python instead."""
    compiled = compile_product(expression, gates=gates, stored=stored, cost_limit=cost_limit)
    if engine != CELPY:
        return compiled
    program = CelpyProgram(parse(expression), expression, environment_for(gates, stored=stored), cost_limit)
    return CompiledSelector(expression, CELPY, program.evaluate, compiled.max_cost)
