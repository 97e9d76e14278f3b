"""Every table of every command prints the kubectl way (and progress goes to a terminal's stderr only) (k8s.io/cli-runtime/pkg/printers/
tabwriter.go: text/tabwriter, minimum cell width 6, padding 3, no trailing padding): one line per
row however long its cells and however narrow the terminal, no trailing spaces, the same text piped
or on a terminal, colour only on a terminal and never with NO_COLOR."""

from __future__ import annotations

import io
import os
import re
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from kubectl_gpu.cli.console import console
from kubectl_gpu.kubetable import MAX_CELL, KubeTable

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def printed(table: KubeTable, stream: io.StringIO, width: int = 80) -> str:
    out = console(stream)
    out.width = width
    out.print(table)
    return stream.getvalue()


def test_kubectl_column_layout():
    table = KubeTable("NAME", "GPUS", "PRODUCT")
    table.add_row("a", "8", "NVIDIA H100 80GB HBM3")
    table.add_row("node-long-name", "16", "-")
    assert printed(table, io.StringIO()).splitlines() == [
        "NAME             GPUS   PRODUCT",
        "a                8      NVIDIA H100 80GB HBM3",
        "node-long-name   16     -",
    ]


cells = st.one_of(st.text(max_size=70), st.builds(lambda t: Text(t, style="bold red"), st.text(max_size=70)))


@settings(max_examples=40, deadline=None)  # no timed tests: a loaded machine once took 278 ms for one example
@given(rows=st.lists(st.lists(cells, min_size=3, max_size=3), max_size=6), wide=st.booleans())
def test_one_line_per_row_no_trailing_spaces_same_text_piped_or_on_a_narrow_terminal(rows, wide):
    table = KubeTable("A", "B", "C", wide=wide)
    for row in rows:
        table.add_row(*row)
    piped = printed(table, io.StringIO(), width=80)
    with mock.patch.dict(os.environ, {"TERM": "xterm-256color", "NO_COLOR": ""}):  # colour: styled pieces
        on_terminal = printed(table, Terminal(), width=20)
    assert "\x1b[1mA\x1b[0m" in on_terminal  # drawn in colour, bold headers
    assert ANSI.sub("", on_terminal) == piped
    lines = piped.split("\n")
    assert lines[-1] == "" and len(lines) == len(rows) + 2  # header, rows, final newline
    assert all(line == line.rstrip() for line in lines)


