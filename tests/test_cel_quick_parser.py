"""Selectors parse without cel-python, and exactly as cel-python's grammar parses them.

kubectl_gpu/cel/quick_parser.py reads the everyday selector shapes itself and leaves everything
else to the reference parser (cel-python's lark grammar, kubectl_gpu/cel/parser.py).  The promise
is "the same AST, positions included, or no answer": these properties hold it to that over
generated expressions (valid ones, and the same ones mangled), and pin which shapes it reads,
so that a selector in the corpus or in the docs never costs a run cel-python's 0.15-0.3 s import.
"""

from __future__ import annotations

import subprocess
import sys

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubectl_gpu.cel import CelCompileError, compile_selector
from kubectl_gpu.cel.parser import parse, to_ast
from kubectl_gpu.cel.quick_parser import parse_quick
from kubectl_gpu.cel.syntax import to_json


def reference(expression: str) -> str:
    """The reference parser's AST as JSON, or the error it raises."""
    try:
        return to_json(to_ast(parse(expression), expression))
    except CelCompileError as err:
        return f"error: {err}"
    except RecursionError:
        return "error: nested too deeply"


def assert_reads_as_reference(expression: str) -> None:
    quick = parse_quick(expression)
    if quick is not None:  # no answer is always allowed: the reference then decides
        assert to_json(quick) == reference(expression), expression


# -- generated expressions ------------------------------------------------------------------------

SPACE = st.sampled_from(["", " ", "  ", "\n", "\t", " // note\n", "\f", "\r\n", "\v", "\u00a0"])
NAMES = st.sampled_from(["device", "d", "x", "_y", "attributes", "cel", "has", "size", "in", "true", "false",
                         "null", "if", "let", "as", "r", "b", "br", "truex", "inx", "nullable", "ñ", "x1"])
NUMBERS = st.sampled_from(["0", "1", "42", "007", "-1", "-0", "2.5", "-2.5", "1.", ".5", "1e3", "1.5e-3", "0x1F",
                           "-0x1f", "3u", "-3u", "0X1", "9223372036854775808", "1_000", "٣"])
STRINGS = st.sampled_from(["'a'", '"gpu.nvidia.com"', "''", '""', "'NVIDIA H100 80GB HBM3'", r"'a\'b'", r'"\n"',
                           r"'\x41'", r'"\u00e9"', "r'raw'", 'R"\\d+"', "b'bytes'", "'''long'''", '"""x"""',
                           "'é'", "'unterminated", '"a\nb"', "'\"'", '"\'"', r"'\\'", "'a' 'b'", r"'\d'",
                           r"'\101'", r"'\999'", r"'\U0001F600'", r"'\U00110000'", r'"\u00e9\""', r"'\''",
                           r'"\U0001F600"', r"'x\'", r"'\x4'", r"'\u123'", r'"a\"b"'])
OPERATORS = st.sampled_from(["||", "&&", "==", "!=", "<", "<=", ">", ">=", "in", "+", "-", "*", "/", "%"])


def spaced(draw, text: str) -> str:
    return draw(SPACE) + text + draw(SPACE)


@st.composite
def expressions(draw, depth: int = 3) -> str:
    if depth <= 0 or draw(st.integers(0, 9)) < 3:
        return spaced(draw, draw(st.one_of(NAMES, NUMBERS, STRINGS)))
    inner = expressions(depth=depth - 1)
    shape = draw(st.integers(0, 12))
    if shape == 0:
        return f"{draw(inner)}{draw(OPERATORS)}{draw(inner)}"
    if shape == 1:
        return f"{draw(st.sampled_from(['!', '-', '!!', '--', '- ']))}{draw(inner)}"
    if shape == 2:
        return f"{draw(inner)}?{draw(inner)}:{draw(inner)}"
    if shape == 3:
        return f"({draw(inner)})"
    if shape == 4:
        return f"{draw(inner)}.{draw(NAMES)}"
    if shape == 5:
        return f"{draw(inner)}[{draw(inner)}]"
    if shape == 6:
        args = ",".join(draw(st.lists(inner, max_size=3)))
        return f"{draw(inner)}.{draw(NAMES)}({args})"
    if shape == 7:
        args = ",".join(draw(st.lists(inner, max_size=3)))
        return f"{draw(NAMES)}({args}{draw(st.sampled_from(['', ',']))})"
    if shape == 8:
        macro = draw(st.sampled_from(["all", "exists", "exists_one", "map", "filter"]))
        args = ",".join(draw(st.lists(inner, min_size=0, max_size=3)))
        return f"{draw(inner)}.{macro}({draw(NAMES)}{draw(st.sampled_from([',', '']))}{args})"
    if shape == 9:
        return f"cel.bind({draw(NAMES)}, {draw(inner)}, {draw(inner)})"
    if shape == 10:
        items = ",".join(draw(st.lists(inner, max_size=3)))
        return f"[{items}{draw(st.sampled_from(['', ',']))}]"
    if shape == 11:
        entries = ",".join(f"{draw(inner)}:{draw(inner)}" for _ in range(draw(st.integers(0, 2))))
        return "{" + entries + "}"
    return f"{draw(inner)}{{{draw(NAMES)}: {draw(inner)}}}"  # message construction


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
@example("device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('h100')")
@example("a // c\n || b")
@example("(a) ? b : c")
@example("--1")
def test_a_generated_expression_reads_as_the_reference_reads_it(expression: str) -> None:
    assert_reads_as_reference(expression)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(), st.data())
