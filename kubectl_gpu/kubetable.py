"""kubectl's table look, for every `kubectl gpu` command: upper-case headers, left-aligned columns
as wide as their widest cell, and nothing else.

Like kubectl's printer (k8s.io/cli-runtime/pkg/printers/tabwriter.go: text/tabwriter with minimum
cell width 6, padding 3): a cell never wraps onto a second line, a line never ends in spaces, and
the layout is the same whether stdout is a terminal or a pipe, whatever the terminal's width (a
terminal narrower than a line wraps the line, as it does for kubectl).  Values longer than
`max_width` are elided with "…" unless the table is wide (`-o wide` shows them whole).

Cells are plain strings (printed as they are: no markup), :class:`Line`s or rich `Text` (their style
is kept, and shown only where the console has colours).  Writing lines directly also keeps a
1,000-node summary fast (rich's general table layout took 0.5-0.9 s for it).

What commands print for people is a list of :data:`Printable`s: tables, :class:`Line`s (a line of
text whose pieces may carry a style) and :class:`Sentence`s (a line of prose wrapped to the
terminal).  Either console prints them: rich's Console in colour, and without colour
:class:`PlainConsole`, which prints exactly what rich's Console prints, without loading rich
(0.03-0.04 s of a command's start-up): rich is imported here only to draw in colour, or to measure
text that is not printable ASCII.
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

Cell = Union[str, "Line", "Text"]
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
        self.rows.append(tuple([self._cell(c) for c in cells]))

    def _cell(self, cell: Cell) -> _Plain:
        if cell.__class__ is str:  # most cells: names and numbers
            text, style = cell, None
        elif isinstance(cell, Line):
            text, style = cell.plain, cell.style or None
        else:
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

    def _measured(self) -> tuple[list[Sequence[_Plain]], list[list[int]], list[int]]:
        """The rows (the header first), each cell's width, and each column's width with its padding."""
        rows: list[Sequence[_Plain]] = list(self.rows)
        if self.show_header:
            rows.insert(0, [(h, "bold") for h in self.headers])
        widths = [[len(text) if text.isascii() else _width(text) for text, _ in row] for row in rows]
        pads = [max(max(column) + PADDING, MIN_CELL) for column in zip(*widths)]
        return rows, widths, pads

    def _layout(self) -> list[list[tuple[str, "str | Style | None"]]]:
        """Each line as (text, style) pieces: cells and the spaces between them; no line ends in
        a space."""
        rows, widths, pads = self._measured()
        if not rows:
            return []
        out = [[(self.title, "bold")]] if self.title else []
        last = len(self.headers) - 1
        for row, row_widths in zip(rows, widths):
            pieces: list[tuple[str, "str | Style | None"]] = []
            for i, (text, style) in enumerate(row):
                pieces.append((text, style))
                if i < last:
                    pieces.append((" " * (pads[i] - row_widths[i]), None))
            while pieces and not pieces[-1][0].strip():
                pieces.pop()
            if pieces:
                text, style = pieces[-1]
                pieces[-1] = (text.rstrip(), style)
            out.append(pieces)
        return out

    def plain_lines(self) -> list[str]:
        """_layout's lines without their styles, laid out directly: each cell padded to its
        column's width, then the line's trailing spaces cut (those of its last cells among them)."""
        rows, widths, pads = self._measured()
        if not rows:
            return []
        out = [self.title] if self.title else []
        for row, row_widths in zip(rows, widths):
            out.append("".join([text + " " * (pad - width)
                                for (text, _), pad, width in zip(row, pads, row_widths)]).rstrip())
        return out

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


# Characters beyond ASCII that rich's cell_len gives one cell each: the ellipsis, and the box
# drawing, block elements and geometric shapes up to U+25FC (describe's bars and --tree; U+25FD and
# U+25FE take two).  Text of these and printable ASCII is as wide as it is long, measured without
# loading rich.
ONE_CELL = frozenset({ELLIPSIS, *map(chr, range(0x2500, 0x25FD))})
_AS_ASCII = {ord(c): "." for c in ONE_CELL}


def _narrow(text: str) -> bool:
    """Whether every character of `text` is one cell wide: printable ASCII or ONE_CELL."""
    if not text.isascii():
        text = text.translate(_AS_ASCII)
    return text.isascii() and text.isprintable()


def _width(text: str) -> int:
    # Cells are mostly ASCII names and numbers: len() is their width, and much cheaper; so are
    # describe's bars and a value this table cut short (the ellipsis is one cell).
    if text.isascii() or (text[-1] == ELLIPSIS and text[:-1].isascii()) or _narrow(text):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _cell_len(text: str) -> int:
    """rich's cell_len: printable ASCII is one cell a character (rich gives control codes none)."""
    if _narrow(text):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _set_cell_size(text: str, cells: int) -> str:
    """rich's set_cell_size for a text wider than ``cells``: cropped to that many cells."""
    if _narrow(text):
        return text[:cells]
    from rich.cells import set_cell_size

    return set_cell_size(text, cells)


