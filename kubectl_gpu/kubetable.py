"""kubectl's table look, for every `kubectl gpu` command: upper-case headers, left-aligned columns
as wide as their widest cell, and nothing else.

Like kubectl's printer (k8s.io/cli-runtime/pkg/printers/tabwriter.go: text/tabwriter with minimum
cell width 6, padding 3): a cell never wraps onto a second line, a line never ends in spaces, and
the layout is the same whether stdout is a terminal or a pipe, whatever the terminal's width (a
terminal narrower than a line wraps the line, as it does for kubectl).  Values longer than
`max_width` are elided with "…" unless the table is wide (`-o wide` shows them whole).

Cells are plain strings (printed as they are: no markup) or rich `Text` (their style is kept, and
shown only where the console has colours).  Writing lines directly also keeps a 1,000-node
summary fast (rich's general table layout took 0.5-0.9 s for it).
"""

from __future__ import annotations

from typing import Sequence

from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text

MIN_CELL = 6  # kubectl's tabwriter minwidth: a column with its padding is at least this wide
PADDING = 3  # spaces between columns (kubectl's tabwriter padding)
MAX_CELL = 48  # longest value in a narrow table; "-o wide" shows every value whole
ELLIPSIS = "…"

Cell = str | Text


class KubeTable:
    """A table printed the kubectl way; a rich renderable (see the module docstring)."""

    def __init__(self, *headers: str, title: str | None = None, wide: bool = False,
                 max_width: int = MAX_CELL, show_header: bool = True) -> None:
        self.headers = tuple(headers)
        self.title = title
        self.wide = wide
        self.max_width = max_width
        self.show_header = show_header
        self.rows: list[tuple[Text, ...]] = []

    def add_row(self, *cells: Cell) -> None:
        if len(cells) != len(self.headers):
            raise ValueError(f"a row of {len(self.headers)} columns got {len(cells)} cells")
        self.rows.append(tuple(self._cell(c) for c in cells))

    def _cell(self, cell: Cell) -> Text:
        text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
        # One line per cell: newlines and tabs would break the columns.
        if not text.plain.isprintable():
            text = Text(" ".join(text.plain.split()), style=text.style)
        if not self.wide and cell_len(text.plain) > self.max_width:
            text = Text(set_cell_size(text.plain, self.max_width - 1) + ELLIPSIS, style=text.style)
        return text

    def lines(self) -> list[Text]:
        """The table's lines, styles attached; no line ends in a space."""
        rows: list[Sequence[Text]] = list(self.rows)
        if self.show_header:
            rows.insert(0, [Text(h, style="bold") for h in self.headers])
        if not rows:
            return []
        widths = [max(cell_len(r[i].plain) for r in rows) for i in range(len(self.headers))]
        out = [Text(self.title, style="bold")] if self.title else []
        last = len(self.headers) - 1
        for row in rows:
            line = Text()
            for i, cell in enumerate(row):
                line.append_text(cell)
                if i < last:
                    line.append(" " * (max(widths[i] + PADDING, MIN_CELL) - cell_len(cell.plain)))
            line.rstrip()
            out.append(line)
        return out

    def plain_lines(self) -> list[str]:
        return [line.plain for line in self.lines()]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Segments straight from each line's spans: printing the Text itself would wrap it.
        new_line = Segment.line()
        for line in self.lines():
            yield from line.render(console, end="")
            yield new_line
