"""Errors of the DRA CEL environment, worded like Kubernetes words them."""

from __future__ import annotations


class CelCompileError(Exception):
    """The expression is not valid for the DRA CEL environment (the API server would reject it).

    ``position`` is ``(line, column)``, both 1-based, or None when the error is about the whole
    expression (for instance its result type).
    """

    def __init__(
        self, message: str, position: tuple[int, int] | None = None, expression: str = "",
        prefix: str = "compilation failed: ",
    ) -> None:
        self.message = message
        self.prefix = prefix
        # The parser gives some synthesized nodes no line/column; such an error is about the
        # expression as a whole rather than a made-up place in it.
        self.position = position if position is not None and None not in position else None
        self.expression = expression
        super().__init__(self.render())

    def render(self) -> str:
        if self.position is None:
            return f"{self.prefix}{self.message}"
        line, column = self.position
        lines = self.expression.splitlines() or [""]
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        pointer = "." * (column - 1) + "^"
        return f"{self.prefix}ERROR: <input>:{line}:{column}: {self.message}\n | {source}\n | {pointer}"


class CelRuntimeError(Exception):
    """Evaluating a selector against a device failed.  The scheduler treats this as fatal for the
    whole pod (allocation is aborted), never as "device does not match"."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class EvalError(CelRuntimeError):
    """Internal: an error value travelling through evaluation (CEL errors are values that the
    logical operators may absorb: ``false && error`` is false).  It is the CelRuntimeError the
    caller sees when nothing absorbs it (no second exception to build per failing device)."""
