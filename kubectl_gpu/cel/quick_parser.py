"""Parse the everyday CEL selector without loading cel-python, lark and pendulum.

kubectl_gpu/cel/parser.py parses with cel-python's lark grammar, the reference.  Loading it costs
a process 0.15-0.3 s of CPU (the three packages, lark's lexer regexes, its LALR tables): more than
explaining a claim over 8,000 devices, and paid by every `kubectl gpu explain` that meets a
selector it has not parsed before.  This recursive-descent parser reads the shapes selectors are
written in (names, selections, indexing, calls, macros, cel.bind, the operators, lists, maps, and
quoted string (escapes included), int, double, bool and null literals) and builds exactly the AST
parser.py builds, positions included.

Anything else returns None and the reference parser decides, words the error and builds the AST:
a syntax error, raw, bytes or triple-quoted strings, hex, unsigned or exponent
numbers, a leading dot, message construction, a reserved word, non-ASCII outside string literals,
deep nesting or chains of a few hundred links.  So the two can differ only in speed;
tests/test_cel_quick_parser.py holds this parser to the reference over generated expressions.

cel-python's grammar (celpy/cel.lark) is mirrored where it differs from cel-go's: a ``-`` written
against a number is part of the literal (``-1`` is the int -1), the middle of ``a ? b : c`` is a
conditionalOr, no trailing comma is allowed in lists, maps or arguments, and a bool literal is
placed at 1:1.
"""

from __future__ import annotations

import re

from .syntax import (MACROS, Bind, Call, Ident, Index, ListLit, Lit, MapLit, Macro, Node, Position, Select,
                     operator_position, position_at)

# What lark skips between tokens: cel.lark's WHITESPACE and COMMENT (``//`` to the end of the line).
_SKIP = re.compile(r"(?:[\t\n\f\r ]+|//[^\n]*)*")
_NAME = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
# A number this parser reads: decimal int, or digits.digits; a sign only where cel.lark's INT_LIT
# and FLOAT_LIT take one.  Followed by a name character or a dot it is something else (1u, 0x1F,
# 1e3, 1.5.x): left to the reference.
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?(?![_a-zA-Z0-9.])")
# A quoted string with escapes: cel.lark's STRING_LIT, verbatim (its double-quoted ``{4-8}`` is
# literal text to Python's re, not a repetition: kept, so that the token ends where lark's does),
# and the escapes as celpy.evaluation.celstr expands them (CEL_ESCAPES_PAT, CEL_ESCAPES).
_STRING = re.compile(r"""(?:"(?:\\[abfnrtv"'\\]|\\\d{3}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4-8}|.)*?")"""
                     r"""|(?:'(?:\\[abfnrtv"'\\]|\\\d{3}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|.)*?')""",
                     re.M)
_ESCAPE = re.compile(r"""\\[abfnrtv"'\\]|\\\d{3}|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|.""")
_SIMPLE_ESCAPES = {"\\a": "\a", "\\b": "\b", "\\f": "\f", "\\n": "\n", "\\r": "\r", "\\t": "\t",
                   "\\v": "\v", '\\"': '"', "\\'": "'", "\\\\": "\\"}
_OPERATORS = ("||", "&&", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", ".", ",",
              "(", ")", "[", "]", "{", "}")
_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ADDITIVE = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE = {"*": "_*_", "/": "_/_", "%": "_%_"}
_OR, _AND = {"||": "_||_"}, {"&&": "_&&_"}
# Names cel.lark's lexer reads as something else (token kinds), and cel-go's reserved words, which
# are left to the reference.
_KEYWORDS = {"in": "in", "true": "bool", "false": "bool", "null": "null"}
_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop",
                       "package", "namespace", "return", "var", "void", "while"})