# What rich's Text drops from its text (rich.control.strip_control_codes: BEL, BS, VT, FF, CR).
_STRIPPED_CONTROLS = {code: None for code in (7, 8, 11, 12, 13)}
TAB_SIZE = 8  # rich's Console.tab_size: a tab reaches the next multiple of 8 cells
_TAB_AND_NEW_LINE = {ord("\t"): None, ord("\n"): None}


Piece = Union[str, tuple[str, str], "Line"]  # text, text with its style, or a Line inside a Line


class Line:
    """A line of text for people: pieces that may carry a rich style, and a style for the whole,
    what ``rich.text.Text.assemble(*pieces, style=style)`` holds.  Either console prints it:
    PlainConsole its characters, rich's Console the Text it stands for (``__rich__``), styles
    included.  As a KubeTable cell its style is the whole line's."""

    __slots__ = ("pieces", "style")

    def __init__(self, *pieces: Piece, style: str = "") -> None:
        self.pieces = pieces
        self.style = style

    @property
    def plain(self) -> str:
        """The characters rich's Text holds: the control codes it drops (BEL, BS, VT, FF, CR) dropped."""
        pieces = self.pieces
        text = pieces[0] if len(pieces) == 1 and isinstance(pieces[0], str) else "".join(map(_piece_text, pieces))
        return text if text.isprintable() else text.translate(_STRIPPED_CONTROLS)

    def __rich__(self) -> Text:
        from rich.text import Text

        pieces = self.pieces
        if len(pieces) == 1 and isinstance(pieces[0], str):
            return Text(pieces[0], style=self.style)
        return Text.assemble(*(p.__rich__() if isinstance(p, Line) else p for p in pieces), style=self.style)

    def __repr__(self) -> str:
        return f"Line({', '.join(map(repr, self.pieces))}, style={self.style!r})"


def _piece_text(piece: Piece) -> str:
    return piece if isinstance(piece, str) else piece.plain if isinstance(piece, Line) else piece[0]


class Sentence:
    """A line of prose (a finding, a verdict, a note) wrapped to the terminal's width where the console
    prints on one, the lines after the first starting with `indent` (kubectl_gpu/prose.py); piped, one
    line.  The line's pieces keep their styles on the first line; its style is every line's."""

    __slots__ = ("line", "indent")

    def __init__(self, line: Line, indent: str) -> None:
        self.line = line
        self.indent = indent

    def lines(self, width: int | None) -> list[Line]:
        from kubectl_gpu.prose import wrapped

        line = self.line
        text = "".join(map(_piece_text, line.pieces))
        parts = wrapped(text, width, self.indent)
        if parts == [text]:
            return [line]
        first, offset = [], 0  # the pieces, cut where the first line ends (prose wraps between words)
        for piece in line.pieces:
            length = len(_piece_text(piece))
            cut = parts[0][offset:offset + length]
            if cut:
                first.append(cut if isinstance(piece, str) else (cut, _piece_style(piece)))
            offset += length
        return [Line(*first, style=line.style), *(Line(part, style=line.style) for part in parts[1:])]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines(options.max_width if console.is_terminal else None):
            yield line.__rich__()


def _piece_style(piece: Piece) -> str:
    return piece.style if isinstance(piece, Line) else "" if isinstance(piece, str) else piece[1]


Printable = Union[KubeTable, Line, Sentence]  # what commands print for people, on either console


class PlainConsole:
    """The part of rich's Console that tables and text lines are printed with, for a stream with no
    colour (see kubectl_gpu/cli/console.py): the same characters, written directly.

    ``print`` writes a :data:`Printable`, a string (what ``rich.text.Text`` of it holds: its style
    has nothing to show here) or an empty line as ``Console.print`` does."""

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

    def print(self, *objects: object) -> None:
        if not objects:
            self.file.write("\n")
            return
        (item,) = objects
        if isinstance(item, Line):
            item = item.plain
        if isinstance(item, str):
            self.file.write(_expand_tabs(item.translate(_STRIPPED_CONTROLS)) + "\n")
        elif isinstance(item, KubeTable):
            self.file.write("".join(line + "\n" for line in item.plain_lines()))
        elif isinstance(item, Sentence):
            for line in item.lines(self.terminal_width):
                self.print(line)
        else:
            raise TypeError(f"PlainConsole prints Lines, Sentences, text and KubeTables, not {type(item).__name__}")


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
