"""describe's tables print exactly what rich would print, however they are laid out.

kubectl_gpu.inspect.plain_table.PlainTable writes simple tables itself (rich takes 0.5-0.9 s for a
1,000-node summary); people and scripts must not be able to tell the difference.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubectl_gpu.inspect.plain_table import PlainTable

HEADERS = ["NODE", "GPUS", "", "LEGACY (ALLOCATABLE)", "[b]MARKUP[/b]", "日本"]
plain_text = st.text(alphabet="abz XYZ09-=./,:[]日\\", max_size=14)
cells = st.one_of(
    plain_text,
    st.sampled_from(["", "-", "[bold]held[/bold]", ":thumbs_up:", "ns:pod", "[x", "gpu-0001", "a  b",
                     "two\nlines", "tab\there", "nvidia.com/gpu=8", "\\[literal]"]),
    st.builds(lambda text, style: Text(text, style=style), plain_text, st.sampled_from(["", "bold red"])),
    st.text(max_size=4),
)


def printed(table: Table, width: int, colour: bool) -> str | type:
    out = io.StringIO()
    console = Console(file=out, width=width, soft_wrap=False, highlight=False, force_terminal=colour or None)
    try:
        console.print(table)
    except Exception as error:  # rich rejects some markup; the copy must reject it the same way
        return type(error)
    return out.getvalue()


def build(cls: type[Table], columns: int, rows: list[list], title: str | None) -> Table:
    # the settings kubectl_gpu.inspect.render uses for every table
    table = cls(box=None, pad_edge=False, show_edge=False, title=title, title_justify="left",
                title_style="bold", header_style="bold")
    for header in HEADERS[:columns]:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row[:columns])
    return table


@settings(max_examples=400, deadline=None)
@given(columns=st.integers(1, len(HEADERS)), rows=st.lists(st.lists(cells, max_size=6), max_size=6),
       title=st.one_of(st.none(), plain_text), width=st.integers(5, 240), colour=st.sampled_from([False] * 3 + [True]))
def test_any_table_prints_as_rich_prints_it(columns, rows, title, width, colour):
    assert printed(build(PlainTable, columns, rows, title), width, colour) == \
        printed(build(Table, columns, rows, title), width, colour)


def test_a_large_summary_is_laid_out_without_rich_and_matches_it():
    rows = [[f"gpu-{n:04d}", "yes", "8", str(n % 9), Text("-"), Text("DOUBLE_COUNTING", style="bold red")]
            for n in range(300)]
    fast = build(PlainTable, 6, rows, "GPU nodes")
    console = Console(file=io.StringIO(), width=240)
    assert fast._plain_lines(console, 240) is not None  # the direct layout was used, not rich
    text = printed(fast, 240, colour=False)
    assert text == printed(build(Table, 6, rows, "GPU nodes"), 240, colour=False)
    assert text.splitlines()[1].split() == ["NODE", "GPUS", "LEGACY", "(ALLOCATABLE)", "MARKUP", "日本"]


def test_tables_too_wide_or_coloured_are_left_to_rich():
    rows = [["x" * 50, "y" * 50]]
    assert PlainTable()._plain_lines(Console(file=io.StringIO(), width=80), 80) is None  # no columns
    wide = build(PlainTable, 2, rows, None)
    assert wide._plain_lines(Console(file=io.StringIO(), width=80), 80) is None
    assert printed(wide, 80, colour=False) == printed(build(Table, 2, rows, None), 80, colour=False)
    coloured = Console(file=io.StringIO(), width=240, force_terminal=True)
    assert build(PlainTable, 2, rows, None)._plain_lines(coloured, 240) is None
