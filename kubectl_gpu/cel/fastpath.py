"""The fast path: selectors compiled to Python closures over :class:`Device` objects.

Every expression the DRA environment admits compiles here: literals, ``device.*`` access, map
selection/indexing, comparisons, ``in``, ``&&``/``||``/``!``/``?:`` with CEL's commutative error
semantics, arithmetic, conversions, list/map literals, ``has()``, the macros (``all``, ``exists``,
``exists_one``, ``map``, ``filter``) with cel-go's comprehension semantics, ``cel.bind`` and every
function of :mod:`kubectl_gpu.cel.lib`.  cel-python's interpreter is the tests' reference engine
(tests/cel_reference.py): tests and a differential property test evaluate the same expressions
on both and require equal results.

Why closures and not cel-python or a compiled CEL engine (measured on this machine, 2 shared
cores; ``scripts/bench_explain.py`` prints the current figures next to a floor):

* cel-python's interpreter: ~300 us per evaluation, ~2.3 ms with a macro, plus ~20 us per device
  to build its activation; 8,000 devices x 3 selectors take seconds.
* compiled engines, measured with the class selector ``device.driver == ... && ...type == 'gpu'``
  on 8,000 devices in one run (CPU time, loaded machine): the Rust-backed
  ``common-expression-language`` 0.10 ~42-48 us per device, Google's ``cel-expr-python`` 0.1.3
  (cel-cpp) ~14.6 us, this fast path ~1 us, a plain Python loop ~0.25 us.  Both engines pay for
  converting every device into their own values on each call, which alone exceeds the 10 us
  budget; and neither carries Kubernetes' DRA environment as is: out of the box both answered
  ``device.attributes['missing'].y`` with a key error for the domain (Kubernetes: an empty map,
  then "no such key: y"), neither knew ``cel.bind`` (cel-cpp needs its bindings extension, the
  Rust one has none), and Quantity, Semver, the Kubernetes libraries and cost limits would all
  be Python callbacks.  So the closures stay the engine; cel-python stays the reference.
* closures: ~0.3-3 us per evaluation for the selectors real claims use, macros included.
* a function generated per selector (:mod:`codegen`), which writes the common nodes as
  statements and calls these closures for the rest: no Python call per node nor per device.
  Callgrind, explain's own work for scripts/bench_explain.py's claim over 8,000 devices
  (selectors and results, devices already built): 355 M instructions with the closures, 207 M
  with the generated functions and the engine's shared per-ending results.

Calls on literals (``quantity('40Gi')``) are evaluated once at compile time (see ``fold``).
Macros are charged their run-time cost (see :mod:`cost`) and abort with Kubernetes' "actual cost
limit exceeded" once it passes the limit.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from . import comprehension, lib
from .checker import NEWEST, Environment
from .cost import ACTUAL_COST_EXCEEDED, MAX_COST, iteration_charge
from kubectl_gpu.dra.devices import Device
from .errors import EvalError
from .syntax import Bind, Call, Ident, Index, ListLit, Lit, Macro, MapLit, Node, Select
from kubectl_gpu.dra.values import Quantity, Semver

# Shared with the generated functions (codegen), which call these closures for what they do not
# write themselves: a missing map entry, and the empty domain map a missing domain reads as.
MISSING = object()
EMPTY: dict = {}


class Unsupported(Exception):
    """A shape the checker admitted but no closure compiles: a defect (the checker's tables and the
    closures disagree), never the user's error; tests/test_cel_selectors.py keeps them together."""


class CostLimitExceeded(EvalError):
    """Kubernetes aborts the whole evaluation: no ``&&``/``||`` absorbs it."""

    def __init__(self) -> None:
        super().__init__(ACTUAL_COST_EXCEEDED)


class Frame:
    """One evaluation's variables (macro and cel.bind names, by slot) and run-time cost."""

    __slots__ = ("slots", "cost")

    def __init__(self, size: int) -> None:
        self.slots: list[Any] = [None] * size
        self.cost = 0


Compiled = Callable[[Device, Any], Any]  # (device, Frame or None) -> value


class DomainMap:
    """``device.attributes`` / ``device.capacity`` as a whole: a map whose missing domains read as
    empty maps (Kubernetes' newStringInterfaceMapWithDefault)."""

    __slots__ = ("domains",)

    def __init__(self, domains: dict) -> None:
        self.domains = domains


def plain(value: Any) -> Any:
    """A DomainMap handed to a generic function is the map it wraps."""
    return dict(value.domains) if isinstance(value, DomainMap) else value