_MAX_DEPTH = 24  # deeper nesting is left to the reference (its tree builder recurses ~20 frames a level)
# parser.py's tree builder also recurses once per operator, selection, index or call in a chain
# (lark nests them to the left), 3 or 4 frames each: where nesting and chains together could
# take it near Python's 1,000 frames, the reference decides (and says "nested too deeply" there).
_FRAMES_PER_LEVEL, _FRAMES_PER_LINK, _FRAME_BUDGET = 22, 4, 700


# cel-python's lexer re-makes true and false tokens without a position.  parser.py places the
# literal itself at 1:1 (its fallback for a token), and a subexpression that starts with one (an
# index key, a ternary's condition) at (None, None); an operator whose left operand ends with one
# falls back to another operand's start.  Mirrored, so that both give the same AST and messages.
_UNPLACED: Position = (None, None)  # type: ignore[assignment]


class _Unread(Exception):
    """Not a shape this parser reads: the reference parser takes the expression."""


def parse_quick(expression: str) -> Node | None:
    """The AST parser.py would build for ``expression``, or None when the reference must decide."""
    try:
        parser = _Parser(expression)
        ast = parser.parse()
    except (_Unread, RecursionError):
        return None
    if parser.deepest * _FRAMES_PER_LEVEL + parser.links * _FRAMES_PER_LINK > _FRAME_BUDGET:
        return None
    return ast


def _unescape(body: str) -> str:
    """A quoted string's text as celpy.evaluation.celstr expands it; a code point out of range
    (an octal escape over 0o377 is fine, \\999 and \\U00110000 are not) is left to the reference."""
    out = []
    for piece in _ESCAPE.findall(body):
        if len(piece) == 1:
            out.append(piece)
        elif piece[1] in "xuU":
            out.append(_chr(int(piece[2:], 16)))
        elif len(piece) == 4:
            try:
                out.append(_chr(int(piece[1:], 8)))
            except ValueError:
                raise _Unread from None
        else:
            out.append(_SIMPLE_ESCAPES.get(piece, piece))
    return "".join(out)


def _chr(code: int) -> str:
    if code > 0x10FFFF:
        raise _Unread
    return chr(code)


