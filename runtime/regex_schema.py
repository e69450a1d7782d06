"""A JSON Schema compiled by fastjsonschema, with its patterns matched by RE2.

fastjsonschema compiles ``pattern`` and the keys of ``patternProperties`` with Python's ``re``
(a backtracking matcher: ``^(a+)+$`` against 28 characters held the daemon's loop 4.7 s) and
even runs them while compiling (a ``required`` key against each ``patternProperties`` key).
So ``compile_schema`` hands it a copy of the schema in which each pattern is a token, a
comment that ``re`` compiles to an empty match (``(?#re2 0)``), and then puts each pattern,
compiled by RE2 (``protocols.patterns``), in the place of its token in the table the generated
code looks patterns up in: ``REGEX_PATTERNS``, a global of the validator. Python's ``re``
never sees a pattern of the schema.

That table is fastjsonschema's own (2.x), not a documented interface. It is therefore checked,
never assumed: once per process, a probe schema must refuse what its patterns refuse once
they are RE2's; and every validator's table must hold only tokens and the format patterns
fastjsonschema ships (a pattern it reached that the swap did not, through a ``$ref`` into a
place no keyword names, is refused). Should fastjsonschema change, a schema with a pattern
is refused (``JsonSchemaDefinitionException``); one without is compiled as before, untouched.
``tests/runtime/test_regex_schema.py`` fails loudly on such a change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import fastjsonschema
from fastjsonschema import JsonSchemaDefinitionException, JsonSchemaValueException
from re2 import _re2

from ontoflow.protocols.patterns import DATA_KEYWORDS, SCHEMA_MAPS, compile_pattern

__all__ = ["compile_schema"]

Validator = Callable[[Any], Any]


def _format_patterns() -> frozenset[str]:
    """The format expressions fastjsonschema ships (the only ``re`` patterns a table may keep)."""
    found: set[str] = set()
    for module in ("draft04", "draft06", "draft07"):
        generator = getattr(getattr(fastjsonschema, module, None), f"CodeGeneratorDraft{module[-2:]}", None)
        found.update(p for p in getattr(generator, "FORMAT_REGEXS", {}).values() if type(p) is str)
    return frozenset(found)


_FORMATS = _format_patterns()


class _Tokens:
    """The patterns of one schema, each behind a token ``re`` compiles to an empty match."""

    def __init__(self) -> None:
        self.pattern_of: dict[str, str] = {}
        self._token_of: dict[str, str] = {}

    def __call__(self, pattern: str) -> str:
        token = self._token_of.get(pattern)
        if token is None:
            token = self._token_of[pattern] = f"(?#re2 {len(self._token_of)})"
            self.pattern_of[token] = pattern
        return token


def _swap(node: Any, tokens: _Tokens) -> Any:
    """A copy of the schema ``node`` with each pattern replaced by its token. Any keyword not
    known to hold data is walked as a schema, so a ``$ref`` to a place no keyword names finds
    its patterns swapped too (what is left is refused: ``_install``, ``_searched_while_compiling``)."""
    if type(node) is list:
        return [_swap(item, tokens) for item in node]
    if type(node) is not dict:
        return node
    out: dict[Any, Any] = {}
    for keyword, value in node.items():
        if keyword in DATA_KEYWORDS:
            out[keyword] = value
        elif keyword == "pattern" and type(value) is str:
            out[keyword] = tokens(value)
        elif keyword == "patternProperties" and type(value) is dict:
            _required_allowed(node, value)
            out[keyword] = {(tokens(k) if type(k) is str else k): _swap(v, tokens) for k, v in value.items()}
        elif keyword in SCHEMA_MAPS and type(value) is dict:
            out[keyword] = {k: _swap(v, tokens) for k, v in value.items()}
        else:  # a subschema, a list of them, or a keyword no draft names (a $ref may point into it)
            out[keyword] = _swap(value, tokens)
    return out


def _required_allowed(node: dict[Any, Any], patterns: dict[Any, Any]) -> None:
    """fastjsonschema's check of an object schema whose required names no property allows
    (it runs it with ``re`` while compiling; its tokens match any name), made with RE2.

    Raises:
        JsonSchemaDefinitionException: as fastjsonschema words it.
    """
    required, properties = node.get("required"), node.get("properties", {})
    if node.get("additionalProperties", True) or type(required) is not list or type(properties) is not dict:
        return
    compiled = [compile_pattern(p) for p in patterns if type(p) is str]
    not_possible = [name for name in required if type(name) is str and name not in properties
                    and not any(p.search(name) for p in compiled)]
    if not_possible:
        raise JsonSchemaDefinitionException(f"items {not_possible} are required but not allowed")


def _searched_while_compiling(node: Any, tokens: _Tokens) -> bool:
    """Whether fastjsonschema would run ``re`` on a pattern while compiling the swapped
    ``node``: an object schema with ``required``, a false ``additionalProperties`` and a
    ``patternProperties`` key that is not a token (at a place the swap did not reach, under
    a data keyword, found by a ``$ref`` or an ``$id``), each required name searched with it."""
    stack = [node]
    while stack:
        node = stack.pop()
        if type(node) is list:
            stack.extend(node)
        elif type(node) is dict:
            found = node.get("patternProperties")
            if (type(found) is dict and "required" in node and "additionalProperties" in node
                    and not node["additionalProperties"] and any(k not in tokens.pattern_of for k in found)):
                return True
            stack.extend(node.values())
    return False


class _Search:
    """What the generated code calls, ``.search(text)``, truthy when ``text`` holds a match.

    google-re2's own ``search`` builds a match object in Python (7.6 us for five characters,
    ``re`` 0.35 us); its binding's ``Match`` answers in 1.2 us. That binding is google-re2's
    private one: when it is not there as expected, the public ``search`` is used (same
    answers, slower). ``tests/runtime/test_regex_schema.py`` checks they agree, and that the
    quick path is the one taken.
    """

    __slots__ = ("search",)

    def __init__(self, compiled: Any) -> None:
        public = compiled.search
        try:
            match, anchor, none = compiled._regexp.Match, _re2.RE2.Anchor.UNANCHORED, (-1, -1)
            match(anchor, b"", 0, 0)
        except Exception:  # noqa: BLE001 - another google-re2: its public search
            self.search = public
            return

        def search(text: Any) -> bool:
            if type(text) is not str:
                return bool(public(text))  # what it raises (a key of another type), as re raised
            data = text.encode("utf-8")
            return match(anchor, data, 0, len(data))[0] != none

        self.search = search


def _refused(what: str) -> JsonSchemaDefinitionException:
    return JsonSchemaDefinitionException(f"{what}: its patterns cannot be matched by RE2 (fastjsonschema "
                                         f"{getattr(fastjsonschema, 'VERSION', '?')}), so it is refused")


def _install(inner: Validator, compiled: Mapping[str, Any]) -> None:
    """Put each token's pattern, ``compiled`` by RE2, in ``inner``'s pattern table.

    Raises:
        JsonSchemaDefinitionException: when the table is not where it is expected, or holds a
            pattern that is neither a token nor one of fastjsonschema's formats.
    """
    table = getattr(inner, "__globals__", {}).get("REGEX_PATTERNS")
    if type(table) is not dict:
        raise _refused("this schema")
    for key in list(table):
        if key in compiled:
            table[key] = compiled[key]
        elif not (isinstance(table[key], re.Pattern) and table[key].pattern in _FORMATS):
            raise _refused("a pattern at a place no schema keyword names")


_probed: bool | None = None


def _probe() -> None:
    """Check once that swapped patterns are the ones the validator runs (see the module).

    Raises:
        JsonSchemaDefinitionException: when they are not.
    """
    global _probed
    if _probed is None:
        try:
            check = _compile({"type": "object", "properties": {"s": {"pattern": "^a+$"}},
                              "patternProperties": {"^n": {"type": "integer"}}}, {}, False, probe=False)
            check({"s": "aa", "n1": 1})
            refused = 0
            for bad in ({"s": "ab"}, {"n1": "x"}):
                try:
                    check(bad)
                except JsonSchemaValueException:
                    refused += 1
            _probed = refused == 2
        except JsonSchemaDefinitionException:
            _probed = False
    if not _probed:
        raise _refused("a schema with a pattern")


def _compile(schema: Any, handlers: Mapping[str, Callable[[str], Any]], use_default: bool, probe: bool = True) -> Validator:
    tokens = _Tokens()
    swapped = _swap(schema, tokens)
    if tokens.pattern_of and probe:
        _probe()
    # Compiled (or refused) before anything is generated.
    compiled = {token: _Search(compile_pattern(pattern, captures=False)) for token, pattern in tokens.pattern_of.items()}
    if _searched_while_compiling(swapped, tokens):
        raise _refused("a patternProperties at a place no schema keyword names")
    inner = fastjsonschema.compile(swapped, handlers=dict(handlers), use_default=use_default)
    _install(inner, compiled)  # a schema without patterns too: one may be reached by a $ref
    patterns = tokens.pattern_of
    if not patterns:
        return inner

    def check(data: Any) -> Any:
        try:
            return inner(data)
        except JsonSchemaValueException as exc:
            if exc.rule != "pattern" or exc.rule_definition not in patterns:
                raise
            # Its message names the token: told with the pattern instead, as fastjsonschema would.
            pattern = patterns[exc.rule_definition]
            definition = {**exc.definition, "pattern": pattern} if isinstance(exc.definition, dict) else exc.definition
            raise JsonSchemaValueException(f"{exc.name} must match pattern {pattern}", value=exc.value, name=exc.name,
                                           definition=definition, rule="pattern") from None

    return check


def _refuse_remote(uri: str) -> Any:
    # fastjsonschema would fetch a remote $ref with urlopen while compiling, on the caller's loop.
    raise JsonSchemaDefinitionException("a remote $ref is not allowed")


_NO_REMOTE = {scheme: _refuse_remote for scheme in ("http", "https", "ftp", "file")}


def compile_schema(schema: Any, handlers: Mapping[str, Callable[[str], Any]] | None = None,
                   use_default: bool = True) -> Validator:
    """``fastjsonschema.compile(schema, handlers=handlers, use_default=use_default)``, with
    every ``pattern`` and ``patternProperties`` key matched by RE2 (searched, as JSON Schema
    means), never by ``re``. A schema without patterns gets fastjsonschema's validator itself
    (compiled from a copy of the schema), called directly: no cost is added to a check.
    Without ``handlers``, a remote ``$ref`` is refused, never fetched.

    Raises:
        JsonSchemaDefinitionException: what fastjsonschema raises, or when the patterns cannot
            be given to RE2 (see the module).
        ValueError: when RE2 cannot compile a pattern (a backreference, a lookaround).
        TypeError: whatever else fastjsonschema raises for a malformed schema.
    """
    return _compile(schema, _NO_REMOTE if handlers is None else handlers, use_default)