def compile_fast(node: Node, environment: Environment = NEWEST, cost_limit: int = MAX_COST) -> Callable[[Device], Any]:
    compiler = ClosureCompiler(environment, cost_limit)
    root = compiler.compile(node, {})
    slots = compiler.slots
    if not slots:
        return lambda d: root(d, None)
    return lambda d: root(d, Frame(slots))


class ClosureCompiler:
    def __init__(self, environment: Environment, cost_limit: int) -> None:
        self.environment = environment
        self.cost_limit = cost_limit
        self.slots = 0
        self.bound: set[int] = set()  # cel.bind slots, which may hold an error

    def slot(self) -> int:
        self.slots += 1
        return self.slots - 1

    def compile(self, node: Node, scope: dict[str, int]) -> Compiled:
        if isinstance(node, Lit):
            value = lib.FUNCTIONS["uint"](node.value) if node.type == "uint" else node.value
            return lambda d, f: value
        if isinstance(node, Ident):
            if node.name in scope:
                index = scope[node.name]
                if index in self.bound:

                    def variable(d: Device, f: Any) -> Any:
                        value = f.slots[index]
                        if isinstance(value, EvalError):
                            raise value
                        return value

                    return variable
                return lambda d, f: f.slots[index]
            if node.name != "device":
                raise Unsupported(f"identifier {node.name}")
            return lambda d, f: d
        if isinstance(node, Select):
            return self.select(node, scope)
        if isinstance(node, Index):
            return self.index(node, scope)
        if isinstance(node, ListLit):
            if all(isinstance(i, Lit) and i.type != "uint" for i in node.items):
                constant = [i.value for i in node.items]  # built once: nothing mutates a CEL list
                return lambda d, f: constant
            items = [self.compile(i, scope) for i in node.items]
            return lambda d, f: [plain(item(d, f)) for item in items]
        if isinstance(node, MapLit):
            return self.map_literal(node, scope)
        if isinstance(node, Macro):
            return self.macro(node, scope)
        if isinstance(node, Bind):
            return self.bind(node, scope)
        return self.call(node, scope)

    # -- access ---------------------------------------------------------------------------------
    def _domain_lookup(self, node: Node, scope: dict[str, int]) -> Callable[[Device], Any] | None:
        """``device.attributes[<string literal>]`` (or ``.capacity``): the hot path, no wrapper."""
        if isinstance(node, Index) and isinstance(node.target, Select) and is_device(node.target.target, scope):
            key = node.key
            field = node.target.field
            if field in {"attributes", "capacity"} and isinstance(key, Lit) and key.type == "string":
                domain = key.value
                if field == "attributes":
                    return lambda d: d.attributes.get(domain, EMPTY)
                return lambda d: d.capacity.get(domain, EMPTY)
        return None

    def select(self, node: Select, scope: dict[str, int]) -> Compiled:
        field = node.field
        if is_device(node.target, scope):
            if field == "driver":
                return lambda d, f: d.driver
            if field == "allowMultipleAllocations":
                return lambda d, f: d.allow_multiple_allocations
            if field == "attributes":
                return lambda d, f: DomainMap(d.attributes)
            if field == "capacity":
                return lambda d, f: DomainMap(d.capacity)
            raise Unsupported(f"device.{field}")
        if self._domain_lookup(node.target, scope) is not None:
            message = f"no such key: {field}"
            key = node.target.key.value  # type: ignore[attr-defined]  # _domain_lookup: a string literal
            maps = operator.attrgetter(node.target.target.field)  # type: ignore[attr-defined]  # attributes|capacity
            # device.attributes['dom'].name (or .capacity), the access nearly every selector makes
            # on every device: both look-ups in one closure instead of calling the domain's.

            def attribute(d: Device, f: Any) -> Any:
                value = maps(d).get(key, EMPTY).get(field, MISSING)
                if value is MISSING:
                    raise EvalError(message)
                return value

            return attribute
        target = self.compile(node.target, scope)
        return lambda d, f: select_value(target(d, f), field)

    def index(self, node: Index, scope: dict[str, int]) -> Compiled:
        domain = self._domain_lookup(node, scope)
        if domain is not None:
            return lambda d, f: domain(d)
        target, key = self.compile(node.target, scope), self.compile(node.key, scope)

        return lambda d, f: index_value(target(d, f), key(d, f))

    def map_literal(self, node: MapLit, scope: dict[str, int]) -> Compiled:
        entries = [(self.compile(k, scope), self.compile(v, scope)) for k, v in node.entries]

        def build(d: Device, f: Any) -> dict:
            result: dict = {}
            for key, value in entries:
                k = key(d, f)
                if lib.type_name(k) not in {"string", "int", "uint", "bool"}:
                    raise EvalError(f"unsupported key type: {lib.type_name(k)}")
                if any(lib.equals(k, existing) for existing in result):
                    raise EvalError(f"Failed with repeated key: {k}")
                result[k] = plain(value(d, f))
            return result

        return build

    def has(self, node: Select, scope: dict[str, int]) -> Compiled:
        field = node.field
        if is_device(node.target, scope):
            present = field in self.environment.device_fields
            return lambda d, f: present
        domain = self._domain_lookup(node.target, scope)
        if domain is not None:
            return lambda d, f: field in domain(d)
        target = self.compile(node.target, scope)

        def has(d: Device, f: Any) -> bool:
            value = target(d, f)
            if isinstance(value, DomainMap):
                return True  # the DRA mapper finds every domain (an empty map when missing)
            if isinstance(value, dict):
                return field in value
            raise EvalError(f"type '{lib.type_name(value)}' does not support field selection")

        return has

    # -- variables ------------------------------------------------------------------------------
    def bind(self, node: Bind, scope: dict[str, int]) -> Compiled:
        init = self.compile(node.init, scope)
        index = self.slot()
        self.bound.add(index)
        body = self.compile(node.body, {**scope, node.var: index})

        def bound(d: Device, f: Any) -> Any:
            try:
                f.slots[index] = init(d, f)
            except CostLimitExceeded:
                raise
            except EvalError as err:
                f.slots[index] = err  # an error only where the body reads the name (cel-go's accumulator)
            return body(d, f)  # the slot is read only inside the body: nothing to restore

        return bound

    def macro(self, node: Macro, scope: dict[str, int]) -> Compiled:
        source = self.compile(node.target, scope)
        index = self.slot()
        inner = {**scope, node.var: index}
        args = [self.compile(a, inner) for a in node.args]
        charge = iteration_charge(node, self.environment)
        limit = self.cost_limit
        kind, arity = node.name, len(node.args)

        # The variable's slot is read only inside this macro's arguments (lexical scope), so it
        # needs no restoring afterwards.
        def body(arg: int, item: Any, d: Device, f: Any) -> Any:
            f.slots[index] = item
            try:
                return plain(args[arg](d, f))
            except CostLimitExceeded:
                raise
            except EvalError as err:
                return err

        def tick(f: Any) -> None:
            f.cost += charge
            if f.cost > limit:
                raise CostLimitExceeded()

        def run(d: Device, f: Any) -> Any:
            items = lib.iteration_items(plain(source(d, f)))
            return comprehension.run(kind, items, arity, body, tick, d, f)

        return run

    # -- calls ----------------------------------------------------------------------------------
    def call(self, node: Call, scope: dict[str, int]) -> Compiled:
        name = node.name
        if name == "has" and node.target is None:
            return self.has(node.args[0], scope)  # type: ignore[arg-type]
        if name in {"_&&_", "_||_"}:
            return _logic(name, *(self.compile(a, scope) for a in node.args))
        if name == "!_":
            operand = self.compile(node.args[0], scope)

            def negate(d: Device, f: Any) -> bool:
                value = operand(d, f)
                if value is True or value is False:
                    return not value
                raise lib.no_overload("!_", value)

            return negate
        if name == "_?_:_":
            cond, yes, no = (self.compile(a, scope) for a in node.args)

            def choose(d: Device, f: Any) -> Any:
                flag = cond(d, f)
                if flag is True:
                    return yes(d, f)
                if flag is False:
                    return no(d, f)
                raise lib.no_overload("_?_:_", flag)

            return choose
        if name in {"_==_", "_!=_"}:
            return self.equality(node, scope)
        if name in {"_<_", "_<=_", "_>_", "_>=_"}:
            op = name[1:-1]
            left, right = (self.compile(a, scope) for a in node.args)
            return lambda d, f: lib.compare(op, left(d, f), right(d, f))
        if name == "@in":
            item, container = (self.compile(a, scope) for a in node.args)

            return lambda d, f: member(item(d, f), container(d, f))
        if name in {"_+_", "_-_", "_*_", "_/_", "_%_"}:
            left, right = (self.compile(a, scope) for a in node.args)
            return lambda d, f: lib.arithmetic(name, left(d, f), right(d, f))
        if name == "-_":
            operand = self.compile(node.args[0], scope)
            return lambda d, f: lib.negate(operand(d, f))
        function = lib.FUNCTIONS.get(name)
        if function is None:
            raise Unsupported(name)
        parts = ([node.target] if node.target is not None else []) + list(node.args)
        compiled = [self.compile(p, scope) for p in parts]
        wrapped = any(may_be_domain_map(p, scope) for p in parts)
        if not wrapped and all(is_constant(p) for p in parts):
            folded = fold(function, compiled)
            if folded is not None:
                return folded
        if wrapped:
            return lambda d, f: function(*[plain(c(d, f)) for c in compiled])
        if len(compiled) == 1:
            (only,) = compiled
            return lambda d, f: function(only(d, f))
        if len(compiled) == 2:
            first, second = compiled
            return lambda d, f: function(first(d, f), second(d, f))
        return lambda d, f: function(*[c(d, f) for c in compiled])

    def equality(self, node: Call, scope: dict[str, int]) -> Compiled:
        left_node, right_node = node.args
        left, right = self.compile(left_node, scope), self.compile(right_node, scope)
        negate = node.name == "_!=_"
        if may_be_domain_map(left_node, scope) or may_be_domain_map(right_node, scope):

            def equal_maps(d: Device, f: Any) -> bool:
                same = lib.equals(plain(left(d, f)), plain(right(d, f)))
                return not same if negate else same

            return equal_maps
        if isinstance(right_node, Lit) and right_node.type == "string":
            constant = right_node.value

            def equal_string(d: Device, f: Any) -> bool:
                value = left(d, f)
                same = value == constant if value.__class__ is str else lib.equals(value, constant)
                return not same if negate else same

            return equal_string

        def equal(d: Device, f: Any) -> bool:
            same = lib.equals(left(d, f), right(d, f))
            return not same if negate else same

        return equal