class _Token:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind: str, text: str, start: int, end: int) -> None:
        self.kind = kind  # "name", "number", "string", "bool", "null", "in", "end" or the operator itself
        self.text = text
        self.start = start
        self.end = end


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.depth = 0
        self.deepest = 0  # the deepest nesting reached (expressions within expressions)
        self.links = 0  # operators, selections, indexes and method calls: chains the reference nests
        self.one_line = "\n" not in text
        self.token = self._next(operand=True)
        self.previous_end = 0  # where the last token taken ends

    # -- tokens -----------------------------------------------------------------------------------

    def _next(self, operand: bool) -> _Token:
        """The next token; ``operand``: where an operand may start, where cel.lark's lexer reads a
        ``-`` written against a digit as part of the number."""
        text = self.text
        offset = _SKIP.match(text, self.offset).end()
        if offset >= len(text):
            self.offset = offset
            return _Token("end", "", offset, offset)
        char = text[offset]
        if char.isascii() and (char.isalpha() or char == "_"):
            match = _NAME.match(text, offset)
            name = match.group()
            if name in _RESERVED:
                raise _Unread
            if match.end() < len(text) and text[match.end()] in "\"'":
                raise _Unread  # r"..", b'..': raw and bytes literals
            self.offset = match.end()
            return _Token(_KEYWORDS.get(name, "name"), name, offset, match.end())
        if char.isdigit() or (operand and char == "-" and text[offset + 1:offset + 2].isdigit()):
            match = _NUMBER.match(text, offset)
            if match is None:
                raise _Unread
            self.offset = match.end()
            return _Token("number", match.group(), offset, match.end())
        if char == '"' or char == "'":
            if text.startswith(char * 3, offset):
                raise _Unread  # triple-quoted
            close = text.find(char, offset + 1)
            if close < 0:
                raise _Unread
            body = text[offset + 1:close]
            if "\n" in body:
                raise _Unread  # a line break: a syntax error
            if "\\" in body:  # escapes: the token ends where cel.lark's ends, read as cel-python reads it
                match = _STRING.match(text, offset)
                if match is None:
                    raise _Unread
                self.offset = match.end()
                return _Token("string", _unescape(match.group()[1:-1]), offset, match.end())
            self.offset = close + 1
            return _Token("string", body, offset, close + 1)
        for operator in _OPERATORS:
            if text.startswith(operator, offset):
                self.offset = offset + len(operator)
                return _Token(operator, operator, offset, offset + len(operator))
        raise _Unread

    def _take(self, operand_next: bool = False) -> _Token:
        """The current token; reads the next one (where an operand may start when ``operand_next``)."""
        token = self.token
        self.previous_end = None if token.kind == "bool" else token.end  # see _UNPLACED
        self.token = self._next(operand_next)
        return token

    def _expect(self, kind: str, operand_next: bool = False) -> _Token:
        if self.token.kind != kind:
            raise _Unread
        return self._take(operand_next)

    def _pos(self, offset: int | None) -> Position:
        if offset is None:
            return _UNPLACED
        return (1, offset + 1) if self.one_line else position_at(self.text, offset)

    def _operator_pos(self, left_end: int | None, fallback: int | None) -> Position:
        """Where parser.py places a binary operator (syntax.operator_position); where the left
        operand ends in a bool literal, the start of ``fallback`` (the right operand for ``||`` and
        ``&&``, the left one for the others), as there."""
        if left_end is None:
            return self._pos(fallback)
        return operator_position(self.text, left_end)

    # -- grammar (cel.lark, top down) ------------------------------------------------------------
    # Each rule returns (node, start offset of its first token); parenthesised operands start at "(".

    def parse(self) -> Node:
        node, _ = self._expr()
        if self.token.kind != "end":
            raise _Unread
        return node

    def _deeper(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Unread

    def _expr(self) -> tuple[Node, int | None]:
        self._deeper()
        self.deepest = max(self.deepest, self.depth)
        condition, start = self._binary_chain(self._and, _OR)
        if self.token.kind == "?":
            self._take(operand_next=True)
            yes, _ = self._binary_chain(self._and, _OR)  # cel.lark: a conditionalor, not an expr
            self._expect(":", operand_next=True)
            no, _ = self._expr()
            condition = Call("_?_:_", None, (condition, yes, no), self._pos(start))
        self.depth -= 1
        return condition, start

    def _binary_chain(self, operand, names: dict[str, str]) -> tuple[Node, int | None]:
        """``operand (op operand)*`` folded to the left, as cel.lark's left-recursive rules nest."""
        left, start = operand()
        logic = names is _OR or names is _AND
        while self.token.kind in names:
            left_end = self.previous_end
            name = names[self.token.kind]
            self._take(operand_next=True)
            right, right_start = operand()
            self.links += 1
            left = Call(name, None, (left, right), self._operator_pos(left_end, right_start if logic else start))
        return left, start

    def _and(self) -> tuple[Node, int | None]:
        return self._binary_chain(self._relation, _AND)

    def _relation(self) -> tuple[Node, int | None]:
        return self._binary_chain(self._addition, _RELATIONS)

    def _addition(self) -> tuple[Node, int | None]:
        return self._binary_chain(self._multiplication, _ADDITIVE)

    def _multiplication(self) -> tuple[Node, int | None]:
        return self._binary_chain(self._unary, _MULTIPLICATIVE)

    def _unary(self) -> tuple[Node, int | None]:
        token = self.token
        if token.kind == "!" or token.kind == "-":
            self._take(operand_next=True)
            self._deeper()  # counted in depth, not in deepest: the reference recurses 2 frames a `!`
            operand, _ = self._unary()
            self.depth -= 1
            return Call("!_" if token.kind == "!" else "-_", None, (operand,), self._pos(token.start)), token.start
        return self._member()

    def _member(self) -> tuple[Node, int | None]:
        node, start = self._primary()
        while True:
            kind = self.token.kind
            if kind == ".":
                self.links += 1
                self._take()
                name = self._expect("name")
                if self.token.kind == "(":
                    self._take(operand_next=True)
                    node = self._method(node, name)
                else:
                    node = Select(node, name.text, self._pos(name.start))
            elif kind == "[":
                self.links += 1
                self._take(operand_next=True)
                key, key_start = self._expr()
                self._expect("]")
                node = Index(node, key, self._pos(key_start))
            elif kind == "{":
                raise _Unread  # message construction: parser.py words the error
            else:
                return node, start

    def _method(self, receiver: Node, name: _Token) -> Node:
        """``receiver.name(args)`` with the ``(`` taken: a macro, cel.bind or a method call."""
        args = self._arguments(")")
        if name.text in MACROS:
            if len(args) not in {2, 3} or (len(args) == 3 and name.text != "map") or not isinstance(args[0], Ident):
                raise _Unread  # parser.py words the error
            return Macro(name.text, receiver, args[0].name, args[1:], self._pos(name.start))
        if name.text == "bind" and isinstance(receiver, Ident) and receiver.name == "cel":
            if len(args) != 3 or not isinstance(args[0], Ident):
                raise _Unread
            return Bind(args[0].name, args[1], args[2], self._pos(name.start))
        return Call(name.text, receiver, args, self._pos(name.start))

    def _arguments(self, close: str) -> tuple[Node, ...]:
        """``expr ("," expr)*`` up to ``close``, which is taken; no trailing comma (cel.lark)."""
        items: list[Node] = []
        if self.token.kind == close:
            self._take()
            return ()
        while True:
            item, _ = self._expr()
            items.append(item)
            if self.token.kind == ",":
                self._take(operand_next=True)
            else:
                self._expect(close)
                return tuple(items)

    def _primary(self) -> tuple[Node, int | None]:
        token = self.token
        kind = token.kind
        start = token.start
        if kind == "name":
            self._take()
            if self.token.kind == "(":
                self._take(operand_next=True)
                return Call(token.text, None, self._arguments(")"), self._pos(start)), start
            return Ident(token.text, self._pos(start)), start
        if kind == "number":
            self._take()
            text = token.text
            if "." in text:
                return Lit(float(text), "double", self._pos(start)), start
            return Lit(int(text, 10), "int", self._pos(start)), start
        if kind == "string":
            self._take()
            return Lit(token.text, "string", self._pos(start)), start
        if kind == "bool":
            self._take()  # placed at 1:1, and what starts with it nowhere: see _UNPLACED
            return Lit(token.text == "true", "bool", (1, 1)), None
        if kind == "null":
            self._take()
            return Lit(None, "null_type", self._pos(start)), start
        if kind == "(":
            self._take(operand_next=True)
            inner, _ = self._expr()
            self._expect(")")
            return inner, start
        if kind == "[":
            self._take(operand_next=True)
            return ListLit(self._arguments("]"), self._pos(start)), start
        if kind == "{":
            self._take(operand_next=True)
            return MapLit(self._entries(), self._pos(start)), start
        raise _Unread  # a leading dot, an operator, `in`

    def _entries(self) -> tuple[tuple[Node, Node], ...]:
        """``key ":" value ("," key ":" value)*`` up to ``}``, which is taken."""
        entries: list[tuple[Node, Node]] = []
        if self.token.kind == "}":
            self._take()
            return ()
        while True:
            key, _ = self._expr()
            self._expect(":", operand_next=True)
            value, _ = self._expr()
            entries.append((key, value))
            if self.token.kind == ",":
                self._take(operand_next=True)
            else:
                self._expect("}")
                return tuple(entries)
