"""compile_selector(): compile once, evaluate against many devices."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Collection, Mapping, Sequence

from .checker import NEWEST, Environment, check
from .codegen import NESTED_TOO_DEEPLY, generate, not_bool
from .cost import MAX_COST, MAX_LENGTH, TOO_COMPLEX, estimate
from kubectl_gpu.dra.gates import CONSUMABLE_CAPACITY, LIST_TYPE_ATTRIBUTES, normalize_gates
from kubectl_gpu.dra.devices import Device
from .errors import CelCompileError, CelRuntimeError
from .fastpath import compile_fast
from .parser_hook import parsed_store
from .quick_parser import parse_quick
from .syntax import Node, from_json, to_json

FAST = "fast"  # the one engine (explain -o json names it per selector)


@dataclass(frozen=True, eq=False)
class CompiledSelector:
    expression: str
    engine: str  # FAST (the tests' reference engine, tests/cel_reference.py, names itself)
    _evaluate: Callable[[Device], Any]
    # cel-go's worst-case cost estimate (CompilationResult.MaxCost), 2**64-1 when unbounded
    max_cost: int = 0
    # every device's verdict in one call (codegen.Generated.every), when the selector was generated
    _every: Callable[[Sequence[Device]], list[Any]] | None = None

    def matches(self, device: Device) -> bool:
        """True/False as Kubernetes decides; CelRuntimeError where the scheduler would fail."""
        try:
            value = self._evaluate(device)  # an EvalError is the CelRuntimeError itself
        except RecursionError:
            raise CelRuntimeError(NESTED_TOO_DEEPLY) from None
        if value is True or value is False:
            return value
        raise not_bool(value)

    def verdicts(self, devices: Sequence[Device]) -> list[bool | CelRuntimeError]:
        """What :meth:`matches` says of each device: True, False, or the CelRuntimeError it raises."""
        if self._every is not None:
            return self._every(devices)
        matches = self.matches
        try:
            return [matches(device) for device in devices]  # the common case: no error
        except CelRuntimeError:
            pass
        verdicts: list[bool | CelRuntimeError] = []
        for device in devices:  # selectors have no side effects: evaluate again, keeping the errors
            try:
                verdicts.append(matches(device))
            except CelRuntimeError as err:
                verdicts.append(err)
        return verdicts


Gates = Collection[str] | Mapping[str, bool] | None


def environment_for(gates: Gates = None, *, stored: bool = False) -> Environment:
    """The DRA CEL environment Kubernetes compiles in with these feature gates enabled.

    ``stored=False`` is a new expression (create, or an update that changes it: NewExpressions,
    shaped by the gates); ``stored=True`` an expression the API server already holds, as the
    scheduler compiles it (StoredExpressions: the newest declarations whatever the gates).
    ``gates=None`` means the defaults of :data:`gates.DEFAULT_MINOR`; see :func:`gates.default_gates`.
    """
    if stored:
        return NEWEST
    enabled = normalize_gates(gates)
    return Environment(
        allow_multiple_allocations=CONSUMABLE_CAPACITY in enabled,
        list_type_attributes=LIST_TYPE_ATTRIBUTES in enabled,
    )


def compile_selector(
    expression: str, *, gates: Gates = None, stored: bool = False, cost_limit: int = MAX_COST,
) -> CompiledSelector:
    """Compile a DRA CEL selector as the API server would with ``gates`` enabled (see
    :func:`environment_for` for ``gates`` and ``stored``).  ``cost_limit`` is the run-time limit (Kubernetes' Options.CostLimit; default
    CELSelectorExpressionMaxCost); the compile-time check always uses Kubernetes' limit."""
    if not isinstance(expression, str) or not expression.strip():
        raise CelCompileError("the expression is empty", None, expression if isinstance(expression, str) else "")
    try:
        return _compile(expression, environment_for(gates, stored=stored), stored, cost_limit)
    except RecursionError:
        raise CelCompileError("expression is nested too deeply", None, expression) from None


@lru_cache(maxsize=1024)
def _compile(expression: str, environment: Environment, stored: bool, cost_limit: int) -> CompiledSelector:
    if not stored and len(expression.encode()) > MAX_LENGTH:
        # validateCELSelector: field.TooLong, and the expression is not compiled at all.
        raise CelCompileError(f"Too long: may not be more than {MAX_LENGTH} bytes", None, expression, prefix="")
    ast = _ast(expression)
    types: dict[int, Any] = {}
    check(ast, expression, environment, types)
    cost = estimate(ast, environment, types)
    if not stored and cost > MAX_COST:
        # validateCELSelector rejects a new selector whose worst case exceeds the runtime limit.
        raise CelCompileError(TOO_COMPLEX, None, expression, prefix="")
    # Everything the checker admits compiles here: its identifiers (device, macro and cel.bind
    # variables), device fields and functions are exactly those the closures implement
    # (tests/test_cel_selectors.py holds the two tables together), so there is no other engine.
    # One generated function per selector where it can be (codegen), else the closures.
    generated = generate(ast, environment, cost_limit)
    if generated is not None:
        return CompiledSelector(expression, FAST, generated.matches, cost, generated.every)
    return CompiledSelector(expression, FAST, compile_fast(ast, environment, cost_limit), cost)


def _ast(expression: str) -> Node:
    """The expression's AST: read by quick_parser when it is one of the everyday shapes (the same
    AST cel-python's grammar gives, without loading it), else kept from an earlier parse when the
    face keeps them (parser_hook.ParsedStore), else parsed with cel-python's grammar (which loads
    cel-python, lark and pendulum) and kept.  Parsing does not depend on feature gates or the
    environment: the checker and the cost estimate run again on every compile."""
    ast = parse_quick(expression)
    if ast is not None:
        return ast
    store = parsed_store()
    if store is not None:
        kept = store.get(expression)
        if kept is not None:
            ast = from_json(kept)
            if ast is not None:
                return ast
    from .parser import parse, to_ast

    ast = to_ast(parse(expression), expression)
    if store is not None:
        store.put(expression, to_json(ast))
    return ast
