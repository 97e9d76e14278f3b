"""The runtime library of the DRA CEL environment, on plain Python values.

Kubernetes' DRA environment is cel-go's standard library plus: ext.Strings (v2), the Kubernetes
libraries for regex (find/findAll), lists (isSorted/sum/min/max/indexOf/lastIndexOf), quantity
and semver.  Both evaluation paths call these functions, so they agree by construction.

Values: str, int, float, bool, bytes, None, list, dict, Quantity, Semver.  cel-python's own
types subclass the Python ones (StringType is a str...), except BoolType which is an int: every
type test goes through :func:`type_name`.
"""

from __future__ import annotations

import math
import operator
import sys
from functools import lru_cache
from typing import Any, Callable

import re as _stdlib_re

from .cost import ATTRIBUTE_VALUES_PER_DEVICE
from .errors import EvalError
from kubectl_gpu.dra.values import INT64_MAX, INT64_MIN, InvalidValue, Quantity, Semver

# Exposed to callers that want the names, e.g. to list what is supported in help output.
NUMERIC = frozenset({"int", "uint", "double"})


def type_name(value: Any) -> str:
    known = _TYPE_NAMES.get(value.__class__)  # the common case: one dict lookup
    if known is not None:
        return known
    return _type_name(value)


def _type_name(value: Any) -> str:
    celtypes = sys.modules.get("celpy.celtypes")  # no cel-python value exists before it is loaded
    if celtypes is not None:
        if isinstance(value, celtypes.BoolType):
            return "bool"
        if isinstance(value, celtypes.UintType):
            return "uint"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if value is None:
        return "null_type"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Quantity):
        return "Quantity"
    if isinstance(value, Semver):
        return "Semver"
    return type(value).__name__


def no_overload(name: str, *args: Any) -> EvalError:
    return EvalError(f"no such overload: {name}({', '.join(type_name(a) for a in args)})")