def test_long_values_are_elided_unless_wide():
    uuid_and_more = "GPU-e6cfffe7-8e08-5ec0-b2fb-76519f0b2986 and a long CEL expression"
    narrow, wide = KubeTable("VALUE"), KubeTable("VALUE", wide=True)
    narrow.add_row(uuid_and_more)
    wide.add_row(uuid_and_more)
    (cell,) = narrow.plain_lines()[1:]
    assert len(cell) == MAX_CELL and cell.endswith("…") and uuid_and_more.startswith(cell[:-1])
    assert wide.plain_lines()[1] == uuid_and_more


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    table = KubeTable("STATE")
    table.add_row(Text("free", style="green"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert "\x1b[" in printed(table, Terminal())
    assert "\x1b[" not in printed(table, io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert printed(table, Terminal()) == "STATE\nfree\n"  # not even bold headers


def test_no_headers():
    table = KubeTable("NAME", "GPUS", show_header=False)
    table.add_row("a", "8")
    assert table.plain_lines() == ["a     8"]  # widths from the rows alone, as kubectl --no-headers


def test_progress_goes_to_a_terminals_stderr_only():
    from kubectl_gpu.cli.console import progress

    piped = io.StringIO()
    with progress("reading nodes...", piped):
        pass
    assert piped.getvalue() == ""
    terminal = Terminal()
    with progress("reading nodes...", terminal):
        pass
    assert "reading nodes..." in terminal.getvalue()


# Text as explain's verdicts and selectors may hold it: tabs, control codes rich drops (BEL, BS, VT,
# FF, CR) or keeps (NUL, ESC), new lines, wide characters, long values that a narrow table cuts.
texts = st.lists(st.sampled_from(list("ab- \t\n\r\x07\x08\x0b\x0c\x00\x1b…éü漢字😀") + ["device.attributes"]),
                 max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.tuples(texts, st.sampled_from(["", "bold", "red"])), max_size=4),
       rows=st.lists(st.tuples(texts, texts, st.integers(0, 9000)), max_size=4), wide=st.booleans())
def test_without_colour_the_plain_console_prints_what_rich_prints(lines, rows, wide):
    """kubectl_gpu.kubetable.PlainConsole (the console of explain, describe and doctor when there is
    no colour, so rich is not loaded) prints Lines, empty lines and tables character for character
    as rich's Console prints the same rich Texts."""
    from kubectl_gpu.kubetable import Line, PlainConsole

    def draw(out, text) -> str:
        for line, style in lines:
            out.print(text(line, style=style))
            out.print()
        table = KubeTable("NAME", "EXPRESSION", "COUNT", wide=wide)
        for name, expression, count in rows:
            table.add_row(text(name), text(expression, style="red"), str(count))
        out.print(table)
        return out.file.getvalue()

    plain = PlainConsole(io.StringIO())
    assert draw(plain, Line) == draw(console(io.StringIO()), Text)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.one_of(texts, st.tuples(texts, st.sampled_from(["", "bold red", "green"]))), max_size=4),
       style=st.sampled_from(["", "bold", "red"]), width=st.sampled_from([None, 8, 20, 80]))
def test_a_sentence_is_wrapped_to_the_terminal_and_prints_alike_on_either_console(pieces, style, width):
    """A Line in styled pieces is what rich's Text.assemble holds; a Sentence of it is wrapped to the
    terminal's width (COLUMNS here) on a terminal, one line piped, and either console prints the
    same characters."""
    from kubectl_gpu.kubetable import Line, PlainConsole, Sentence

    line = Line(*pieces, style=style)
    rich_line = Text.assemble(*pieces, style=style)
    assert line.plain == rich_line.plain
    for stream in (io.StringIO, Terminal):
        with mock.patch.dict(os.environ, {"COLUMNS": str(width or 80), "NO_COLOR": "1"}):
            plain, coloured = PlainConsole(stream()), console(stream())
            for out in (plain, coloured):
                out.print(Sentence(line, "    "))
                out.print(line)
        assert plain.file.getvalue() == coloured.file.getvalue()
    if width and len(line.plain) > width and " " in line.plain.strip():
        assert len(Sentence(line, "    ").lines(width)) > 1


def test_text_measured_without_rich_is_as_wide_as_rich_measures_it():
    """Cells of printable ASCII, describe's bars (block elements, geometric shapes) and --tree's box
    drawing are measured by len(): rich's cell_len gives each of their characters one cell."""
    from rich.cells import cell_len

    from kubectl_gpu.kubetable import ONE_CELL

    assert [c for c in ONE_CELL if cell_len(c) != 1] == []
    table = KubeTable("NODE", "DRA USE")
    table.add_row("gpu-0", "█[■■□□□□□] 2/2")
    table.add_row("gpu-1", "██▓░ 3/4 !")
    assert printed(table, io.StringIO()).splitlines()[1:] == ["gpu-0   █[■■□□□□□] 2/2", "gpu-1   ██▓░ 3/4 !"]


def test_explain_prints_its_table_without_loading_rich_when_there_is_no_colour(tmp_path):
    import os
    import subprocess
    import sys

    from tests.test_cel_parser_cache import CLAIM, SLICES

    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "kubectl_gpu.cli.main", "explain", "-f", CLAIM,
                             "--slices", SLICES], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "REQUEST   CLASS" in result.stdout
    assert "rich" not in {line.rsplit("|", 1)[1].strip().split(".")[0] for line in result.stderr.splitlines()
                          if line.startswith("import time:")}
