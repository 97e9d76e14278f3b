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
from rich.style import Style
from rich.text import Text

MIN_CELL = 6  # kubectl's tabwriter minwidth: a column with its padding is at least this wide
PADDING = 3  # spaces between columns (kubectl's tabwriter padding)
MAX_CELL = 48  # longest value in a narrow table; "-o wide" shows every value whole
ELLIPSIS = "…"

Cell = str | Text
_Plain = tuple[str, "str | Style | None"]  # a cell's text and its style


class KubeTable:
    """A table printed the kubectl way; a rich renderable (see the module docstring)."""

    def __init__(self, *headers: str, title: str | None = None, wide: bool = False,
                 max_width: int = MAX_CELL, show_header: bool = True) -> None:
        self.headers = tuple(headers)
        self.title = title
        self.wide = wide
        self.max_width = max_width
        self.show_header = show_header
        self.rows: list[tuple[_Plain, ...]] = []

    def add_row(self, *cells: Cell) -> None:
        if len(cells) != len(self.headers):
            raise ValueError(f"a row of {len(self.headers)} columns got {len(cells)} cells")
        self.rows.append(tuple(self._cell(c) for c in cells))

    def _cell(self, cell: Cell) -> _Plain:
        if isinstance(cell, Text):
            text, style = cell.plain, cell.style or None
        else:
            text, style = str(cell), None
        # One line per cell: newlines and tabs would break the columns.
        if not text.isprintable():
            text = " ".join(text.split())
        if not self.wide and len(text) > self.max_width // 2 and cell_len(text) > self.max_width:
            text = set_cell_size(text, self.max_width - 1) + ELLIPSIS
        return text, style

    def _layout(self) -> list[list[tuple[str, "str | Style | None"]]]:
        """Each line as (text, style) pieces: cells and the spaces between them; no line ends in
        a space."""
        rows: list[Sequence[_Plain]] = list(self.rows)
        if self.show_header:
            rows.insert(0, [(h, "bold") for h in self.headers])
        if not rows:
            return []
        widths = [max(_width(r[i][0]) for r in rows) for i in range(len(self.headers))]
        pads = [max(w + PADDING, MIN_CELL) for w in widths]
        out = [[(self.title, "bold")]] if self.title else []
        last = len(self.headers) - 1
        for row in rows:
            pieces: list[tuple[str, "str | Style | None"]] = []
            for i, (text, style) in enumerate(row):
                pieces.append((text, style))
                if i < last:
                    pieces.append((" " * (pads[i] - _width(text)), None))
            while pieces and not pieces[-1][0].strip():
                pieces.pop()
            if pieces:
                text, style = pieces[-1]
                pieces[-1] = (text.rstrip(), style)
            out.append(pieces)
        return out

    def plain_lines(self) -> list[str]:
        return ["".join(text for text, _ in pieces) for pieces in self._layout()]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Segments, not Text: printing a Text would wrap it to the console's width.
        new_line = Segment.line()
        if console.color_system is None:
            for line in self.plain_lines():
                yield Segment(line)
                yield new_line
            return
        for pieces in self._layout():
            for text, style in pieces:
                yield Segment(text, console.get_style(style) if isinstance(style, str) else style)
            yield new_line


def _width(text: str) -> int:
    # Cells are mostly ASCII names and numbers: len() is their width, and much cheaper.
    return len(text) if text.isascii() else cell_len(text)