def equals(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality: values of different types are unequal, numbers compare by value."""
    cls = a.__class__
    if cls is b.__class__ and (cls is str or cls is int):
        return a == b
    ta, tb = type_name(a), type_name(b)
    if ta in NUMERIC and tb in NUMERIC:
        return float(a) == float(b) if ("double" in (ta, tb)) else int(a) == int(b)
    if ta != tb:
        return False
    if ta == "list":
        return len(a) == len(b) and all(equals(x, y) for x, y in zip(a, b))
    if ta == "map":
        if len(a) != len(b):
            return False
        for key, value in a.items():
            match = [v for k, v in b.items() if equals(k, key)]
            if not match or not equals(value, match[0]):
                return False
        return True
    if ta == "bool":
        return bool(a) == bool(b)
    return a == b


def compare(op: str, a: Any, b: Any) -> bool:
    """Ordering: numbers across types, and string/bool/bytes against their own type."""
    cls = a.__class__
    if cls is b.__class__ and (cls is int or cls is str):
        return _ORDERINGS[op](a, b)
    ta, tb = type_name(a), type_name(b)
    if ta in NUMERIC and tb in NUMERIC:
        # plain Python numbers: exact across int/uint/double (cel-python's types refuse to mix)
        x = float(a) if ta == "double" else int(a)
        y = float(b) if tb == "double" else int(b)
    elif ta == tb and ta in {"string", "bytes"}:
        x, y = a, b
    elif ta == tb == "bool":
        x, y = bool(a), bool(b)
    else:
        raise no_overload(f"_{op}_", a, b)
    return _ORDERINGS[op](x, y)


_ORDERINGS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def contains_in(item: Any, container: Any) -> bool:
    cls = item.__class__
    if container.__class__ is list and (cls is str or cls is int):
        for x in container:
            if x.__class__ is cls:
                if x == item:
                    return True
            elif equals(item, x):
                return True
        return False
    kind = type_name(container)
    if kind == "list":
        return any(equals(item, x) for x in container)
    if kind == "map":
        return any(equals(item, k) for k in container)
    raise no_overload("@in", item, container)


def index(container: Any, key: Any) -> Any:
    kind = type_name(container)
    if kind == "map":
        try:
            return container[key]
        except (KeyError, TypeError):
            pass
        for k, v in container.items():
            if equals(k, key):
                return v
        raise EvalError(f"no such key: {key}")
    if kind == "list":
        if type_name(key) not in {"int", "uint"} and not (type_name(key) == "double" and float(key).is_integer()):
            raise no_overload("_[_]", container, key)
        position = int(key)
        if position < 0 or position >= len(container):
            raise EvalError(f"index out of range: {position}")
        return container[position]
    raise no_overload("_[_]", container, key)


# --- functions -------------------------------------------------------------------------------


def _need(name: str, args: tuple[Any, ...], *kinds: str) -> None:
    if len(args) != len(kinds) or any(k != "any" and type_name(a) != k for a, k in zip(args, kinds)):
        raise no_overload(name, *args)


def _int_result(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise EvalError("integer overflow")
    return value


def f_size(*args: Any) -> int:
    if len(args) == 1 and type_name(args[0]) in {"string", "bytes", "list", "map"}:
        return len(args[0])
    raise no_overload("size", *args)


def f_contains(*args: Any) -> bool:
    _need("contains", args, "string", "string")
    return args[1] in args[0]


def f_starts_with(*args: Any) -> bool:
    if len(args) == 2 and args[0].__class__ is str and args[1].__class__ is str:
        return args[0].startswith(args[1])
    _need("startsWith", args, "string", "string")
    return args[0].startswith(args[1])


def f_ends_with(*args: Any) -> bool:
    _need("endsWith", args, "string", "string")
    return args[0].endswith(args[1])


# Patterns made only of ASCII literals, ".", "^", "*", "+", "?", "|", "()" and "[]" classes mean
# the same to Python's re as to RE2 (leftmost-first, "." not matching newline, no flags), and
# Python's re runs them ~20x faster than the RE2 binding; anything else (escapes such as \d that
# are Unicode-aware in Python, "$", "{n}", "(?...)") goes to RE2.
_PORTABLE_PATTERN = _stdlib_re.compile(r"[A-Za-z0-9 _.^*+?|()\[\]:/,;=@%&'\"<>~`!#-]*")


def _re2() -> Any:
    """CEL regular expressions are RE2 (cel-python already depends on google-re2; Python's re
    stands in where it is missing).  Imported by the first pattern that needs it, not with this
    module: most selectors' patterns are portable (above) and never need the binding, whose
    import costs 7.9M instructions under callgrind (four times this module's)."""
    try:
        import re2
    except ImportError:  # pragma: no cover - cel-python always brings it
        return _stdlib_re
    return re2


@lru_cache(maxsize=256)
def compiled_pattern(pattern: str) -> Any:
    # A final "$" is RE2's end of text: Python's \Z (its "$" would also match before a final newline).
    body, end = (pattern[:-1], r"\Z") if pattern.endswith("$") and not pattern.endswith("\\$") else (pattern, "")
    if body.isascii() and _PORTABLE_PATTERN.fullmatch(body) and "(?" not in body and "[:" not in body:
        try:
            return _stdlib_re.compile(body + end)
        except _stdlib_re.error:
            pass  # RE2 words the error
    try:
        return _re2().compile(pattern)
    except Exception as err:  # re2.error / re.error
        raise EvalError(f"invalid regular expression {pattern!r}: {err}") from None


def f_matches(*args: Any) -> bool:
    if len(args) == 2 and args[0].__class__ is str and args[1].__class__ is str:
        return compiled_pattern(args[1]).search(args[0]) is not None
    _need("matches", args, "string", "string")
    return compiled_pattern(str(args[1])).search(str(args[0])) is not None


def f_find(*args: Any) -> str:
    _need("find", args, "string", "string")
    found = compiled_pattern(str(args[1])).search(str(args[0]))
    return found.group(0) if found else ""


def f_find_all(*args: Any) -> list[str]:
    if len(args) == 2:
        _need("findAll", args, "string", "string")
        limit = -1
    else:
        _need("findAll", args, "string", "string", "int")
        limit = int(args[2])
    if limit == 0:
        return []
    found = [m.group(0) for m in compiled_pattern(str(args[1])).finditer(str(args[0]))]
    return found if limit < 0 else found[:limit]


ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)})
_ASCII_UPPER = str.maketrans({chr(c): chr(c - 32) for c in range(ord("a"), ord("z") + 1)})


def f_lower_ascii(*args: Any) -> str:
    if len(args) == 1 and args[0].__class__ is str:
        text = args[0]
        return text.lower() if text.isascii() else text.translate(ASCII_LOWER)
    _need("lowerAscii", args, "string")
    return str(args[0]).translate(ASCII_LOWER)


