"""The filter language of ``table.transform``: a tiny, safe expression language (no ``eval``).

Grammar (keywords lower case)::

    expr     := and_expr ("or" and_expr)*
    and_expr := not_expr ("and" not_expr)*
    not_expr := "not" not_expr | compare
    compare  := operand [("==" | "!=" | "<" | "<=" | ">" | ">=") operand]
    operand  := NUMBER | STRING | "true" | "false" | "null" | COLUMN | "(" expr ")"

``STRING`` is single- or double-quoted (backslash escapes the quote); ``COLUMN`` is a name
(letters, digits, ``_``) or any text in backquotes (`` `first name` ``). A bare operand is
true when it is truthy. Comparisons never raise: ``==``/``!=`` compare values as Python does;
an ordering between a null or values of different kinds (a number and a text) is false.
Compilation turns the text into nested closures over a row's positions, once per step. A
chain of ``and``/``or`` is one flat closure (a chain of a hundred thousand terms had a row's
test recurse that deep and fail with a RecursionError in the worker's thread), and parentheses
and ``not`` nest at most :data:`MAX_DEPTH` deep; a number is at most 4,000 digits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["MAX_DEPTH", "ExpressionError", "compile_filter"]

#: How deep parentheses and ``not`` may nest in a filter.
MAX_DEPTH = 64

Row = Sequence[Any]
_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
    r"|(?P<op>==|!=|<=|>=|<|>|\(|\))|(?P<bq>`[^`]+`)|(?P<name>[A-Za-z_][A-Za-z0-9_]*))"
)
_BLANK = re.compile(r"\s*")
_ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


class ExpressionError(ValueError):
    """Raised when a filter does not parse or names an unknown column (with the position)."""


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "num"
    return type(v).__name__


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        # Matches at pos, never a copy of the rest (``text[pos:]`` per token was quadratic: a
        # filter of a megabyte took minutes of the worker's thread).
        blank = _BLANK.match(text, pos)
        if blank.end() == len(text):
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExpressionError(f"unexpected character at position {blank.end()}")
        kind = m.lastgroup
        raw = m.group(kind)  # type: ignore[arg-type]
        start = m.start(kind)  # type: ignore[arg-type]
        if kind == "num":
            if len(raw) > 4000:  # int() of a longer text raises (or takes quadratic time)
                raise ExpressionError(f"a number longer than 4000 digits at position {start}")
            out.append(("lit", float(raw) if "." in raw else int(raw), start))
        elif kind == "str":
            out.append(("lit", re.sub(r"\\(.)", r"\1", raw[1:-1]), start))
        elif kind == "bq":
            out.append(("col", raw[1:-1], start))
        elif kind == "name":
            words = {"true": ("lit", True), "false": ("lit", False), "null": ("lit", None)}
            if raw in ("and", "or", "not"):
                out.append(("kw", raw, start))
            elif raw in words:
                out.append((*words[raw], start))
            else:
                out.append(("col", raw, start))
        else:
            out.append(("op", raw, start))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str, columns: Sequence[str]) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.index = {c: n for n, c in enumerate(columns)}
        self.end = len(text)
        self.depth = 0

    def nested(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"the filter nests deeper than {MAX_DEPTH} at position {pos}")

    def peek(self) -> tuple[str, Any, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, kind: str, value: Any = None) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == kind and (value is None or tok[1] == value):
            self.i += 1
            return True
        return False

    def where(self) -> int:
        tok = self.peek()
        return tok[2] if tok is not None else self.end

    def expr(self) -> Callable[[Row], Any]:
        terms = [self.and_expr()]
        while self.take("kw", "or"):
            terms.append(self.and_expr())
        if len(terms) == 1:
            return terms[0]
        return lambda r: any(t(r) for t in terms)

    def and_expr(self) -> Callable[[Row], Any]:
        terms = [self.not_expr()]
        while self.take("kw", "and"):
            terms.append(self.not_expr())
        if len(terms) == 1:
            return terms[0]
        return lambda r: all(t(r) for t in terms)

    def not_expr(self) -> Callable[[Row], Any]:
        pos = self.where()
        if self.take("kw", "not"):
            self.nested(pos)
            inner = self.not_expr()
            self.depth -= 1
            return lambda r: not inner(r)
        return self.compare()

    def compare(self) -> Callable[[Row], Any]:
        left = self.operand()
        tok = self.peek()
        if tok is None or tok[0] != "op" or tok[1] in ("(", ")"):
            return left
        self.i += 1
        right = self.operand()
        op = tok[1]
        if op == "==":
            return lambda r: left(r) == right(r)
        if op == "!=":
            return lambda r: left(r) != right(r)
        order = _ORDER[op]

        def ordered(r: Row) -> bool:
            a, b = left(r), right(r)
            if a is None or b is None or _kind(a) != _kind(b):
                return False
            return bool(order(a, b))

        return ordered

    def operand(self) -> Callable[[Row], Any]:
        tok = self.peek()
        if tok is None:
            raise ExpressionError(f"expected a value at position {self.end}")
        kind, value, pos = tok
        self.i += 1
        if kind == "lit":
            return lambda r: value
        if kind == "col":
            if value not in self.index:
                shown = repr(value) if len(value) <= 64 else f"of {len(value)} characters"
                raise ExpressionError(f"unknown column {shown} at position {pos}")
            n = self.index[value]
            return lambda r: r[n]
        if kind == "op" and value == "(":
            self.nested(pos)
            inner = self.expr()
            self.depth -= 1
            if not self.take("op", ")"):
                raise ExpressionError(f"expected ')' at position {self.where()}")
            return inner
        raise ExpressionError(f"unexpected {value!r} at position {pos}")


def compile_filter(text: str, columns: Sequence[str]) -> Callable[[Row], bool]:
    """Compile ``text`` into a predicate over rows whose values are in ``columns`` order.

    Raises:
        ExpressionError: naming the position of the first problem.
    """
    parser = _Parser(text, columns)
    if not parser.toks:
        raise ExpressionError("the filter is empty")
    fn = parser.expr()
    if parser.peek() is not None:
        raise ExpressionError(f"unexpected {parser.peek()[1]!r} at position {parser.where()}")  # type: ignore[index]
    return lambda r: bool(fn(r))
