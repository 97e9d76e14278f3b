"""The fast path fused: a selector compiled to one Python function, generated from its AST.

The closures of :mod:`fastpath` make every AST node a Python call: the class selector
``device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`` took
seven calls per device (~1.2 us), where a plain Python loop reading the same values takes
~0.25 us.  Here the nodes real selectors are made of (``device.*``, attribute and capacity
look-ups, literals, ``==``/``!=``, ordering, ``&&``/``||``/``!``/``?:``, ``in``, indexing,
arithmetic, ``has()`` and library calls) become statements of one function, written with the
same steps and in the same order as the closures: CEL's commutative error semantics (an error
on one side of ``&&``/``||`` is absorbed only by the absorbing value on the other), runtime
errors raised where the closure raises them, the same library functions (:mod:`lib`) on the
same values.  Any other subtree (map literals, selections on a whole ``device.attributes``...)
is its closure, called from the generated code; a selector with macros or ``cel.bind`` (which
need a frame of variables and run-time cost) stays entirely on the closures.

Callgrind, ``kubectl gpu explain -f claim.yaml --slices slices.yaml`` over 1,000 ResourceSlices
(8,000 devices, scripts/bench_explain.py's claim): explain_objects 911 M -> 753 M instructions and
the whole run 2,566 M -> 2,413 M, with the engine's shared results (explain/engine.py).  Of
that, the three selectors over the 8,000 devices: 217 M -> 90 M (~27,000 -> ~11,000 instructions
a device), for ~10 M spent once writing and compiling the three functions.

Each selector is one function, ``every(devices)``: the verdict for each device (True, False, or
the CelRuntimeError :meth:`CompiledSelector.matches` would raise) in one call, without a Python
call per device; ``matches`` asks it about one device.  The differential property tests
(tests/test_cel_differential.py, tests/test_cel_codegen.py) hold it to cel-python.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from . import lib
from .checker import Environment
from kubectl_gpu.dra.devices import Device
from .errors import CelRuntimeError, EvalError
from .fastpath import (
    EMPTY,
    MISSING,
    ClosureCompiler,
    CostLimitExceeded,
    bool_operand_error,
    fold,
    index_value,
    is_constant,
    is_device,
    may_be_domain_map,
    member,
    plain,
    select_value,
)
from .syntax import Bind, Call, Ident, Index, ListLit, Lit, Macro, Node, Select
from kubectl_gpu.dra.values import Quantity, Semver

# Nested ``&&``/``||``/``?:`` written as nested blocks before a deeper one is left to its closure:
# CPython allows 20 nested blocks (each ``&&`` is a try) and 100 levels of indentation.
MAX_NESTING = 8

_ORDERINGS = {"_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">="}


def not_bool(value: Any) -> CelRuntimeError:
    """A selector whose value is not a bool (Kubernetes' wording)."""
    return CelRuntimeError(f"CEL result of type {lib.type_name(value)} could not be converted to bool")


NESTED_TOO_DEEPLY = "expression is nested too deeply"


class Generated:
    """One selector as a generated function: ``every(devices)`` -> each device's verdict."""

    __slots__ = ("every", "source")

    def __init__(self, every: Callable[[Sequence[Device]], list], source: str) -> None:
        self.every = every
        self.source = source  # the generated code, for tests and for reading

    def matches(self, device: Device) -> bool:
        """One device's verdict: True, False, or the CelRuntimeError raised."""
        verdict = self.every((device,))[0]
        if verdict is True or verdict is False:
            return verdict
        raise verdict


def generate(node: Node, environment: Environment, cost_limit: int) -> Generated | None:
    """The selector as one function, or None when it is left to the closures (macros, cel.bind,
    or code Python will not compile).  Raises fastpath.Unsupported where compile_fast does."""
    if _has_variables(node):
        return None
    writer = _Writer(environment, cost_limit)
    try:
        result = writer.value(node)
    except RecursionError:
        return None
    body = writer.lines
    every = [
        "def every(devices):",
        "    out = []",
        "    append = out.append",
        "    for d in devices:",
        "        try:",
        *("            " + line for line in body),
        "        except _CelRuntimeError as err:",
        "            append(err)",
        "            continue",
        "        except RecursionError:",
        "            append(_CelRuntimeError(_NESTED_TOO_DEEPLY))",
        "            continue",
        f"        if {result} is True or {result} is False:",
        f"            append({result})",
        "        else:",
        f"            append(_not_bool({result}))",
        "    return out",
    ]
    source = "\n".join(every) + "\n"
    namespace = dict(writer.names)
    try:
        code = compile(source, "<selector>", "exec")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None  # CPython's limits (nesting, size): the closures evaluate it
    exec(code, namespace)  # noqa: S102 - our own code, generated from the checked AST
    return Generated(namespace["every"], source)


def _has_variables(node: Node) -> bool:
    if isinstance(node, (Macro, Bind)):
        return True
    if isinstance(node, (Lit, Ident)):
        return False
    if isinstance(node, Select):
        return _has_variables(node.target)
    if isinstance(node, Index):
        return _has_variables(node.target) or _has_variables(node.key)
    if isinstance(node, Call):
        return (node.target is not None and _has_variables(node.target)) or any(_has_variables(a) for a in node.args)
    if isinstance(node, ListLit):
        return any(_has_variables(i) for i in node.items)
    return any(_has_variables(k) or _has_variables(v) for k, v in node.entries)  # type: ignore[attr-defined]


class _Writer:
    """Writes the statements computing each node into a fresh local, mirroring fastpath.ClosureCompiler."""

    def __init__(self, environment: Environment, cost_limit: int) -> None:
        self.environment = environment
        self.closures = ClosureCompiler(environment, cost_limit)
        self.names: dict[str, Any] = {
            "_EMPTY": EMPTY, "_MISSING": MISSING, "_EvalError": EvalError, "_CelRuntimeError": CelRuntimeError,
            "_CostLimitExceeded": CostLimitExceeded, "_NESTED_TOO_DEEPLY": NESTED_TOO_DEEPLY, "_not_bool": not_bool,
            "_equals": lib.equals, "_compare": lib.compare, "_no_overload": lib.no_overload,
            "_bool_operand_error": bool_operand_error, "_plain": plain, "_index_value": index_value,
            "_member": member, "_select_value": select_value, "_arithmetic": lib.arithmetic, "_negate": lib.negate,
            "_ASCII_LOWER": lib.ASCII_LOWER,
        }
        self.lines: list[str] = []
        self.indent = ""
        self.nesting = 0
        self.count = 0

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def local(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def constant(self, value: Any) -> str:
        name = f"_k{len(self.names)}"
        self.names[name] = value
        return name

    def closure(self, node: Node) -> str:
        """The node's closure, called from the generated code (no variables: no frame)."""
        name = self.constant(self.closures.compile(node, {}))
        result = self.local()
        self.emit(f"{result} = {name}(d, None)")
        return result

    def value(self, node: Node) -> str:
        """Emit the statements computing ``node``; the name holding its value."""
        if isinstance(node, Lit):
            return self.constant(lib.FUNCTIONS["uint"](node.value) if node.type == "uint" else node.value)
        if isinstance(node, Ident) and node.name == "device":
            return "d"  # no variables here; any other name is refused by its closure (Unsupported)
        if isinstance(node, Select):
            return self.select(node)
        if isinstance(node, Index):
            return self.index(node)
        if isinstance(node, ListLit):
            if all(isinstance(i, Lit) and i.type != "uint" for i in node.items):
                return self.constant([i.value for i in node.items])  # as the closure: one shared list
            items = [self.value(i) for i in node.items]
            result = self.local()
            self.emit(f"{result} = [{', '.join(f'_plain({i})' for i in items)}]")
            return result
        if isinstance(node, Call):
            return self.call(node)
        return self.closure(node)

    # -- access -------------------------------------------------------------------------------------
    def domain(self, node: Node) -> str | None:
        """``device.attributes['dom']`` (or ``.capacity``): the expression reading that map."""
        if isinstance(node, Index) and isinstance(node.target, Select) and is_device(node.target.target, {}):
            key = node.key
            if node.target.field in {"attributes", "capacity"} and isinstance(key, Lit) and key.type == "string":
                return f"d.{node.target.field}.get({self.constant(key.value)}, _EMPTY)"
        return None

    def select(self, node: Select) -> str:
        field = node.field
        if is_device(node.target, {}):
            if field == "driver":
                return self.assign("d.driver")
            if field == "allowMultipleAllocations":
                return self.assign("d.allow_multiple_allocations")
            return self.closure(node)  # a whole DomainMap
        domain = self.domain(node.target)
        if domain is not None:
            result = self.assign(f"{domain}.get({self.constant(field)}, _MISSING)")
            self.emit(f"if {result} is _MISSING:")
            self.emit(f"    raise _EvalError({self.constant(f'no such key: {field}')})")
            return result
        target = self.value(node.target)
        return self.assign(f"_select_value({target}, {self.constant(field)})")

    def index(self, node: Index) -> str:
        domain = self.domain(node)
        if domain is not None:
            return self.assign(domain)
        target = self.value(node.target)
        key = self.value(node.key)
        return self.assign(f"_index_value({target}, {key})")

    def assign(self, expression: str) -> str:
        result = self.local()
        self.emit(f"{result} = {expression}")
        return result

    # -- calls --------------------------------------------------------------------------------------
    def call(self, node: Call) -> str:
        name = node.name
        if name == "has" and node.target is None:
            return self.has(node)
        if name in {"_&&_", "_||_"}:
            return self.logic(node)
        if name == "!_":
            operand = self.value(node.args[0])
            result = self.local()
            self.emit(f"if {operand} is True:")
            self.emit(f"    {result} = False")
            self.emit(f"elif {operand} is False:")
            self.emit(f"    {result} = True")
            self.emit("else:")
            self.emit(f"    raise _no_overload('!_', {operand})")
            return result
        if name == "_?_:_":
            return self.choose(node)
        if name in {"_==_", "_!=_"}:
            return self.equality(node)
        if name in _ORDERINGS:
            left, right = (self.value(a) for a in node.args)
            op = _ORDERINGS[name]
            right_node = node.args[1]
            if isinstance(right_node, Lit) and right_node.type in {"int", "string"}:
                # lib.compare's own first test, for a literal of a known class
                kind = "int" if right_node.type == "int" else "str"
                return self.assign(f"({left} {op} {right}) if {left}.__class__ is {kind} else _compare({op!r}, {left}, {right})")
            return self.assign(f"_compare({op!r}, {left}, {right})")
        if name == "@in":
            item, container = (self.value(a) for a in node.args)
            return self.assign(f"_member({item}, {container})")
        if name in {"_+_", "_-_", "_*_", "_/_", "_%_"}:
            left, right = (self.value(a) for a in node.args)
            return self.assign(f"_arithmetic({name!r}, {left}, {right})")
        if name == "-_":
            return self.assign(f"_negate({self.value(node.args[0])})")
        function = lib.FUNCTIONS.get(name)
        if function is None:
            return self.closure(node)  # raises Unsupported, as the closure compile does
        parts = ([node.target] if node.target is not None else []) + list(node.args)
        wrapped = any(may_be_domain_map(p, {}) for p in parts)
        if not wrapped and all(is_constant(p) for p in parts):
            constants = [self.closures.compile(p, {}) for p in parts]
            folded = fold(function, constants)
            if folded is not None:
                return self.constant(folded(None, None))
            # A constant call that fails: per device, as the closure (its parts evaluated once).
            args = [self.assign(f"{self.constant(c)}(d, None)") for c in constants]
        else:
            args = [self.value(p) for p in parts]
        if wrapped:
            args = [f"_plain({a})" for a in args]
        else:
            inline = self.inline(function, args)
            if inline is not None:
                return self.assign(inline)
        return self.assign(f"{self.constant(function)}({', '.join(args)})")

    def inline(self, function: Callable[..., Any], args: list[str]) -> str | None:
        """A library function's own first test and its branch, written inline for the functions
        selectors call on every device (a string attribute, a literal argument); any other
        argument goes to the function itself, which words the error.  Only lib's functions are
        written out (a test that replaces one gets its own called)."""
        call = f"{self.constant(function)}({', '.join(args)})"
        if function is lib.f_lower_ascii and len(args) == 1:
            (a,) = args
            return f"({a}.lower() if {a}.isascii() else {a}.translate(_ASCII_LOWER)) if {a}.__class__ is str else {call}"
        if len(args) != 2 or args[1] not in self.names:
            return None
        a, b = args
        literal = self.names[b]  # the argument is a constant (a literal or a folded call)
        if function is lib.f_starts_with and literal.__class__ is str:
            return f"{a}.startswith({b}) if {a}.__class__ is str else {call}"
        if function is lib.f_matches and literal.__class__ is str:
            try:
                pattern = lib.compiled_pattern(literal)
            except Exception:  # noqa: BLE001 - a bad pattern: the function raises it per device, as before
                return None
            return f"({self.constant(pattern)}.search({a}) is not None) if {a}.__class__ is str else {call}"
        if literal.__class__ in (Quantity, Semver):  # lib._same_kind
            kind = self.constant(literal.__class__)
            if function is lib.f_compare_to:
                return f"{a}.compare_to({b}) if {a}.__class__ is {kind} else {call}"
            if function is lib.f_is_greater_than:
                return f"({a}.compare_to({b}) == 1) if {a}.__class__ is {kind} else {call}"
            if function is lib.f_is_less_than:
                return f"({a}.compare_to({b}) == -1) if {a}.__class__ is {kind} else {call}"
        return None

    def has(self, node: Call) -> str:
        selection = node.args[0]
        if isinstance(selection, Select):
            if is_device(selection.target, {}):
                return self.constant(selection.field in self.environment.device_fields)
            domain = self.domain(selection.target)
            if domain is not None:
                return self.assign(f"{self.constant(selection.field)} in {domain}")
        return self.closure(node)

    def equality(self, node: Call) -> str:
        left_node, right_node = node.args
        negate = "not " if node.name == "_!=_" else ""
        left, right = self.value(left_node), self.value(right_node)
        if may_be_domain_map(left_node, {}) or may_be_domain_map(right_node, {}):
            return self.assign(f"{negate}_equals(_plain({left}), _plain({right}))")
        if isinstance(right_node, Lit) and right_node.type in {"string", "int"}:
            # lib.equals' own first test, for a literal of a known class
            kind = "str" if right_node.type == "string" else "int"
            return self.assign(f"{negate}(({left} == {right}) if {left}.__class__ is {kind} else _equals({left}, {right}))")
        return self.assign(f"{negate}_equals({left}, {right})")

    # -- blocks -------------------------------------------------------------------------------------
    def nested(self) -> bool:
        return self.nesting >= MAX_NESTING

    @contextmanager
    def deeper(self) -> Iterator[None]:
        """The statements emitted inside are one level deeper (a block of an if, else or try)."""
        outer = self.indent
        self.indent += "    "
        self.nesting += 1
        try:
            yield
        finally:
            self.indent = outer
            self.nesting -= 1

    def block(self, node: Node) -> str:
        """``node``'s statements one level deeper."""
        with self.deeper():
            return self.value(node)

    def side(self, node: Node) -> str:
        """One operand of ``&&``/``||``: its value, or the error it raised (absorbed or raised later)."""
        result = self.local()
        self.emit("try:")
        value = self.block(node)
        self.emit(f"    {result} = {value}")
        self.emit("except _CostLimitExceeded:")
        self.emit("    raise")
        self.emit("except _EvalError as err:")
        self.emit(f"    {result} = err")
        return result

    def logic(self, node: Call) -> str:
        if self.nested():
            return self.closure(node)
        stop = "True" if node.name == "_||_" else "False"  # the absorbing value
        result = self.local()
        left = self.side(node.args[0])
        self.emit(f"if {left} is {stop}:")
        self.emit(f"    {result} = {stop}")
        self.emit("else:")
        with self.deeper():  # the right side is evaluated only when the left one does not decide
            right = self.side(node.args[1])
        self.emit(f"    if {right} is {stop}:")
        self.emit(f"        {result} = {stop}")
        self.emit(f"    elif ({left} is True or {left} is False) and ({right} is True or {right} is False):")
        self.emit(f"        {result} = {'False' if stop == 'True' else 'True'}")
        self.emit("    else:")
        self.emit(f"        raise _bool_operand_error({node.name!r}, {left}, {right})")
        return result

    def choose(self, node: Call) -> str:
        if self.nested():
            return self.closure(node)
        cond_node, yes_node, no_node = node.args
        cond = self.value(cond_node)
        result = self.local()
        self.emit(f"if {cond} is True:")
        yes = self.block(yes_node)
        self.emit(f"    {result} = {yes}")
        self.emit(f"elif {cond} is False:")
        no = self.block(no_node)
        self.emit(f"    {result} = {no}")
        self.emit("else:")
        self.emit(f"    raise _no_overload('_?_:_', {cond})")
        return result