def f_upper_ascii(*args: Any) -> str:
    _need("upperAscii", args, "string")
    return str(args[0]).translate(_ASCII_UPPER)


def f_trim(*args: Any) -> str:
    _need("trim", args, "string")
    return str(args[0]).strip()


def f_replace(*args: Any) -> str:
    if len(args) == 3:
        _need("replace", args, "string", "string", "string")
        count = -1
    else:
        _need("replace", args, "string", "string", "string", "int")
        count = int(args[3])
    return str(args[0]).replace(str(args[1]), str(args[2]), count if count >= 0 else -1)


def f_split(*args: Any) -> list[str]:
    if len(args) == 2:
        _need("split", args, "string", "string")
        limit = -1
    else:
        _need("split", args, "string", "string", "int")
        limit = int(args[2])
    text, sep = str(args[0]), str(args[1])
    if limit == 0:
        return []
    if sep == "":
        chars = list(text)
        if 0 < limit < len(chars):
            return chars[: limit - 1] + ["".join(chars[limit - 1 :])]
        return chars
    return text.split(sep, limit - 1 if limit > 0 else -1)


def f_substring(*args: Any) -> str:
    if len(args) == 2:
        _need("substring", args, "string", "int")
        start, end = int(args[1]), len(args[0])
    else:
        _need("substring", args, "string", "int", "int")
        start, end = int(args[1]), int(args[2])
    text = str(args[0])
    if start < 0 or start > len(text):
        raise EvalError(f"index out of range: {start}")
    if end < 0 or end > len(text):
        raise EvalError(f"index out of range: {end}")
    if start > end:
        raise EvalError(f"invalid substring range. start: {start}, end: {end}")
    return text[start:end]


def f_char_at(*args: Any) -> str:
    _need("charAt", args, "string", "int")
    text, position = str(args[0]), int(args[1])
    if position < 0 or position > len(text):
        raise EvalError(f"index out of range: {position}")
    return text[position : position + 1]


def f_index_of(*args: Any) -> int:
    if args and type_name(args[0]) == "list":
        _need("indexOf", args, "list", "any")
        return next((i for i, x in enumerate(args[0]) if equals(x, args[1])), -1)
    if len(args) == 2:
        _need("indexOf", args, "string", "string")
        offset = 0
    else:
        _need("indexOf", args, "string", "string", "int")
        offset = int(args[2])
    text = str(args[0])
    if offset < 0 or offset > len(text):
        raise EvalError(f"index out of range: {offset}")
    return text.find(str(args[1]), offset)


def f_last_index_of(*args: Any) -> int:
    if args and type_name(args[0]) == "list":
        _need("lastIndexOf", args, "list", "any")
        return next((i for i in range(len(args[0]) - 1, -1, -1) if equals(args[0][i], args[1])), -1)
    if len(args) == 2:
        _need("lastIndexOf", args, "string", "string")
        offset = len(args[0])
    else:
        _need("lastIndexOf", args, "string", "string", "int")
        offset = int(args[2])
    text, sub = str(args[0]), str(args[1])
    if offset < 0 or offset > len(text):
        raise EvalError(f"index out of range: {offset}")
    return text.rfind(sub, 0, offset + len(sub))


def f_join(*args: Any) -> str:
    if len(args) == 1:
        _need("join", args, "list")
        sep = ""
    else:
        _need("join", args, "list", "string")
        sep = str(args[1])
    if any(type_name(x) != "string" for x in args[0]):
        raise no_overload("join", *args)
    return sep.join(str(x) for x in args[0])


def _numbers(name: str, args: tuple[Any, ...]) -> list[Any]:
    _need(name, args, "list")
    kinds = {type_name(x) for x in args[0]}
    if not kinds <= NUMERIC and not (name in {"min", "max", "isSorted"} and len(kinds) == 1 and kinds <= {"string", "bool", "bytes"}):
        raise no_overload(name, *args)
    return list(args[0])


def f_is_sorted(*args: Any) -> bool:
    items = _numbers("isSorted", args)
    return all(not compare("<", items[i + 1], items[i]) for i in range(len(items) - 1))


def f_sum(*args: Any) -> Any:
    items = _numbers("sum", args)
    total = sum(items) if items else 0
    return _int_result(total) if isinstance(total, int) else total


