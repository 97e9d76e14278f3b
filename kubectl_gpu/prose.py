"""Sentences for people on a terminal (findings of describe and doctor, notes of migrate's report):
wrapped to the terminal's width with the lines after the first indented under its text, as kubectl
explain wraps descriptions (kubectl/pkg/explain/v2/templates/plaintext.tmpl: `wrap 76 | indent 4`).
Words, and so commands to copy, are never split.  Piped (no width), a sentence stays one line, whole
for grep and scripts, and tables are never wrapped (kubectl_gpu/kubetable.py)."""

from __future__ import annotations


def wrapped(line: str, width: int | None, indent: str) -> list[str]:
    """`line` as lines of at most `width` characters (a longer word alone on its line), those after
    the first starting with `indent`; `[line]` when `width` is None or the line fits."""
    if width is None or len(line) <= width:
        return [line]
    import textwrap  # only on a terminal, and only for a line that does not fit

    return textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) or [line]
