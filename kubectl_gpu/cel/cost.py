"""Kubernetes' CEL cost accounting for DRA selectors: the estimate at compile time, the charge per
loop iteration at run time, and the limits.

Upstream:

* k8s.io/api/resource/v1 ``CELSelectorExpressionMaxCost = 1000000`` and
  ``CELSelectorExpressionMaxLength = 10 * 1024``;
* k8s.io/dynamic-resource-allocation/cel/compile.go: ``cel.CostLimit(CELSelectorExpressionMaxCost)``
  at run time (cel-go aborts with "operation cancelled: actual cost limit exceeded"), and a
  worst-case estimate (``env.EstimateCost`` with a size estimator bounding every device field:
  driver/domain 63 characters, IDs 32, attribute values 64, 32 attributes per device);
* pkg/apis/resource/validation: a new selector whose estimate exceeds the limit is rejected
  with "too complex, exceeds cost limit";
* cel-go checker/cost.go and interpreter/runtime_cost.go: 1 per identifier, field selection and
  index, 1 per function call (string work: 0.1 per character, regex 0.25 per pattern character),
  10 to create a list, 30 a map, 0 for && / || / ?: themselves; a comprehension (macro) costs its
  range, its accumulator and result, plus range size x (loop condition + loop step);
* k8s.io/apiserver/pkg/cel/library/cost.go (EstimateCallCost): the Kubernetes functions, e.g.
  split and replace 0.2 per character (traversal plus the result), find/findAll priced like
  matches(); quantity() and semver() are global functions it does not price (cel-go's 1).

Run-time charge: each iteration of a macro is charged the cost of its loop condition and step
with every value of size 1 (what cel-go charges for the same work on scalars); nested loops add
their own iterations as they run.  This never charges more than cel-go does, so a selector the
scheduler accepts is never aborted here, and it stops runaway nesting (seven nested ``.all()``)
after at most a million steps instead of running for hours.
"""

from __future__ import annotations

import math
from typing import Any

from .checker import DYN, QUANTITY, SEMVER, Environment
from .syntax import Bind, Call, Ident, Index, ListLit, Lit, Macro, MapLit, Node, Select

MAX_COST = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
MAX_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength
ACTUAL_COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"
TOO_COMPLEX = "too complex, exceeds cost limit"
UNBOUNDED = 2**64 - 1  # math.MaxUint64: cel-go's "unknown" and saturation value

# Sizes the DRA size estimator declares (k8s.io/api/resource/v1 constants).
DRIVER_NAME_MAX = 63  # DriverNameMaxLength
DOMAIN_MAX = 63  # DeviceMaxDomainLength
ID_MAX = 32  # DeviceMaxIDLength
ATTRIBUTE_VALUE_MAX = 64  # DeviceAttributeMaxValueLength
ATTRIBUTES_PER_DEVICE = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
ATTRIBUTE_VALUES_PER_DEVICE = 48  # ResourceSliceMaxAttributeValuesPerDevice (list attributes; includes())

LIST_CREATE = 10  # common.ListCreateBaseCost
MAP_CREATE = 30  # common.MapCreateBaseCost
STRING_TRAVERSAL = 0.1  # common.StringTraversalCostFactor
REGEX_LENGTH = 0.25  # common.RegexStringLengthCostFactor

# 0.1 per character of the receiver (library cost.go), of the argument for startsWith/endsWith (cel-go)
_STRING_SCANS = {"lowerAscii", "upperAscii", "trim", "substring", "indexOf", "lastIndexOf"}
_ARGUMENT_SCANS = {"startsWith", "endsWith"}
_DOUBLE_SCANS = {"split", "replace"}  # traversal plus the construction of the result
_REGEX_SCANS = {"matches", "find", "findAll"}
_LIST_SCANS = {"sum", "min", "max", "isSorted", "join"}
# Opaque Quantity and Semver values compare in constant time, like scalars.
_SCALARS = {"int", "uint", "double", "bool", "null_type", QUANTITY, SEMVER}
_SAME_SIZE = {"lowerAscii", "upperAscii", "trim", "replace", "substring", "split", "find", "findAll"}


def _add(*costs: int) -> int:
    return min(UNBOUNDED, sum(costs))


def _mul(a: int, b: int) -> int:
    return UNBOUNDED if a and b and a * b >= UNBOUNDED else a * b