def _extreme(name: str, beats: str, args: tuple[Any, ...]) -> Any:
    """The first item that no later item ``beats`` (CEL's "<" for min, ">" for max)."""
    items = _numbers(name, args)
    if not items:
        raise EvalError(f"{name} called on empty list")
    best = items[0]
    for x in items[1:]:
        if compare(beats, x, best):
            best = x
    return best


def f_min(*args: Any) -> Any:
    return _extreme("min", "<", args)


def f_max(*args: Any) -> Any:
    return _extreme("max", ">", args)


# Quantity


def f_quantity(*args: Any) -> Quantity:
    _need("quantity", args, "string")
    try:
        return Quantity.parse(str(args[0]))
    except InvalidValue as err:
        raise EvalError(str(err)) from None


def f_is_quantity(*args: Any) -> bool:
    _need("isQuantity", args, "string")
    return Quantity.is_valid(str(args[0]))


def _quantity_or_semver(name: str, args: tuple[Any, ...]) -> str:
    if len(args) == 2 and type_name(args[0]) == type_name(args[1]) and type_name(args[0]) in {"Quantity", "Semver"}:
        return type_name(args[0])
    raise no_overload(name, *args)


def _same_kind(args: tuple[Any, ...]) -> bool:
    return len(args) == 2 and args[0].__class__ is args[1].__class__ and args[0].__class__ in (Quantity, Semver)


def f_compare_to(*args: Any) -> int:
    if not _same_kind(args):
        _quantity_or_semver("compareTo", args)
    return args[0].compare_to(args[1])


def f_is_greater_than(*args: Any) -> bool:
    if not _same_kind(args):
        _quantity_or_semver("isGreaterThan", args)
    return args[0].compare_to(args[1]) == 1


def f_is_less_than(*args: Any) -> bool:
    if not _same_kind(args):
        _quantity_or_semver("isLessThan", args)
    return args[0].compare_to(args[1]) == -1


def _quantity_operand(name: str, args: tuple[Any, ...]) -> Any:
    if len(args) == 2 and type_name(args[0]) == "Quantity" and type_name(args[1]) in {"Quantity", "int"}:
        return args[1] if type_name(args[1]) == "Quantity" else int(args[1])
    raise no_overload(name, *args)


def f_add(*args: Any) -> Quantity:
    return args[0].add(_quantity_operand("add", args))


def f_sub(*args: Any) -> Quantity:
    return args[0].sub(_quantity_operand("sub", args))


def f_as_integer(*args: Any) -> int:
    _need("asInteger", args, "Quantity")
    try:
        return args[0].as_integer()
    except InvalidValue as err:
        raise EvalError(str(err)) from None


def f_as_approximate_float(*args: Any) -> float:
    _need("asApproximateFloat", args, "Quantity")
    return args[0].as_approximate_float()


def f_is_integer(*args: Any) -> bool:
    _need("isInteger", args, "Quantity")
    return args[0].is_integer()


def f_sign(*args: Any) -> int:
    _need("sign", args, "Quantity")
    return args[0].sign()


# Semver


def f_semver(*args: Any) -> Semver:
    if len(args) == 1:
        _need("semver", args, "string")
    else:
        _need("semver", args, "string", "bool")
    try:
        return Semver.parse(str(args[0]), normalize=bool(args[1]) if len(args) == 2 else False)
    except InvalidValue as err:
        raise EvalError(str(err)) from None


def f_is_semver(*args: Any) -> bool:
    if len(args) == 1:
        _need("isSemver", args, "string")
    else:
        _need("isSemver", args, "string", "bool")
    return Semver.is_valid(str(args[0]), normalize=bool(args[1]) if len(args) == 2 else False)


def f_major(*args: Any) -> int:
    _need("major", args, "Semver")
    return args[0].major


def f_minor(*args: Any) -> int:
    _need("minor", args, "Semver")
    return args[0].minor


def f_patch(*args: Any) -> int:
    _need("patch", args, "Semver")
    return args[0].patch


