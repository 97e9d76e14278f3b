"""Parse CEL text with cel-python's grammar into the AST of kubectl_gpu/cel/syntax.py.

cel-python's lark tree encodes operator precedence as nesting (expr > conditionalor > ... >
primary); this module flattens it into calls, selections and literals with 1-based positions.
Loading it loads cel-python, lark and pendulum (about 0.1 s): selector.py imports it only for an
expression it has not seen parsed before (kubectl_gpu/cel/parser_hook.py).
"""

from __future__ import annotations

from typing import Any

import lark
from celpy.celparser import CELParseError, CELParser
from celpy.evaluation import celbytes, celstr

from .errors import CelCompileError
from .parser_hook import take_parser_builder
from .syntax import (MACROS, Bind, Call, Ident, Index, ListLit, Lit, MapLit, Macro, Node, Position, Select,
                     operator_position)

_RELATIONS = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "@in",
}
_ARITHMETIC = {
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}


def parse(expression: str) -> lark.Tree:
    """The cel-python parse tree; syntax errors become CelCompileError with a position."""
    if CELParser.CEL_PARSER is None:
        build = take_parser_builder()  # a face's cached tables (parser_hook.py), once
        if build is not None:
            build()
    try:
        return CELParser().parse(expression)
    except CELParseError as err:
        position = (err.line, err.column) if err.line and err.column else None
        first = str(err.args[0]).strip().splitlines()[0] if err.args else "syntax error"
        raise CelCompileError(f"Syntax error: {first}", position, expression) from None
    except RecursionError:
        raise CelCompileError("expression is nested too deeply", None, expression) from None


def to_ast(tree: lark.Tree, expression: str) -> Node:
    return _Builder(expression).build(tree)


