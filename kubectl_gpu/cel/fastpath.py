"""The fast path: selectors compiled to Python closures over :class:`Device` objects.

Why it exists (measured on this machine, 2 shared cores, cel-python 0.5.0, one NVIDIA-class
selector ``device.driver == ... && device.attributes[...].type == ...`` over 8,000 devices):

* cel-python InterpretedRunner: ~335 us per evaluation -> ~2.7 s per selector over 8,000 devices,
  plus ~20 us per device to build its activation.
* cel-python CompiledRunner (transpiler): ~54 us -> ~0.43 s per selector, before activations;
  a claim evaluates a class selector and its own selectors, so > 0.5 s.  It also reads maps with
  ``.get()`` in places, which would turn a missing attribute into null instead of an error.
* closures (this module): ~2-6 us per evaluation.

``scripts/bench_explain.py`` (8,000 devices, class selector + 2 request selectors) measured:
floor (plain Python loop) 0.005 s, fast path 0.081 s, whole explain 0.138 s, or 0.284 s including
building the devices from ResourceSlices (target 0.5 s), cel-python ~5.6-6.2 s.  Calls on
literals (``quantity('40Gi')``) are evaluated once at compile time (see ``_fold``).

The fast path covers what DRA selectors are made of: literals, ``device.*`` access, map
selection/indexing, comparisons, ``in``, ``&&``/``||``/``!``/``?:`` with CEL's commutative error
semantics, list literals, and every function of :mod:`kubectl_gpu.cel.lib` (strings, regex, lists,
quantity, semver).  Anything else (macros, ``has()``, arithmetic, conversions, map literals, uint)
raises :class:`Unsupported` at compile time and the selector runs on cel-python instead.  Both paths
share :mod:`lib`, and tests evaluate the same expressions on both and require equal results.
"""

from __future__ import annotations

from typing import Any, Callable

from . import lib
from .device import Device
from .errors import EvalError
from .syntax import Call, Ident, Index, ListLit, Lit, Node, Select
from .values import Quantity, Semver

Compiled = Callable[[Device], Any]

_MISSING = object()
_EMPTY: dict = {}


class Unsupported(Exception):
    """This expression shape is left to cel-python."""


class DomainMap:
    """``device.attributes`` / ``device.capacity`` as a whole: a map whose missing domains read as
    empty maps (Kubernetes' newStringInterfaceMapWithDefault)."""

    __slots__ = ("domains",)

    def __init__(self, domains: dict) -> None:
        self.domains = domains


def compile_fast(node: Node) -> Compiled:
    return _compile(node)


def _compile(node: Node) -> Compiled:
    if isinstance(node, Lit):
        if node.type == "uint":
            raise Unsupported("uint literal")
        value = node.value
        return lambda d: value
    if isinstance(node, Ident):
        if node.name != "device":
            raise Unsupported(f"identifier {node.name}")
        return lambda d: d
    if isinstance(node, Select):
        return _select(node)
    if isinstance(node, Index):
        return _index(node)
    if isinstance(node, ListLit):
        items = [_compile(i) for i in node.items]
        return lambda d: [item(d) for item in items]
    if isinstance(node, Call):
        return _call(node)
    raise Unsupported(type(node).__name__)


def _is_device(node: Node) -> bool:
    return isinstance(node, Ident) and node.name == "device"


def _domain_lookup(node: Node) -> Compiled | None:
    """``device.attributes[<string literal>]`` (or ``.capacity``): the hot path, no wrapper."""
    if isinstance(node, Index) and isinstance(node.target, Select) and _is_device(node.target.target):
        key = node.key
        field = node.target.field
        if field in {"attributes", "capacity"} and isinstance(key, Lit) and key.type == "string":
            domain = key.value
            if field == "attributes":
                return lambda d: d.attributes.get(domain, _EMPTY)
            return lambda d: d.capacity.get(domain, _EMPTY)
    return None


def _select(node: Select) -> Compiled:
    field = node.field
    if _is_device(node.target):
        if field == "driver":
            return lambda d: d.driver
        if field == "allowMultipleAllocations":
            return lambda d: d.allow_multiple_allocations
        if field == "attributes":
            return lambda d: DomainMap(d.attributes)
        if field == "capacity":
            return lambda d: DomainMap(d.capacity)
        raise Unsupported(f"device.{field}")
    domain = _domain_lookup(node.target)
    if domain is not None:
        message = f"no such key: {field}"

        def attribute(d: Device) -> Any:
            value = domain(d).get(field, _MISSING)
            if value is _MISSING:
                raise EvalError(message)
            return value

        return attribute
    target = _compile(node.target)
    return lambda d: _select_value(target(d), field)


def _select_value(value: Any, field: str) -> Any:
    if isinstance(value, DomainMap):
        return value.domains.get(field, _EMPTY)
    if isinstance(value, dict):
        return lib.index(value, field)
    raise EvalError(f"type '{lib.type_name(value)}' does not support field selection")