# name -> implementation; receiver-style calls pass the receiver first.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "size": f_size,
    "contains": f_contains,
    "startsWith": f_starts_with,
    "endsWith": f_ends_with,
    "matches": f_matches,
    "find": f_find,
    "findAll": f_find_all,
    "lowerAscii": f_lower_ascii,
    "upperAscii": f_upper_ascii,
    "trim": f_trim,
    "replace": f_replace,
    "split": f_split,
    "substring": f_substring,
    "charAt": f_char_at,
    "indexOf": f_index_of,
    "lastIndexOf": f_last_index_of,
    "join": f_join,
    "isSorted": f_is_sorted,
    "sum": f_sum,
    "min": f_min,
    "max": f_max,
    "quantity": f_quantity,
    "isQuantity": f_is_quantity,
    "compareTo": f_compare_to,
    "isGreaterThan": f_is_greater_than,
    "isLessThan": f_is_less_than,
    "add": f_add,
    "sub": f_sub,
    "asInteger": f_as_integer,
    "asApproximateFloat": f_as_approximate_float,
    "isInteger": f_is_integer,
    "sign": f_sign,
    "semver": f_semver,
    "isSemver": f_is_semver,
    "major": f_major,
    "minor": f_minor,
    "patch": f_patch,
}



# --- arithmetic, conversions, includes (both paths) -------------------------------------------

UINT64_MAX = 2**64 - 1


def _uint(value: int) -> Any:
    if not 0 <= value <= UINT64_MAX:
        raise EvalError("unsigned integer overflow")
    return _celtypes().UintType(value)


def _celtypes() -> Any:
    """cel-python's types, loaded on first use: a uint is its UintType on both paths, and the fast
    path makes one only for a uint literal or uint() (loading cel-python takes about 0.1 s)."""
    import celpy.celtypes

    return celpy.celtypes


def _go_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def arithmetic(name: str, a: Any, b: Any) -> Any:
    """``_+_ _-_ _*_ _/_ _%_`` as cel-go: no mixed numeric types, int64/uint64 overflow and
    division by zero are errors, division truncates toward zero, doubles follow IEEE 754."""
    if a.__class__ is int and b.__class__ is int and (b or name in {"_+_", "_-_", "_*_"}):
        result = _INT_OPERATIONS[name](a, b)
        if INT64_MIN <= result <= INT64_MAX:
            return result
        raise EvalError("integer overflow")
    ta, tb = type_name(a), type_name(b)
    if name == "_+_" and ta == tb and ta in {"string", "bytes", "list"}:
        return list(a) + list(b) if ta == "list" else a + b
    if ta != tb or ta not in NUMERIC or (ta == "double" and name == "_%_"):
        raise no_overload(name, a, b)
    if ta == "double":
        x, y = float(a), float(b)
        if name == "_/_":
            if y == 0.0:
                return math.copysign(math.inf, x) * math.copysign(1.0, y) if x != 0.0 and x == x else math.nan
            return x / y
        return {"_+_": x + y, "_-_": x - y, "_*_": x * y}[name]
    x, y = int(a), int(b)
    if name in {"_/_", "_%_"} and y == 0:
        raise EvalError("division by zero" if name == "_/_" else "modulus by zero")
    if name == "_+_":
        result = x + y
    elif name == "_-_":
        result = x - y
    elif name == "_*_":
        result = x * y
    elif name == "_/_":
        result = _go_div(x, y)
    else:
        result = x - y * _go_div(x, y)
    return _uint(result) if ta == "uint" else _int_result(result)


_INT_OPERATIONS: dict[str, Callable[[int, int], int]] = {
    "_+_": operator.add,
    "_-_": operator.sub,
    "_*_": operator.mul,
    "_/_": lambda x, y: _go_div(x, y),
    "_%_": lambda x, y: x - y * _go_div(x, y),
}


def negate(value: Any) -> Any:
    kind = type_name(value)
    if kind == "int":
        return _int_result(-int(value))
    if kind == "double":
        return -float(value)
    raise no_overload("-_", value)


_GO_TYPES = {"string": "types.String", "int": "types.Int", "uint": "types.Uint", "double": "types.Double",
             "bool": "types.Bool", "bytes": "types.Bytes", "null_type": "types.Null",
             "Quantity": "cel.Quantity", "Semver": "cel.Semver"}


def not_iterable(value: Any) -> EvalError:
    """cel-go's evalFold on a range that is neither a list nor a map (a scalar attribute)."""
    kind = type_name(value)
    return EvalError(f"got '{_GO_TYPES.get(kind, kind)}', expected iterable type")


def iteration_items(value: Any) -> list[Any]:
    """A macro's range: a list's elements or a map's keys."""
    if value.__class__ is list:
        return value
    kind = type_name(value)
    if kind == "list":
        return list(value)
    if kind == "map":
        return list(value.keys())
    raise not_iterable(value)


