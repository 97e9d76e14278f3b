"""A rich Table that lays itself out directly when that gives rich's own text.

rich measures and renders every cell through its general layout engine: 0.5-0.9 s for the
1,000-row table of `kubectl gpu describe` (issue 5 allows 2 s for the whole command).  kubectl-style
tables are simple: no borders, one line per cell, left-aligned columns as wide as their widest
cell.  When no colour is emitted (output piped or redirected, NO_COLOR, `TERM=dumb`), every cell is
one printable line and the table fits the width, this class writes those lines itself in a few
milliseconds; in every other case (a terminal with colours, wrapping, folding, borders, custom
widths...) rich renders it as before.  tests/test_describe_plain_table.py checks the two agree.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

# The only paddings the direct layout knows: (top, right, bottom, left) = rich's default (0, 1).
_DEFAULT_PADDING = (0, 1, 0, 1)


class PlainTable(Table):
    """Drop-in rich.table.Table (same constructor and methods); see the module docstring."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self._plain_lines(console, options.max_width)
        if lines is None:
            yield from super().__rich_console__(console, options)
            return
        new_line = Segment.line()
        for line in lines:
            yield Segment(line)
            yield new_line

    def _plain_lines(self, console: Console, max_width: int) -> list[str] | None:
        """The table's lines as rich would print them, or None when rich must do it."""
        if console.color_system is not None or not self._simple_layout():
            return None
        header = [_plain(console, c.header) for c in self.columns]
        columns = [[_plain(console, cell) for cell in c._cells] for c in self.columns]
        if None in header or any(None in cells for cells in columns):
            return None
        last = len(self.columns) - 1
        pads = [(0 if i == 0 else 1, 0 if i == last else 1) for i in range(len(self.columns))]
        widths = []
        for texts, head, (left, right) in zip(columns, header, pads):
            widest = max((cell_len(t) for t in texts), default=0)  # type: ignore[arg-type]
            # rich gives an empty unpadded column one cell
            widths.append(max(widest, cell_len(head)) + left + right or 1)  # type: ignore[arg-type]
        table_width = sum(widths)
        if table_width > max_width:
            return None  # rich would shrink and wrap columns
        lines: list[str] = []
        if self.title:
            title = _plain(console, self.title)
            if title is None or cell_len(title) > table_width or self.title_justify != "left":
                return None
            lines.append(title + " " * (table_width - cell_len(title)))
        rows = [header, *zip(*columns)] if columns else [header]
        for row in rows:
            parts = []
            for text, width, (left, right) in zip(row, widths, pads):
                fill = width - left - right - cell_len(text)  # type: ignore[arg-type]
                parts.append(" " * left + text + " " * (fill + right))  # type: ignore[operator]
            lines.append("".join(parts))
        return lines

    def _simple_layout(self) -> bool:
        # Everything the direct layout assumes; any other setting goes to rich.
        return (self.box is None and not self.show_edge and not self.pad_edge and self.padding == _DEFAULT_PADDING
                and not self.collapse_padding and not self.expand and self.width is None and self.min_width is None
                and self.show_header and not self.show_footer and not self.show_lines and self.leading == 0
                and self.caption is None and bool(self.columns)
                and all(c.width is None and c.min_width is None and c.max_width is None and c.ratio is None
                        and c.justify == "left" for c in self.columns))


def _plain(console: Console, cell: Any) -> str | None:
    """The text rich prints for a cell (markup and emoji codes resolved), or None when it is not
    one printable line (newlines and tabs make rich wrap or expand)."""
    if isinstance(cell, str):
        # Markup needs "[" and emoji codes ":"; other strings print as they are.
        text = console.render_str(cell, highlight=False).plain if ("[" in cell or ":" in cell) else cell
    elif type(cell) is Text and not cell.justify:
        text = cell.plain
    else:
        return None
    return text if text.isprintable() else None