def _index(node: Index) -> Compiled:
    domain = _domain_lookup(node)
    if domain is not None:
        return domain
    target, key = _compile(node.target), _compile(node.key)

    def index(d: Device) -> Any:
        container = target(d)
        k = key(d)
        if isinstance(container, DomainMap):
            if lib.type_name(k) != "string":
                raise lib.no_overload("_[_]", container.domains, k)
            return container.domains.get(k, _EMPTY)
        return lib.index(container, k)

    return index


def _bool_operand_error(name: str, a: Any, b: Any) -> EvalError:
    if isinstance(a, EvalError):
        return a
    if isinstance(b, EvalError):
        return b
    return lib.no_overload(name, b if a is True or a is False else a)


def _call(node: Call) -> Compiled:
    name = node.name
    if name in {"_&&_", "_||_"}:
        left, right = (_compile(a) for a in node.args)
        stop = name == "_||_"  # the absorbing value: true for ||, false for &&

        def logic(d: Device) -> Any:
            try:
                a = left(d)
            except EvalError as err:
                a = err
            if a is stop:
                return stop
            try:
                b = right(d)
            except EvalError as err:
                b = err
            if b is stop:
                return stop
            if (a is True or a is False) and (b is True or b is False):
                return not stop
            raise _bool_operand_error(name, a, b)

        return logic
    if name == "!_":
        operand = _compile(node.args[0])

        def negate(d: Device) -> bool:
            value = operand(d)
            if value is True or value is False:
                return not value
            raise lib.no_overload("!_", value)

        return negate
    if name == "_?_:_":
        cond, yes, no = (_compile(a) for a in node.args)

        def choose(d: Device) -> Any:
            flag = cond(d)
            if flag is True:
                return yes(d)
            if flag is False:
                return no(d)
            raise lib.no_overload("_?_:_", flag)

        return choose
    if name in {"_==_", "_!=_"}:
        return _equality(node)
    if name in {"_<_", "_<=_", "_>_", "_>=_"}:
        op = name[1:-1]
        left, right = (_compile(a) for a in node.args)
        return lambda d: lib.compare(op, left(d), right(d))
    if name == "@in":
        item, container = (_compile(a) for a in node.args)

        def member(d: Device) -> bool:
            value, holder = item(d), container(d)
            if isinstance(holder, DomainMap):
                return isinstance(value, str) and value in holder.domains
            return lib.contains_in(value, holder)

        return member
    function = lib.FUNCTIONS.get(name)
    if function is None or name == "size" and node.target is None and len(node.args) != 1:
        raise Unsupported(name)
    parts = ([node.target] if node.target is not None else []) + list(node.args)
    compiled = [_compile(p) for p in parts]
    if any(_may_be_domain_map(p) for p in parts):
        raise Unsupported(f"{name} on device.attributes/capacity as a whole")
    if all(_is_constant(p) for p in parts):
        folded = _fold(function, compiled)
        if folded is not None:
            return folded
    if len(compiled) == 1:
        (only,) = compiled
        return lambda d: function(only(d))
    if len(compiled) == 2:
        first, second = compiled
        return lambda d: function(first(d), second(d))
    return lambda d: function(*[c(d) for c in compiled])


def _is_constant(node: Node) -> bool:
    """The same value for every device: a literal, or a function of literals (``quantity('40Gi')``)."""
    if isinstance(node, Lit):
        return True
    if isinstance(node, Call) and node.name in lib.FUNCTIONS:
        parts = ([node.target] if node.target is not None else []) + list(node.args)
        return all(_is_constant(p) for p in parts)
    return False


# Results that no later function can change; a folded list would be shared by every evaluation.
_IMMUTABLE = (str, int, float, bool, bytes, type(None), Quantity, Semver)


def _fold(function: Callable[..., Any], compiled: list[Compiled]) -> Compiled | None:
    """Evaluate a call of constants once, at compile time: ``quantity('40Gi')`` in a selector was
    parsed again for each of 8,000 devices.  A call that fails, or whose value is mutable, is left
    to run per device, so its error is still raised where the scheduler would raise it."""
    try:
        value = function(*[c(None) for c in compiled])  # constants ignore the device
    except Exception:  # noqa: BLE001 - any failure is reported at evaluation time, as before
        return None
    if type(value) not in _IMMUTABLE:
        return None
    return lambda d: value


def _may_be_domain_map(node: Node) -> bool:
    return isinstance(node, Select) and _is_device(node.target) and node.field in {"attributes", "capacity"}


def _equality(node: Call) -> Compiled:
    left_node, right_node = node.args
    if _may_be_domain_map(left_node) or _may_be_domain_map(right_node):
        raise Unsupported("comparing device.attributes/capacity as a whole")
    left, right = _compile(left_node), _compile(right_node)
    negate = node.name == "_!=_"
    if isinstance(right_node, Lit) and right_node.type == "string":
        constant = right_node.value

        def equal_string(d: Device) -> bool:
            value = left(d)
            same = value == constant if value.__class__ is str else lib.equals(value, constant)
            return not same if negate else same

        return equal_string

    def equal(d: Device) -> bool:
        a = left(d)
        b = right(d)
        same = lib.equals(a, b)
        return not same if negate else same

    return equal