def _go_float(value: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 64), as cel-go's string(double)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    shortest = repr(value)
    digits = shortest.lstrip("-").replace(".", "").split("e")[0].lstrip("0").rstrip("0") or "0"
    exp = int(f"{abs(value):e}".split("e")[1])
    # repr gives the shortest round-trip digits; Go's %g prints them with %e when the exponent
    # is below -4 or at least 6 (the precision it uses for that choice when printing shortest).
    if exp < -4 or exp >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        sign = "-" if value < 0 else ""
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    text = format(value, "f") if "e" in shortest else shortest
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def f_int(*args: Any) -> int:
    (value,) = args
    if value.__class__ is int:
        return value
    kind = type_name(value)
    if kind in {"int", "uint"}:
        return _int_result(int(value))
    if kind == "double":
        if math.isnan(value) or math.isinf(value) or not -(2.0**63) <= value < 2.0**63:
            raise EvalError("integer overflow")
        return int(value)
    if kind == "string":
        try:
            return _int_result(int(value, 10)) if value.strip() == value and value else _bad_int(value)
        except ValueError:
            _bad_int(value)
    raise no_overload("int", value)


def _bad_int(value: str) -> int:
    raise EvalError(f'strconv.ParseInt: parsing "{value}": invalid syntax')


def f_uint(*args: Any) -> Any:
    (value,) = args
    kind = type_name(value)
    if kind in {"int", "uint"}:
        return _uint(int(value))
    if kind == "double":
        if math.isnan(value) or math.isinf(value) or not 0 <= value < 2.0**64:
            raise EvalError("unsigned integer overflow")
        return _uint(int(value))
    if kind == "string":
        if value.isdigit() and value.isascii():
            return _uint(int(value))
        raise EvalError(f'strconv.ParseUint: parsing "{value}": invalid syntax')
    raise no_overload("uint", value)


def f_double(*args: Any) -> float:
    (value,) = args
    kind = type_name(value)
    if kind in {"int", "uint", "double"}:
        return float(value)
    if kind == "string":
        try:
            return float(value)
        except ValueError:
            raise EvalError(f'strconv.ParseFloat: parsing "{value}": invalid syntax') from None
    raise no_overload("double", value)


def f_string(*args: Any) -> str:
    (value,) = args
    kind = type_name(value)
    if kind == "string":
        return str(value)
    if kind in {"int", "uint"}:
        return str(int(value))
    if kind == "double":
        return _go_float(float(value))
    if kind == "bool":
        return "true" if value else "false"
    if kind == "bytes":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise EvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    raise no_overload("string", value)


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def f_bool(*args: Any) -> bool:
    (value,) = args
    kind = type_name(value)
    if kind == "bool":
        return bool(value)
    if kind == "string":
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise EvalError(f'strconv.ParseBool: parsing "{value}": invalid syntax')
    raise no_overload("bool", value)


def f_bytes(*args: Any) -> bytes:
    (value,) = args
    kind = type_name(value)
    if kind == "bytes":
        return bytes(value)
    if kind == "string":
        return str(value).encode("utf-8")
    raise no_overload("bytes", value)


def f_dyn(*args: Any) -> Any:
    (value,) = args
    return value


INCLUDES_MAX = ATTRIBUTE_VALUES_PER_DEVICE  # resourceapi.ResourceSliceMaxAttributeValuesPerDevice


def f_includes(*args: Any) -> bool:
    """``<attribute>.includes(<value>)`` (DRAListTypeAttributes, compile.go includesFunc): a list
    attribute contains the value, or a single-valued attribute equals it."""
    target, item = args
    if type_name(target) == "list":
        for position, element in enumerate(target):
            if position >= INCLUDES_MAX:
                raise EvalError(f"'includes' function cannot be applied to lists longer than {INCLUDES_MAX} values")
            if equals(element, item):
                return True
        return False
    return equals(target, item)


FUNCTIONS.update({
    "int": f_int,
    "uint": f_uint,
    "double": f_double,
    "string": f_string,
    "bool": f_bool,
    "bytes": f_bytes,
    "dyn": f_dyn,
    "includes": f_includes,
})


_TYPE_NAMES: dict[type, str] = {
    str: "string", int: "int", bool: "bool", float: "double", bytes: "bytes", type(None): "null_type",
    list: "list", dict: "map", Quantity: "Quantity", Semver: "Semver",
}
