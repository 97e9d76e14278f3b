"""Split a YAML stream into the text of its documents, without parsing it.

Splitting on text first is what lets one broken document be reported and kept verbatim
while the others still migrate, and what lets an untouched document come out byte for
byte as it went in.  YAML itself forbids `---` and `...` at column 0 inside content
(even inside block scalars and quoted strings), so a line starting with them always
ends a document; this split agrees with every conforming parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_START = re.compile(r"^---(?=[ \t\r\n]|$)")
_END = re.compile(r"^\.\.\.(?=[ \t\r\n]|$)")
_ONLY_COMMENT = re.compile(r"^[ \t]*(#.*)?$", re.DOTALL)
_DIRECTIVE = re.compile(r"^%[A-Za-z]")


@dataclass(frozen=True)
class Chunk:
    """The text of one document: `header + body + trailer` is exactly what the file held."""

    header: str  # directives (`%YAML`, `%TAG`) and the `---` line (when it carries no content), else ""
    body: str  # what gets parsed
    trailer: str  # the `...` line ending the document, else ""
    body_line: int  # 1-based line number of the first line of `body` in the file
    directives: str = ""  # the `%` lines of `header`: they govern how `body` parses (tag handles)

    @property
    def text(self) -> str:
        return self.header + self.body + self.trailer

    @property
    def opens_with_marker(self) -> bool:
        """The document starts with a `---` line (in its header, or carrying content in its body)."""
        return bool(self.header) or bool(_START.match(self.body))

    @property
    def parse_text(self) -> str:
        """What the parser reads: the body, under its directives when it has any."""
        if not self.directives:
            return self.body
        return self.directives + ("" if _START.match(self.body) else "---\n") + self.body

    @property
    def parse_offset(self) -> int:
        """Lines of `parse_text` before `body` starts."""
        return self.parse_text.count("\n") - self.body.count("\n")


def split_stream(text: str) -> list[Chunk]:
    """Cut `text` into chunks; joining their `.text` gives `text` back exactly."""
    chunks: list[Chunk] = []
    header = ""
    body: list[str] = []
    body_line = 1
    line_no = 0

    directives = ""

    def close(trailer: str = "") -> None:
        chunks.append(Chunk(header, "".join(body), trailer, body_line, directives))

    for line_no, line in enumerate(text.splitlines(keepends=True), start=1):
        if _START.match(line):
            # Directives (`%YAML 1.2`, `%TAG ...`) just before a `---` belong to the document it
            # starts, never to the one before (which would then not parse).
            cut = len(body)
            while cut and (_DIRECTIVE.match(body[cut - 1]) or (not body[cut - 1].strip() and any(
                    _DIRECTIVE.match(b) for b in body[:cut - 1]))):
                cut -= 1
            leading = [b for b in body[cut:]]
            body = body[:cut]
            if header or body or chunks:  # nothing before a first marker: no empty chunk
                close()
            directives = "".join(b for b in leading if _DIRECTIVE.match(b))
            rest = line[3:]
            if _ONLY_COMMENT.match(rest.rstrip("\r\n")):
                header, body, body_line = "".join(leading) + line, [], line_no + 1
            elif leading:
                # Content on the marker line after directives: the directives lead the header.
                header, body, body_line = "".join(leading), [line], line_no
            else:
                # Content on the marker line (`--- !tag`, `--- {...}`): let the parser see it.
                header, body, body_line = "", [line], line_no
        elif _END.match(line):
            close(trailer=line)
            header, body, body_line, directives = "", [], line_no + 1, ""
        else:
            body.append(line)
    if header or body or not chunks:
        close()
    return chunks


def is_blank(chunk_body: str) -> bool:
    """True when a body holds no YAML content at all (only blank lines and comments)."""
    return all(_ONLY_COMMENT.match(line) for line in chunk_body.splitlines())


def split_leading_comments(body: str) -> tuple[str, str]:
    """Split off a file header (comment lines followed by a blank line, e.g. a license) from
    the start of a body, so a document inserted before it can go below the header."""
    lines = body.splitlines(keepends=True)
    i = 0
    while i < len(lines) and lines[i].lstrip().startswith("#"):
        i += 1
    if i == 0 or i >= len(lines) or lines[i].strip():
        return "", body
    while i < len(lines) and not lines[i].strip():
        i += 1
    return "".join(lines[:i]), "".join(lines[i:])