def _pos(item: Any) -> Position:
    if isinstance(item, lark.Token):
        return (item.line or 1, item.column or 1)
    meta = getattr(item, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return (meta.line, meta.column)
    return (1, 1)


class _Builder:
    def __init__(self, expression: str) -> None:
        self.expression = expression

    def error(self, message: str, item: Any) -> CelCompileError:
        return CelCompileError(message, _pos(item), self.expression)

    def build(self, tree: Any) -> Node:
        method = getattr(self, f"_{tree.data}", None)
        if method is None:
            raise self.error(f"unsupported syntax: {tree.data}", tree)
        return method(tree)

    def _single(self, tree: lark.Tree) -> Node:
        return self.build(tree.children[0])

    _member = _primary = _paren_expr = _single

    def _expr(self, tree: lark.Tree) -> Node:
        if len(tree.children) == 1:
            return self.build(tree.children[0])
        cond, yes, no = (self.build(c) for c in tree.children)
        return Call("_?_:_", None, (cond, yes, no), _pos(tree))

    def _operator_pos(self, left: Any, fallback: Any) -> Position:
        """Where the operator after ``left`` starts (syntax.operator_position); where lark gives
        ``left`` no end (it ends with a bool literal, see quick_parser._UNPLACED), ``fallback``'s start."""
        meta = getattr(left, "meta", None)
        end = getattr(meta, "end_pos", None) if meta is not None and not meta.empty else None
        if end is None:
            return _pos(fallback)
        return operator_position(self.expression, end)

    def _binary_logic(self, tree: lark.Tree, name: str) -> Node:
        if len(tree.children) == 1:
            return self.build(tree.children[0])
        left, right = tree.children
        return Call(name, None, (self.build(left), self.build(right)), self._operator_pos(left, right))

    def _conditionalor(self, tree: lark.Tree) -> Node:
        return self._binary_logic(tree, "_||_")

    def _conditionaland(self, tree: lark.Tree) -> Node:
        return self._binary_logic(tree, "_&&_")

    def _operator(self, tree: lark.Tree, names: dict[str, str]) -> Node:
        if len(tree.children) == 1:
            return self.build(tree.children[0])
        op_tree, right = tree.children
        left = op_tree.children[0]
        return Call(names[op_tree.data], None, (self.build(left), self.build(right)), self._operator_pos(left, op_tree))

    def _relation(self, tree: lark.Tree) -> Node:
        return self._operator(tree, _RELATIONS)

    def _addition(self, tree: lark.Tree) -> Node:
        return self._operator(tree, _ARITHMETIC)

    _multiplication = _addition

    def _unary(self, tree: lark.Tree) -> Node:
        if len(tree.children) == 1:
            return self.build(tree.children[0])
        op, operand = tree.children
        name = "!_" if op.data == "unary_not" else "-_"
        return Call(name, None, (self.build(operand),), _pos(tree))

    def _member_dot(self, tree: lark.Tree) -> Node:
        target, name = tree.children
        return Select(self.build(target), str(name), _pos(name))

    def _member_dot_arg(self, tree: lark.Tree) -> Node:
        target, name = tree.children[:2]
        args = self._exprlist(tree.children[2]) if len(tree.children) > 2 else ()
        if str(name) in MACROS:
            return self._macro(str(name), self.build(target), tree.children[2] if len(tree.children) > 2 else None, name)
        receiver = self.build(target)
        if str(name) == "bind" and isinstance(receiver, Ident) and receiver.name == "cel":
            return self._bind(args, name)
        return Call(str(name), receiver, args, _pos(name))

    def _bind(self, args: tuple[Node, ...], token: Any) -> Node:
        if len(args) != 3:
            raise self.error("cel.bind() takes three arguments: cel.bind(name, value, expression)", token)
        var, init, body = args
        if not isinstance(var, Ident):
            raise self.error("cel.bind() variable names must be simple identifiers", token)
        return Bind(var.name, init, body, _pos(token))

    def _macro(self, name: str, target: Node, exprlist: Any, token: Any) -> Node:
        raw = list(exprlist.children) if exprlist is not None else []
        if len(raw) not in {2, 3} or (len(raw) == 3 and name != "map"):
            raise self.error(f"wrong number of arguments to macro '{name}'", token)
        var = self.build(raw[0])
        if not isinstance(var, Ident):
            raise self.error(f"argument must be a simple name", raw[0])
        return Macro(name, target, var.name, tuple(self.build(a) for a in raw[1:]), _pos(token))

    def _member_index(self, tree: lark.Tree) -> Node:
        target, key = tree.children
        return Index(self.build(target), self.build(key), _pos(key))

    def _member_object(self, tree: lark.Tree) -> Node:
        raise self.error("message construction is not available in the DRA CEL environment", tree)

    def _exprlist(self, tree: lark.Tree) -> tuple[Node, ...]:
        return tuple(self.build(c) for c in tree.children)

    def _ident(self, tree: lark.Tree) -> Node:
        token = tree.children[0]
        return Ident(str(token), _pos(token))

    _dot_ident = _ident

    def _ident_arg(self, tree: lark.Tree) -> Node:
        token = tree.children[0]
        args = self._exprlist(tree.children[1]) if len(tree.children) > 1 else ()
        return Call(str(token), None, args, _pos(token))

    _dot_ident_arg = _ident_arg

    def _list_lit(self, tree: lark.Tree) -> Node:
        items = self._exprlist(tree.children[0]) if tree.children else ()
        return ListLit(items, _pos(tree))

    def _map_lit(self, tree: lark.Tree) -> Node:
        flat = [self.build(c) for c in tree.children[0].children] if tree.children else []
        return MapLit(tuple(zip(flat[0::2], flat[1::2])), _pos(tree))

    def _literal(self, tree: lark.Tree) -> Node:
        token = tree.children[0]
        kind = token.type
        pos = _pos(token)
        text = str(token)
        try:
            if kind == "INT_LIT":
                return Lit(int(text, 16) if "0x" in text else int(text, 10), "int", pos)
            if kind == "UINT_LIT":
                return Lit(int(text[:-1], 16) if "0x" in text else int(text[:-1], 10), "uint", pos)
            if kind == "FLOAT_LIT":
                return Lit(float(text), "double", pos)
            if kind in {"STRING_LIT", "MLSTRING_LIT"}:
                return Lit(str(celstr(token)), "string", pos)
            if kind == "BYTES_LIT":
                return Lit(bytes(celbytes(token)), "bytes", pos)
            if kind == "BOOL_LIT":
                return Lit(text == "true", "bool", pos)
            if kind == "NULL_LIT":
                return Lit(None, "null_type", pos)
        except ValueError as err:
            raise self.error(f"invalid literal {text}: {err}", token) from None
        raise self.error(f"unsupported literal {text}", token)