def test_a_mangled_expression_reads_as_the_reference_reads_it(expression: str, data: st.DataObject) -> None:
    """Characters deleted, doubled or inserted: syntax errors and near-misses alike."""
    chars = list(expression)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(chars)))
        action = data.draw(st.integers(0, 2))
        if action == 0 and at < len(chars):
            del chars[at]
        elif action == 1 and at < len(chars):
            chars.insert(at, chars[at])
        else:
            chars.insert(at, data.draw(st.sampled_from(list("()[]{}.,:?!-+'\"\\/ \nax01u_é"))))
    assert_reads_as_reference("".join(chars))


def test_nesting_deeper_than_the_reference_can_build_is_left_to_it() -> None:
    for depth in (1, 10, 24, 25, 40, 200):
        assert_reads_as_reference("(" * depth + "1" + ")" * depth)
        assert_reads_as_reference("!" * depth + "a")
        assert_reads_as_reference("a.exists(x, " * depth + "x" + ")" * depth)
    # too deep for the reference's tree builder: a compile error that says so, not a crash
    deep = "(" * 200 + "1" + ")" * 200
    assert parse_quick(deep) is None
    try:
        compile_selector(deep)
    except CelCompileError as err:
        assert "nested too deeply" in str(err)


def test_chains_longer_than_the_reference_can_build_are_left_to_it() -> None:
    """lark nests `a || b || c`, `1 + 2 + 3` and `a.b.c` to the left, and parser.py's tree builder
    recurses once per link: a chain of a few hundred is "nested too deeply" there, so the quick
    parser gives no answer long before that, even inside nesting."""
    for links in (10, 100, 160, 180, 250, 400, 1000):
        for chain in (" || ".join(["a"] * links), "+".join(["1"] * links), "a" + ".b" * links,
                      "a" + "[0]" * links, "a" + ".f()" * links,
                      "(" * 20 + " && ".join(["x.y"] * links) + ")" * 20):
            assert_reads_as_reference(chain)
    assert parse_quick(" || ".join(["a"] * 1000)) is None


# -- what it reads itself ---------------------------------------------------------------------------

EVERYDAY = [
    "device.driver == 'gpu.nvidia.com'",
    "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('h100')",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
    "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('560.0.0'))",
    "has(device.attributes['gpu.nvidia.com'].addressingMode) && "
    "device.attributes['gpu.nvidia.com'].addressingMode == 'HMM'",
    "cel.bind(gpu, device.attributes['gpu.nvidia.com'], gpu.type == 'gpu' && gpu.productName.startsWith('NVIDIA'))",
    "['NVIDIA H100 80GB HBM3', 'NVIDIA H200'].exists(p, device.attributes['gpu.nvidia.com'].productName == p)",
    "int(device.capacity['gpu.nvidia.com'].memory.asInteger() / 1073741824) % 8 == 0",
    "!('other.example.com' in device.attributes) && device.allowMultipleAllocations == true",
    "device.attributes['gpu.nvidia.com'].profile in ['1g.10gb', '1g.10gb+me'] ? true : false",
]


def test_everyday_selectors_are_read_without_the_reference() -> None:
    for expression in EVERYDAY:
        quick = parse_quick(expression)
        assert quick is not None, expression
        assert to_json(quick) == reference(expression)


def test_a_new_selector_compiles_without_loading_cel_python() -> None:
    """The point of it all: compiling a selector never met before loads neither cel-python nor lark."""
    program = (
        "import sys\n"
        "from kubectl_gpu.cel import compile_selector\n"
        f"for e in {EVERYDAY!r}:\n"
        "    compile_selector(e)\n"
        "print(sorted(m for m in ('celpy', 'lark', 'pendulum') if m in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_escapes_in_strings_are_read_as_cel_python_reads_them() -> None:
    """A regex selector escapes its backslashes ('H100\\d' in CEL): read without the reference, the same."""
    for expression in (r"device.driver == 'gpu\x2envidia.com'", r"x.matches('^H100\\d+$')", r'"\"quoted\""',
                       r"""'\a\b\f\n\r\t\v\'\"\\'""", r"'\101\u00e9\U0001F600'", r'"\u00e9"', r"'a\d'"):
        quick = parse_quick(expression)
        assert quick is not None, expression
        assert to_json(quick) == reference(expression)
    for out_of_range in (r"'\999'", r"'\U00110000'"):  # errors: the reference words them
        assert parse_quick(out_of_range) is None
        assert reference(out_of_range).startswith("error")


def test_what_it_leaves_to_the_reference_still_compiles_or_fails_as_before() -> None:
    # raw, bytes and triple-quoted strings, hex and unsigned numbers: the reference reads them
    for expression in ("size(b'ab') == 2", "0x10 == 16", "1u < 2u", "'''long''' == 'long'",
                       "device.attributes['gpu.nvidia.com'].productName.matches(r'H\\d+')"):
        assert parse_quick(expression) is None
        compile_selector(expression)
    # a syntax error is worded by the reference, with its position
    try:
        compile_selector("device.driver == ")
    except CelCompileError as err:
        assert "Syntax error" in str(err)
    else:
        raise AssertionError("a syntax error compiled")