def is_device(node: Node, scope: dict[str, int]) -> bool:
    return isinstance(node, Ident) and node.name == "device" and "device" not in scope


def may_be_domain_map(node: Node, scope: dict[str, int]) -> bool:
    if isinstance(node, Ident):
        return node.name in scope  # a variable may hold device.attributes (cel.bind)
    return isinstance(node, Select) and is_device(node.target, scope) and node.field in {"attributes", "capacity"}


# Evaluation steps that the closures and the generated functions (:mod:`codegen`) share.


def index_value(container: Any, k: Any) -> Any:
    """``container[k]``; a DomainMap's missing domain is an empty map."""
    if isinstance(container, DomainMap):
        if lib.type_name(k) != "string":
            raise lib.no_overload("_[_]", container.domains, k)
        return container.domains.get(k, EMPTY)
    return lib.index(container, k)


def member(value: Any, holder: Any) -> bool:
    """``value in holder``; a domain is in device.attributes when the device has it."""
    if isinstance(holder, DomainMap):
        return isinstance(value, str) and value in holder.domains
    return lib.contains_in(value, holder)


def select_value(value: Any, field: str) -> Any:
    if isinstance(value, DomainMap):
        return value.domains.get(field, EMPTY)
    if isinstance(value, dict):
        return lib.index(value, field)
    raise EvalError(f"type '{lib.type_name(value)}' does not support field selection")


