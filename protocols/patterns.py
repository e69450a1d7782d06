"""Regular expressions that come from outside the process: compiled by RE2, never by ``re``.

A worker's schemas (``pattern``, the keys of ``patternProperties``) and a domain's entity
``patterns`` reach the daemon from peers and files, and are matched there against values and
sentences from clients and peers. Python's ``re`` backtracks: ``^(a+)+$`` against 28
characters held the daemon's loop 4.7 s, and every character more doubles it. RE2 matches in
time linear in the text; it has no backreferences and no lookaround (what needs backtracking),
so a pattern using them is refused where it arrives, named by its place, never quoted.

JSON Schema's ``pattern`` is an ECMA-262 expression, unanchored (a search, not a match); RE2
reads the common subset the same way (``$`` is the end of the text, ``\\d`` and ``\\w`` are
ASCII), and ``search`` keeps the unanchored meaning. One difference: RE2's ``\\s`` is ASCII where
ECMA's holds every Unicode space, so ``\\S`` lets a no-break space through (the README says how
to write a pattern that refuses it). A domain's entity patterns are not JSON Schema's: they are
searched in sentences, and read ``\\w``, ``\\d`` and ``\\s`` as Python's ``re`` does, as Unicode
(``compile_pattern(unicode=True)``, ``sentence_patterns``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import re2

from ontoflow.protocols.errors import Problem
from ontoflow.protocols.sentence_patterns import unicode_classes

__all__ = [
    "DATA_KEYWORDS",
    "MAX_PATTERN_INSTRUCTIONS",
    "MAX_PATTERN_MEMORY",
    "PatternBudget",
    "SCHEMA_MAPS",
    "compile_pattern",
    "pattern_problem",
    "schema_pattern_problems",
    "schema_patterns",
]

#: The memory one compiled pattern may take (RE2's program and its lazily built DFA). A
#: pattern a schema means takes a few KiB (``^[^/]{1,255}$``: under 64 KiB; ``\w{1,1000}``:
#: 256 KiB); past it RE2 refuses the pattern ("pattern too large"), and a matching whose DFA
#: would outgrow it goes on, still linear, without one.
MAX_PATTERN_MEMORY = 256 << 10

#: The RE2 instructions the patterns of one announcement (a Ready's capabilities) may compile
#: to. Compiling costs about half a microsecond an instruction and a few bytes of text may
#: make thousands (``\w{1000}``: 3,000): without a bound, a Ready of small patterns would
#: hold the loop for minutes. A usual pattern takes 10 to 100.
MAX_PATTERN_INSTRUCTIONS = 200_000

#: What a pattern RE2 refuses is charged (refusing one costs as much as compiling a large one).
_REFUSED_CHARGE = 5_000

#: Keywords whose value is data, never a schema.
DATA_KEYWORDS = frozenset({"const", "default", "enum", "examples"})
#: Keywords whose value maps names to subschemas (``dependencies`` may map a name to a list).
SCHEMA_MAPS = frozenset({"$defs", "definitions", "dependencies", "patternProperties", "properties"})

def _options(captures: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would write the pattern itself to stderr
    options.max_mem = MAX_PATTERN_MEMORY
    options.never_capture = not captures  # a yes-or-no search then never needs the slower engines
    return options


_OPTIONS = {True: _options(True), False: _options(False)}


def compile_pattern(pattern: str, captures: bool = True, *, unicode: bool = False) -> Any:
    """``pattern`` compiled by RE2 (its ``search``, ``match``, ``groupindex`` are ``re``'s);
    without ``captures``, its groups capture nothing (a search that only tells whether); with
    ``unicode``, its ``\\w``, ``\\d`` and ``\\s`` are Python's (``sentence_patterns``: a
    domain's entity patterns, searched in sentences of any script).

    Raises:
        ValueError: when RE2 cannot compile it; the text says why (``invalid perl operator``,
            ``invalid escape sequence``: a lookaround, a backreference), or (``unicode``) it
            negates a class inside a bracket (``[\\W_]``), without quoting it.
        TypeError: when ``pattern`` is not a string.
    """
    if type(pattern) is not str:
        raise TypeError(f"a pattern must be a string, not {type(pattern).__name__}")
    if unicode:
        pattern = unicode_classes(pattern)
    try:
        return re2.compile(pattern, _OPTIONS[captures])
    except re2.error as exc:
        raise ValueError(f"RE2 cannot compile it: {_reason(exc)} (RE2 matches in time linear in the text: "
                         "it has no backreferences and no lookaround)") from None


def _reason(exc: Exception) -> str:
    # RE2's text is "<what>: <the part of the pattern>": the part is left out.
    text = exc.args[0] if exc.args else ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text).split(":", 1)[0].strip()[:80] or "not a regular expression"


class PatternBudget:
    """The RE2 instructions left to compile for one announcement (see
    :data:`MAX_PATTERN_INSTRUCTIONS`); shared by the checks of its schemas.

    Args:
        instructions: the budget.
    """

    def __init__(self, instructions: int = MAX_PATTERN_INSTRUCTIONS) -> None:
        self.instructions = instructions
        self.left = instructions


def pattern_problem(pattern: Any, budget: PatternBudget | None = None) -> str | None:
    """Why RE2 cannot compile ``pattern`` (see :func:`compile_pattern`), or None; what it
    compiled to (or a refusal's cost) is taken from ``budget``."""
    try:
        compiled = compile_pattern(pattern)
    except (TypeError, ValueError) as exc:
        if budget is not None:
            budget.left -= _REFUSED_CHARGE
        return str(exc)
    if budget is not None:
        budget.left -= compiled.programsize
    return None


def _name(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{key!r}]"


def schema_patterns(schema: Any) -> Iterator[tuple[str, str]]:
    """``(path, pattern)`` for every ``pattern`` and every key of a ``patternProperties`` in
    ``schema`` (a JSON Schema): every object under it but a data keyword's (``enum``,
    ``default``...) is taken as a schema, as a ``$ref`` may take it.

    The path is ``.properties.code.pattern``, or ``.patternProperties[key 0]`` for the first
    key of a ``patternProperties`` (a key is a pattern: it is not quoted). A ``pattern`` that
    is not a string is not yielded (the schema's compiler refuses it).
    """
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        path, node = stack.pop()
        if type(node) is not dict:
            continue
        for keyword, value in node.items():
            here = f"{path}{_name(keyword) if type(keyword) is str else '[?]'}"
            if keyword == "pattern" and type(value) is str:
                yield here, value
            elif keyword in DATA_KEYWORDS:
                continue
            elif keyword in SCHEMA_MAPS and type(value) is dict:
                for i, (key, sub) in enumerate(value.items()):
                    if keyword == "patternProperties":
                        if type(key) is str:
                            yield f"{here}[key {i}]", key
                        stack.append((f"{here}[key {i}]", sub))
                    else:
                        stack.append((f"{here}{_name(key) if type(key) is str else '[?]'}", sub))
            elif type(value) is list:
                stack.extend((f"{here}[{i}]", sub) for i, sub in enumerate(value))
            else:  # a subschema, or a keyword no draft names (a $ref may point into it)
                stack.append((here, value))


def schema_pattern_problems(schema: Any, what: str, budget: PatternBudget | None = None) -> list[Problem]:
    """The patterns of ``schema`` RE2 cannot compile, each a problem at ``what`` + its path
    (``capabilities[0].observation_schema.properties.code.pattern``), never quoting it.

    Each distinct pattern is compiled once, and charged to ``budget``: once it is spent, the
    check stops with a problem at ``what`` saying so.
    """
    problems: list[Problem] = []
    seen: dict[str, str | None] = {}
    for path, pattern in schema_patterns(schema):
        if pattern not in seen:
            if budget is not None and budget.left <= 0:
                problems.append(Problem(path=what, message=f"its patterns take more than the {budget.instructions} RE2 "
                                                           "instructions one announcement may compile to"))
                break
            seen[pattern] = pattern_problem(pattern, budget)
        problem = seen[pattern]
        if problem is not None:
            problems.append(Problem(path=f"{what}{path}", message=problem))
    return problems
