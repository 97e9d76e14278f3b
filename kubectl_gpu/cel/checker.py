"""Static checks of a selector, like the API server's type check of DRA CEL expressions.

cel-python has no type checker, so this module declares the DRA environment (the ``device``
variable, the standard library, ext.Strings, Kubernetes' regex/lists/quantity/semver libraries)
and rejects what Kubernetes rejects at admission: unknown identifiers and functions, fields a
device does not have, operator/function calls whose static types have no overload, and results
that are not bool.  Attribute values are ``dyn``, as in Kubernetes, so their misuse can only fail
at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .errors import CelCompileError
from .syntax import Bind, Call, Ident, Index, ListLit, Lit, Macro, MapLit, Node, Position, Select

Type = Union[str, tuple]  # "int" ... | ("list", T) | ("map", K, V)

DYN = "dyn"


class _AnyType(str):
    """``google.protobuf.Any``, the attribute value type before DRAListTypeAttributes: it checks
    like ``dyn`` (it equals DYN) except that a macro cannot range over it."""


ANY = _AnyType(DYN)
DEVICE = "kubernetes.DRADevice"
QUANTITY = "kubernetes.Quantity"
SEMVER = "kubernetes.Semver"
STRING_LIST = ("list", "string")
ANY_LIST = ("list", DYN)
ANY_MAP = ("map", DYN, DYN)
ELEMENT = "<element>"  # result placeholder: the element type of the receiver list



@dataclass(frozen=True)
class Environment:
    """What the DRA CEL environment declares, from the enabled feature gates (see :mod:`gates`).

    Kubernetes compiles a new expression (NewExpressions) with the device type the gates select,
    and an expression already stored in the API with the newest one (StoredExpressions ignores
    the gates), so a stored selector keeps working after a gate is turned off.
    """

    allow_multiple_allocations: bool  # DRAConsumableCapacity: device.allowMultipleAllocations
    list_type_attributes: bool  # DRAListTypeAttributes: dyn attributes, includes()

    @property
    def device_fields(self) -> dict[str, Type]:
        attribute = DYN if self.list_type_attributes else ANY
        fields: dict[str, Type] = {
            "driver": "string",
            "attributes": ("map", "string", ("map", "string", attribute)),
            "capacity": ("map", "string", ("map", "string", QUANTITY)),
        }
        if self.allow_multiple_allocations:
            fields["allowMultipleAllocations"] = "bool"
        return fields


NEWEST = Environment(allow_multiple_allocations=True, list_type_attributes=True)

# name -> overloads (argument types, receiver first for methods; result type)
_S, _I, _B, _D = "string", "int", "bool", "double"
METHODS: dict[str, list[tuple[tuple[Type, ...], Type]]] = {
    "contains": [((_S, _S), _B)],
    "startsWith": [((_S, _S), _B)],
    "endsWith": [((_S, _S), _B)],
    "matches": [((_S, _S), _B)],
    "size": [((_S,), _I), (("bytes",), _I), ((ANY_LIST,), _I), ((ANY_MAP,), _I)],
    "lowerAscii": [((_S,), _S)],
    "upperAscii": [((_S,), _S)],
    "trim": [((_S,), _S)],
    "replace": [((_S, _S, _S), _S), ((_S, _S, _S, _I), _S)],
    "split": [((_S, _S), STRING_LIST), ((_S, _S, _I), STRING_LIST)],
    "substring": [((_S, _I), _S), ((_S, _I, _I), _S)],
    "charAt": [((_S, _I), _S)],
    "indexOf": [((_S, _S), _I), ((_S, _S, _I), _I), ((ANY_LIST, DYN), _I)],
    "lastIndexOf": [((_S, _S), _I), ((_S, _S, _I), _I), ((ANY_LIST, DYN), _I)],
    "join": [((STRING_LIST,), _S), ((STRING_LIST, _S), _S)],
    "find": [((_S, _S), _S)],
    "findAll": [((_S, _S), STRING_LIST), ((_S, _S, _I), STRING_LIST)],
    "isSorted": [((ANY_LIST,), _B)],
    "sum": [((ANY_LIST,), ELEMENT)],
    "min": [((ANY_LIST,), ELEMENT)],
    "max": [((ANY_LIST,), ELEMENT)],
    "compareTo": [((QUANTITY, QUANTITY), _I), ((SEMVER, SEMVER), _I)],
    "isGreaterThan": [((QUANTITY, QUANTITY), _B), ((SEMVER, SEMVER), _B)],
    "isLessThan": [((QUANTITY, QUANTITY), _B), ((SEMVER, SEMVER), _B)],
    "add": [((QUANTITY, QUANTITY), QUANTITY), ((QUANTITY, _I), QUANTITY)],
    "sub": [((QUANTITY, QUANTITY), QUANTITY), ((QUANTITY, _I), QUANTITY)],
    "asInteger": [((QUANTITY,), _I)],
    "asApproximateFloat": [((QUANTITY,), _D)],
    "isInteger": [((QUANTITY,), _B)],
    "sign": [((QUANTITY,), _I)],
    "major": [((SEMVER,), _I)],
    "minor": [((SEMVER,), _I)],
    "patch": [((SEMVER,), _I)],
    # DRAListTypeAttributes (Kubernetes 1.36): dra_includes_dyn_dyn, declared only with the gate.
    "includes": [((DYN, DYN), _B)],
}
GATED_METHODS = {"includes": "list_type_attributes"}
FUNCTIONS: dict[str, list[tuple[tuple[Type, ...], Type]]] = {
    "size": METHODS["size"],
    "matches": METHODS["matches"],
    "quantity": [((_S,), QUANTITY)],
    "isQuantity": [((_S,), _B)],
    "semver": [((_S,), SEMVER), ((_S, _B), SEMVER)],
    "isSemver": [((_S,), _B), ((_S, _B), _B)],
    # Conversions (cel-python evaluates them; argument checks happen at run time).
    "int": [((DYN,), _I)],
    "uint": [((DYN,), "uint")],
    "double": [((DYN,), _D)],
    "string": [((DYN,), _S)],
    "bool": [((DYN,), _B)],
    "bytes": [((DYN,), "bytes")],
    "dyn": [((DYN,), DYN)],
}
NUMERIC = ("int", "uint", "double")


def type_text(t: Type) -> str:
    if isinstance(t, _AnyType):
        return "any"
    if isinstance(t, tuple):
        return f"{t[0]}({', '.join(type_text(x) for x in t[1:])})"
    return t


def assignable(actual: Type, expected: Type) -> bool:
    if actual == DYN or expected == DYN:
        return True
    if isinstance(expected, tuple) and isinstance(actual, tuple):
        return actual[0] == expected[0] and all(assignable(a, e) for a, e in zip(actual[1:], expected[1:]))
    return actual == expected


def check(ast: Node, expression: str, environment: Environment = NEWEST, types: dict[int, Type] | None = None) -> Type:
    """The static type of the selector; raises CelCompileError like the API server would.
    ``types`` (if given) receives the type of every node, by ``id(node)`` (for cost estimates)."""
    checker = _Checker(expression, environment)
    if types is not None:
        checker.types = types
    result = checker.visit(ast, {"device": DEVICE})
    if result not in ("bool", DYN):
        raise CelCompileError(f"must evaluate to bool or the unknown type, not {type_text(result)}", None, expression)
    return result


class _Checker:
    def __init__(self, expression: str, environment: Environment) -> None:
        self.expression = expression
        self.environment = environment
        self.device_fields = environment.device_fields
        self.types: dict[int, Type] = {}

    def visit(self, node: Node, scope: dict[str, Type]) -> Type:
        result = self._visit(node, scope)
        self.types[id(node)] = result
        return result

    def fail(self, message: str, pos: Position) -> CelCompileError:
        return CelCompileError(message, pos, self.expression)

    def _visit(self, node: Node, scope: dict[str, Type]) -> Type:
        if isinstance(node, Lit):
            return node.type
        if isinstance(node, Ident):
            if node.name in scope:
                return scope[node.name]
            raise self.fail(f"undeclared reference to '{node.name}' (in container '')", node.pos)
        if isinstance(node, Select):
            return self.select(self.visit(node.target, scope), node.field, node.pos)
        if isinstance(node, Index):
            return self.index(self.visit(node.target, scope), self.visit(node.key, scope), node.pos)
        if isinstance(node, ListLit):
            items = {self._key(self.visit(i, scope)) for i in node.items}
            return ("list", items.pop()[1] if len(items) == 1 else DYN)
        if isinstance(node, MapLit):
            keys = {self._key(self.visit(k, scope)) for k, _ in node.entries}
            values = {self._key(self.visit(v, scope)) for _, v in node.entries}
            return ("map", keys.pop()[1] if len(keys) == 1 else DYN, values.pop()[1] if len(values) == 1 else DYN)
        if isinstance(node, Macro):
            return self.macro(node, scope)
        if isinstance(node, Bind):
            inner = dict(scope)
            inner[node.var] = self.visit(node.init, scope)
            return self.visit(node.body, inner)
        return self.call(node, scope)

    @staticmethod
    def _key(t: Type) -> tuple[str, Type]:
        return (repr(t), t)

    def select(self, target: Type, field: str, pos: Position) -> Type:
        if target == DEVICE:
            if field not in self.device_fields:
                raise self.fail(f"undefined field '{field}'", pos)
            return self.device_fields[field]
        if target == DYN:
            return DYN
        if isinstance(target, tuple) and target[0] == "map" and assignable("string", target[1]):
            return target[2]
        raise self.fail(f"type '{type_text(target)}' does not support field selection", pos)

    def index(self, target: Type, key: Type, pos: Position) -> Type:
        if target == DYN:
            return DYN
        if isinstance(target, tuple) and target[0] == "map" and assignable(key, target[1]):
            return target[2]
        if isinstance(target, tuple) and target[0] == "list" and (key in ("int", "uint", DYN)):
            return target[1]
        raise self.fail(f"found no matching overload for '_[_]' applied to '({type_text(target)}, {type_text(key)})'", pos)

    def macro(self, node: Macro, scope: dict[str, Type]) -> Type:
        target = self.visit(node.target, scope)
        if isinstance(target, _AnyType):
            raise self.fail(
                "expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)",
                node.target.pos,
            )
        if target == DYN:
            element: Type = DYN
        elif isinstance(target, tuple):
            element = target[1]
        else:
            raise self.fail(
                f"expression of type '{type_text(target)}' cannot be range of a comprehension "
                "(must be list, map, or dynamic)",
                node.target.pos,
            )
        inner = dict(scope)
        inner[node.var] = element
        results = [self.visit(arg, inner) for arg in node.args]
        if node.name in {"all", "exists", "exists_one", "filter"} or (node.name == "map" and len(results) == 2):
            if not assignable(results[0], "bool"):
                raise self.fail(f"found no matching overload for '{node.name}' applied to '({type_text(results[0])})'", node.pos)
        if node.name == "map":
            return ("list", results[-1])
        if node.name == "filter":
            return ("list", element)
        return "bool"

    def call(self, node: Call, scope: dict[str, Type]) -> Type:
        name = node.name
        if name == "has" and node.target is None:
            if len(node.args) != 1 or not isinstance(node.args[0], Select):
                raise self.fail("invalid argument to has() macro", node.pos)
            self.visit(node.args[0], scope)
            return "bool"
        args = [self.visit(a, scope) for a in node.args]
        if name in {"_&&_", "_||_"}:
            for arg, sub in zip(args, node.args):
                if not assignable(arg, "bool"):
                    raise self.fail(f"found no matching overload for '{name}' applied to '({', '.join(map(type_text, args))})'", node.pos)
            return "bool"
        if name == "!_":
            if not assignable(args[0], "bool"):
                raise self.fail(f"found no matching overload for '!_' applied to '({type_text(args[0])})'", node.pos)
            return "bool"
        if name == "_?_:_":
            if not assignable(args[0], "bool"):
                raise self.fail(f"found no matching overload for '_?_:_' applied to '({', '.join(map(type_text, args))})'", node.pos)
            return args[1] if args[1] == args[2] else DYN
        if name in {"_==_", "_!=_"}:
            if self.comparable_equal(args[0], args[1]):
                return "bool"
            raise self.no_overload(name, args, node.pos)
        if name in {"_<_", "_<=_", "_>_", "_>=_"}:
            a, b = args
            ok = DYN in (a, b) or (a in NUMERIC and b in NUMERIC) or (a == b and a in ("string", "bytes", "bool"))
            if not ok:
                raise self.no_overload(name, args, node.pos)
            return "bool"
        if name == "@in":
            item, container = args
            if container == DYN:
                return "bool"
            if isinstance(container, tuple) and assignable(item, container[1]):
                return "bool"
            raise self.no_overload(name, args, node.pos)
        if name in {"_+_", "_-_", "_*_", "_/_", "_%_", "-_"}:
            return self.arithmetic(name, args, node.pos)
        if node.target is not None:
            receiver = self.visit(node.target, scope)
            overloads = METHODS.get(name)
            if name in GATED_METHODS and not getattr(self.environment, GATED_METHODS[name]):
                overloads = None
            if overloads is None:
                raise self.fail(f"undeclared reference to '{name}' (in container '')", node.pos)
            return self.resolve(name, overloads, [receiver, *args], node.pos, member=True)
        overloads = FUNCTIONS.get(name)
        if overloads is None:
            raise self.fail(f"undeclared reference to '{name}' (in container '')", node.pos)
        return self.resolve(name, overloads, args, node.pos, member=False)

    def comparable_equal(self, a: Type, b: Type) -> bool:
        if DYN in (a, b) or a == b or "null_type" in (a, b):
            return True
        if isinstance(a, tuple) and isinstance(b, tuple):
            return assignable(a, b)
        return False

    def arithmetic(self, name: str, args: list[Type], pos: Position) -> Type:
        if name == "-_":
            if args[0] in ("int", "double", DYN):
                return args[0]
            raise self.no_overload(name, args, pos)
        a, b = args
        if a == DYN or b == DYN:
            return DYN if a == b else (b if a == DYN else a)
        allowed = {"_+_": ("int", "uint", "double", "string", "bytes"), "_%_": ("int", "uint")}.get(name, NUMERIC)
        if a == b and (a in allowed or (name == "_+_" and isinstance(a, tuple) and a[0] == "list")):
            return a
        if name == "_+_" and isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "list":
            return ANY_LIST
        raise self.no_overload(name, args, pos)

    def no_overload(self, name: str, args: list[Type], pos: Position) -> CelCompileError:
        return self.fail(f"found no matching overload for '{name}' applied to '({', '.join(map(type_text, args))})'", pos)

    def resolve(self, name: str, overloads: list, args: list[Type], pos: Position, member: bool) -> Type:
        results = []
        for params, result in overloads:
            if len(params) == len(args) and all(assignable(a, p) for a, p in zip(args, params)):
                if result == ELEMENT:
                    result = args[0][1] if isinstance(args[0], tuple) else DYN
                results.append(result)
        if not results:
            if member:
                shown = f"{type_text(args[0])}.({', '.join(map(type_text, args[1:]))})"
            else:
                shown = f"({', '.join(map(type_text, args))})"
            raise self.fail(f"found no matching overload for '{name}' applied to '{shown}'", pos)
        unique = {repr(r): r for r in results}
        return next(iter(unique.values())) if len(unique) == 1 else DYN