def _logic(name: str, left: Compiled, right: Compiled) -> Compiled:
    stop = name == "_||_"  # the absorbing value: true for ||, false for &&

    def logic(d: Device, f: Any) -> Any:
        try:
            a = left(d, f)
        except CostLimitExceeded:
            raise
        except EvalError as err:
            a = err
        if a is stop:
            return stop
        try:
            b = right(d, f)
        except CostLimitExceeded:
            raise
        except EvalError as err:
            b = err
        if b is stop:
            return stop
        if (a is True or a is False) and (b is True or b is False):
            return not stop
        raise bool_operand_error(name, a, b)

    return logic


def bool_operand_error(name: str, a: Any, b: Any) -> EvalError:
    if isinstance(a, EvalError):
        return a
    if isinstance(b, EvalError):
        return b
    return lib.no_overload(name, b if a is True or a is False else a)


# -- constant folding -----------------------------------------------------------------------------


def is_constant(node: Node) -> bool:
    """The same value for every device: a literal, or a function of literals (``quantity('40Gi')``)."""
    if isinstance(node, Lit):
        return True
    if isinstance(node, Call) and node.name in lib.FUNCTIONS:
        parts = ([node.target] if node.target is not None else []) + list(node.args)
        return all(is_constant(p) for p in parts)
    return False


# Results that no later function can change; a folded list would be shared by every evaluation.
_IMMUTABLE = (str, int, float, bool, bytes, type(None), Quantity, Semver)


def fold(function: Callable[..., Any], compiled: list[Compiled]) -> Compiled | None:
    """Evaluate a call of constants once, at compile time: ``quantity('40Gi')`` in a selector was
    parsed again for each of 8,000 devices.  A call that fails, or whose value is mutable, is left
    to run per device, so its error is still raised where the scheduler would raise it."""
    try:
        value = function(*[c(None, None) for c in compiled])  # constants ignore the device
    except Exception:  # noqa: BLE001 - any failure is reported at evaluation time, as before
        return None
    if not isinstance(value, _IMMUTABLE):
        return None
    return lambda d, f: value
