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

Without colour, :class:`PlainConsole` prints text lines and tables exactly as rich's Console does,
without loading rich (0.03-0.04 s of a command's start-up): rich is imported here only to draw in
colour, or to measure text that is not printable ASCII.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Sequence, TextIO, Union

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.style import Style
    from rich.text import Text

MIN_CELL = 6  # kubectl's tabwriter minwidth: a column with its padding is at least this wide
PADDING = 3  # spaces between columns (kubectl's tabwriter padding)
MAX_CELL = 48  # longest value in a narrow table; "-o wide" shows every value whole
ELLIPSIS = "…"

Cell = Union[str, "Text"]
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
        rich_text = sys.modules.get("rich.text")  # no rich Text exists before rich is loaded
        if rich_text is not None and isinstance(cell, rich_text.Text):
            text, style = cell.plain, cell.style or None
        else:
            text, style = str(cell), None
        # One line per cell: newlines and tabs would break the columns.
        if not text.isprintable():
            text = " ".join(text.split())
        if not self.wide and len(text) > self.max_width // 2 and _cell_len(text) > self.max_width:
            text = _set_cell_size(text, self.max_width - 1) + ELLIPSIS
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
        from rich.segment import Segment

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
    # Cells are mostly ASCII names and numbers: len() is their width, and much cheaper; so is a
    # value this table cut short (the ellipsis is one cell).
    if text.isascii() or (text[-1] == ELLIPSIS and text[:-1].isascii()):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _cell_len(text: str) -> int:
    """rich's cell_len: printable ASCII is one cell a character (rich gives control codes none)."""
    if text.isascii() and text.isprintable():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _set_cell_size(text: str, cells: int) -> str:
    """rich's set_cell_size for a text wider than ``cells``: cropped to that many cells."""
    if text.isascii() and text.isprintable():
        return text[:cells]
    from rich.cells import set_cell_size

    return set_cell_size(text, cells)


# What rich's Text drops from its text (rich.control.strip_control_codes: BEL, BS, VT, FF, CR).
_STRIPPED_CONTROLS = {code: None for code in (7, 8, 11, 12, 13)}
TAB_SIZE = 8  # rich's Console.tab_size: a tab reaches the next multiple of 8 cells
_TAB_AND_NEW_LINE = {ord("\t"): None, ord("\n"): None}


class PlainConsole:
    """The part of rich's Console that tables and text lines are printed with, for a stream with no
    colour (see kubectl_gpu/cli/console.py): the same characters, written directly.

    ``text(...)`` is what ``rich.text.Text(...)`` holds (its style has nothing to show here);
    ``print`` writes it, a KubeTable, or an empty line as ``Console.print`` does."""

    color_system = None

    def __init__(self, file: TextIO) -> None:
        self.file = file

    @property
    def terminal_width(self) -> int | None:
        """The terminal's width where the file is one (sentences wrap to it), else None."""
        try:
            if not self.file.isatty():
                return None
        except (AttributeError, ValueError):
            return None
        import shutil  # only on a terminal: it loads bz2, lzma and zlib

        return shutil.get_terminal_size((80, 24)).columns

    @staticmethod
    def text(text: str, style: object = "") -> str:
        return text.translate(_STRIPPED_CONTROLS)

    def print(self, *objects: object) -> None:
        if not objects:
            self.file.write("\n")
            return
        (item,) = objects
        if isinstance(item, KubeTable):
            self.file.write("".join(line + "\n" for line in item.plain_lines()))
        elif isinstance(item, str):
            self.file.write(_expand_tabs(item.translate(_STRIPPED_CONTROLS)) + "\n")
        else:
            raise TypeError(f"PlainConsole prints text and KubeTables, not {type(item).__name__}")


def _expand_tabs(text: str) -> str:
    """Tabs as rich prints them: to the next multiple of TAB_SIZE cells of each line."""
    if "\t" not in text:
        return text
    if text.isascii() and text.translate(_TAB_AND_NEW_LINE).isprintable():
        return text.expandtabs(TAB_SIZE)  # each character is one cell; each line starts at column 0
    from rich.text import Text

    expanded = Text(text)
    expanded.expand_tabs(TAB_SIZE)  # counts cells, not characters (a CJK character is two)
    return expanded.plain