def _scan(size: int, factor: float = STRING_TRAVERSAL) -> int:
    return UNBOUNDED if size >= UNBOUNDED else math.ceil(size * factor)


class Estimator:
    """Worst-case cost of an expression (``unit_sizes=False``, cel-go's EstimateCost) or its cost
    with every value of size 1 and no loop iterations (``unit_sizes=True``: the run-time charge
    of one iteration of a macro's body)."""

    def __init__(self, environment: Environment, unit_sizes: bool = False, types: dict[int, Any] | None = None) -> None:
        self.unit = unit_sizes
        self.types = types or {}
        self.attribute_size = (
            max(ATTRIBUTE_VALUE_MAX, ATTRIBUTE_VALUES_PER_DEVICE) if environment.list_type_attributes else ATTRIBUTE_VALUE_MAX
        )

    # sizes ------------------------------------------------------------------------------------
    def size(self, node: Node, scope: dict[str, int]) -> int:
        if self.unit or self.types.get(id(node)) in _SCALARS:
            return 1
        if isinstance(node, Lit):
            return len(node.value) if isinstance(node.value, (str, bytes)) else 1
        if isinstance(node, (ListLit, MapLit)):
            return len(node.items) if isinstance(node, ListLit) else len(node.entries)
        if isinstance(node, Ident):
            return scope.get(node.name, UNBOUNDED)
        if isinstance(node, (Select, Index)):
            return self._field_size(node)
        if isinstance(node, Macro) and node.name in {"map", "filter"}:
            return self.size(node.target, scope)
        if isinstance(node, Bind):
            inner = dict(scope)
            inner[node.var] = self.size(node.init, scope)
            return self.size(node.body, inner)
        if isinstance(node, Call):
            if node.name in _SAME_SIZE and node.target is not None:
                return self.size(node.target, scope)
            if node.name == "_+_":
                return _add(*(self.size(a, scope) for a in node.args))
            if node.name in {"size", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "@in", "!_", "includes"}:
                return 1
        return UNBOUNDED

    def _field_size(self, node: Select | Index) -> int:
        """Sizes of ``device`` fields, by path depth (the DRA size estimator)."""
        path = []
        current: Node = node
        while isinstance(current, (Select, Index)):
            path.append(current)
            current = current.target
        if not (isinstance(current, Ident) and current.name == "device"):
            return UNBOUNDED
        first = path[-1]
        field = first.field if isinstance(first, Select) else None
        depth = len(path)
        if field == "driver" and depth == 1:
            return DRIVER_NAME_MAX
        if field == "allowMultipleAllocations" and depth == 1:
            return 1
        if field in {"attributes", "capacity"}:
            if depth <= 2:
                return ATTRIBUTES_PER_DEVICE
            if depth == 3:
                return self.attribute_size if field == "attributes" else 1
        return UNBOUNDED

    def element_size(self, node: Node, scope: dict[str, int]) -> int:
        """Size of one element of a macro's range (the iteration variable)."""
        if self.unit:
            return 1
        if isinstance(node, ListLit):
            return max((self.size(i, scope) for i in node.items), default=1)
        if isinstance(node, (Select, Index)):
            depth_size = self._field_size(node)
            if depth_size == ATTRIBUTES_PER_DEVICE:  # map keys: domains or attribute names
                return DOMAIN_MAX
            if depth_size == self.attribute_size:  # a list attribute's values
                return ATTRIBUTE_VALUE_MAX
        return UNBOUNDED

    # costs ------------------------------------------------------------------------------------
    def cost(self, node: Node, scope: dict[str, int] | None = None) -> int:
        return self._cost(node, scope or {})

    def _cost(self, node: Node, scope: dict[str, int]) -> int:
        if isinstance(node, Lit):
            return 0
        if isinstance(node, Ident):
            return 1
        if isinstance(node, Select):
            return _add(self._cost(node.target, scope), 1)
        if isinstance(node, Index):
            return _add(self._cost(node.target, scope), self._cost(node.key, scope), 1)
        if isinstance(node, ListLit):
            return _add(LIST_CREATE, *(self._cost(i, scope) for i in node.items))
        if isinstance(node, MapLit):
            return _add(MAP_CREATE, *(self._cost(x, scope) for pair in node.entries for x in pair))
        if isinstance(node, Bind):
            inner = dict(scope)
            inner[node.var] = self.size(node.init, scope)
            # cel.bind is a comprehension over an empty list literal: no iterations.
            return _add(LIST_CREATE, self._cost(node.init, scope), self._cost(node.body, inner))
        if isinstance(node, Macro):
            return self._macro(node, scope)
        return self._call(node, scope)

    def iteration(self, node: Macro, scope: dict[str, int]) -> int:
        """Cost of one iteration of a macro: its loop condition plus its loop step."""
        inner = dict(scope)
        inner[node.var] = self.element_size(node.target, scope)
        bodies = [self._cost(a, inner) for a in node.args]
        if node.name == "all":
            # condition @not_strictly_false(accu): call + ident; step accu && predicate
            return _add(3, bodies[0])
        if node.name == "exists":
            # condition @not_strictly_false(!accu): two calls + ident; step accu || predicate
            return _add(4, bodies[0])
        if node.name == "exists_one":
            # step predicate ? accu + 1 : accu
            return _add(2, bodies[0])
        if node.name == "filter":
            # step predicate ? accu + [x] : accu
            return _add(13, bodies[0])
        # map: step accu + [transform], optionally behind a filter predicate
        return _add(12, *bodies)

    def _macro(self, node: Macro, scope: dict[str, int]) -> int:
        fixed = {"all": 1, "exists": 1, "exists_one": 2, "map": LIST_CREATE + 1, "filter": LIST_CREATE + 1}[node.name]
        total = _add(self._cost(node.target, scope), fixed)
        if self.unit:
            return total  # iterations are charged as they run
        return _add(total, _mul(self.size(node.target, scope), self.iteration(node, scope)))

    def _call(self, node: Call, scope: dict[str, int]) -> int:
        name = node.name
        if name == "has" and node.target is None:
            return _add(self._cost(node.args[0], scope), 0)
        parts = ([node.target] if node.target is not None else []) + list(node.args)
        if name == "_?_:_":  # each part priced once: twice per level was 2**depth visits
            cond, yes, no = (self._cost(p, scope) for p in parts)
            return _add(cond, max(yes, no))
        operands = _add(*(self._cost(p, scope) for p in parts))
        if name in {"_&&_", "_||_"}:
            return operands
        sizes = [self.size(p, scope) for p in parts]
        if name in {"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"}:
            call = _scan(min(sizes))
        elif name == "@in":
            call = sizes[1] if isinstance(node.args[1], ListLit) or not self._is_map(node.args[1]) else 1
        elif name == "_+_" and self.types.get(id(node)) in {"string", "bytes", DYN}:
            call = max(1, _scan(_add(*sizes)))
        elif name in _REGEX_SCANS and node.target is not None and len(node.args) == 1:
            call = _mul(_scan(_add(1, sizes[0])), _scan(sizes[1], REGEX_LENGTH))
        elif name == "contains" and node.target is not None:
            call = _mul(_scan(sizes[0]), _scan(sizes[1]))
        elif name in _STRING_SCANS and node.target is not None:
            call = _scan(sizes[0])
        elif name in _ARGUMENT_SCANS and node.target is not None and node.args:
            call = _scan(sizes[1])
        elif name in _DOUBLE_SCANS and node.target is not None:
            call = _scan(sizes[0], 2 * STRING_TRAVERSAL)
        elif name in _LIST_SCANS:
            call = max(1, sizes[0])
        elif name == "includes":
            call = ATTRIBUTE_VALUES_PER_DEVICE if not self.unit else 1
        else:
            call = 1
        return _add(operands, call)

    @staticmethod
    def _is_map(node: Node) -> bool:
        return isinstance(node, MapLit) or (
            isinstance(node, (Select, Index)) and _device_depth(node) in {1, 2}
        )


def _device_depth(node: Node) -> int:
    depth = 0
    while isinstance(node, (Select, Index)):
        depth += 1
        node = node.target
    return depth if isinstance(node, Ident) and node.name == "device" else -1


def estimate(node: Node, environment: Environment, types: dict[int, Any] | None = None) -> int:
    """cel-go's worst-case estimate (saturating at 2**64-1); ``types`` from :func:`checker.check`."""
    return Estimator(environment, types=types).cost(node)


def iteration_charge(node: Macro, environment: Environment) -> int:
    """What one iteration of this macro adds to the run-time cost."""
    return max(1, Estimator(environment, unit_sizes=True).iteration(node, {}))
