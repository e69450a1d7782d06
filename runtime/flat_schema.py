"""A fast path in front of a compiled JSON Schema validator, for flat schemas.

fastjsonschema's generated validator costs ~11,000 instructions a call even for an object of
two typed keys (a set of the keys, ``isinstance`` over tuples, a check per keyword). Most
capabilities declare flat inputs: an object whose properties each name a scalar type, maybe
with bounds, an ``enum`` or a ``default``. For those ``compile_validator`` puts a check in
front that tests exact Python types (``type(v) is str``, never a subclass, never ``bool`` for
an integer) and the bounds, and only ever answers "valid": it returns what the full validator
would (the same object, the declared defaults filled in the same order). Whenever it is not
sure (a missing required key, an extra key where none is allowed, a value of any other type:
``1.0`` for an integer, a ``Decimal``, a ``str`` subclass, NaN against a bound) it calls the
full validator on the untouched data, so every error, message and edge case stays the
validator's own.

The subset (anything else gets no fast path):

- a scalar schema: keywords among ``type`` (``string``, ``integer``, ``number``, ``boolean``,
  ``null``, or a list of them), ``enum`` (members of exact type ``str``, ``int`` or ``None``),
  ``minLength``/``maxLength`` (with ``type`` holding ``string``), ``minimum``, ``maximum``,
  ``exclusiveMinimum``, ``exclusiveMaximum`` (with ``type`` holding ``integer`` or
  ``number``; finite ``int``/``float`` bounds), and the annotations ``title``,
  ``description``, ``examples``, ``$comment``, ``default``;
- an object schema: ``type: object``, ``properties`` whose schemas are scalar schemas (a
  ``default`` of exact type ``str``, ``int``, ``bool``, ``None`` or a finite ``float``),
  ``required`` (a list of strings), ``additionalProperties`` (``true`` or ``false``), the
  annotations, and ``$schema`` only naming draft-07 (the draft fastjsonschema uses without it).

The check is generated Python (as fastjsonschema's is) from fixed templates: the schema's
names, bounds and members reach it as constants bound in its namespace, never as source text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ontoflow.runtime.regex_schema import compile_schema

__all__ = ["compile_validator", "flat_validator"]

Validator = Callable[[Any], Any]

_ANNOTATIONS = frozenset({"title", "description", "examples", "$comment", "default"})
_SCALAR_KEYWORDS = _ANNOTATIONS | {"type", "enum", "minLength", "maxLength", "minimum", "maximum",
                                   "exclusiveMinimum", "exclusiveMaximum"}
_OBJECT_KEYWORDS = (_ANNOTATIONS - {"default"}) | {"type", "properties", "required", "additionalProperties",
                                                   "$schema"}
_DRAFT7 = frozenset({"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema"})

#: The exact-type test of each JSON type on the value ``v``: true only for values the full
#: validator takes as that type (a ``bool`` is not an integer, ``1.0`` is left to it).
_TYPE_TESTS = {
    "string": "type(v) is str",
    "integer": "type(v) is int",
    "number": "(type(v) is int or type(v) is float)",
    "boolean": "type(v) is bool",
    "null": "v is None",
}
_BOUND_TESTS = {"minimum": "{} <= v", "maximum": "v <= {}", "exclusiveMinimum": "{} < v", "exclusiveMaximum": "v < {}"}
_LENGTH_TESTS = {"minLength": "{} <= len(v)", "maxLength": "len(v) <= {}"}
_LOWER = {"minimum": "<=", "exclusiveMinimum": "<", "minLength": "<="}
_UPPER = {"maximum": "<=", "exclusiveMaximum": "<", "maxLength": "<="}


def _chain(value: str, bounds: dict[str, str]) -> list[str]:
    """The tests of ``value`` (an expression) against ``bounds`` (keyword -> constant name):
    one lower and one upper bound as one chain, ``c1 <= v <= c2`` (``value`` computed once,
    each comparison made as in ``c1 <= v and v <= c2``), the others one by one."""
    lower = [k for k in bounds if k in _LOWER]
    upper = [k for k in bounds if k in _UPPER]
    if len(lower) == 1 and len(upper) == 1:
        lo, up = lower[0], upper[0]
        return [f"{bounds[lo]} {_LOWER[lo]} {value} {_UPPER[up]} {bounds[up]}"]
    tests = {**_BOUND_TESTS, **_LENGTH_TESTS}
    return [tests[k].format(bounds[k]) for k in bounds]


class _Constants:
    """The constants a generated check refers to, each bound to a fresh name."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__builtins__": {}, "type": type, "len": len, "str": str, "int": int,
                                          "float": float, "bool": bool, "dict": dict}

    def name(self, value: Any) -> str:
        name = f"c{len(self.namespace)}"
        self.namespace[name] = value
        return name


def _is_finite_number(value: Any) -> bool:
    return type(value) is int or (type(value) is float and math.isfinite(value))


def _scalar_test(schema: Any, constants: _Constants) -> str | None:
    """A Python expression on ``v``, true only when the full validator accepts ``v`` against
    ``schema`` unchanged; ``None`` when ``schema`` is outside the subset."""
    if type(schema) is not dict or not schema.keys() <= _SCALAR_KEYWORDS:
        return None
    types = schema.get("type", [])
    if type(types) is str:
        types = [types]
    elif type(types) is not list or not types and "type" in schema:
        return None
    if not all(type(t) is str and t in _TYPE_TESTS for t in types):
        return None
    lengths = [k for k in _LENGTH_TESTS if k in schema]
    bounds = [k for k in _BOUND_TESTS if k in schema]
    if lengths and "string" not in types or bounds and not {"integer", "number"} & set(types):
        return None  # such a keyword applies to some values of any type: not this subset
    branches = []
    for t in dict.fromkeys(types):
        parts = [_TYPE_TESTS[t]]
        if t == "string":
            if not all(type(schema[key]) is int for key in lengths):
                return None
            parts += _chain("len(v)", {key: constants.name(schema[key]) for key in lengths})
        elif t in ("integer", "number"):
            if not all(_is_finite_number(schema[key]) for key in bounds):
                return None
            parts += _chain("v", {key: constants.name(schema[key]) for key in bounds})
        branches.append(" and ".join(parts))
    test = "(" + " or ".join(f"({b})" for b in branches) + ")" if branches else "True"
    if "enum" in schema:
        members = schema["enum"]
        if type(members) is not list or not members or not all(
            type(m) is str or type(m) is int or m is None for m in members
        ):
            return None
        member_types = frozenset(type(m) for m in members)
        # ``type(v) in``: a bool equals 0 or 1 in a set, but the full validator takes no bool
        # for an integer member.
        test = f"({test} and type(v) in {constants.name(member_types)} and v in {constants.name(frozenset(members))})"
    return test


def _plain_name(key: Any) -> bool:
    # fastjsonschema writes a property name into its source between double quotes, escaping
    # only the quote: a backslash or a control character there would name another key (or
    # not compile), so such a name is left to it.
    return type(key) is str and key.isprintable() and "\\" not in key


def _default_ok(value: Any) -> bool:
    # Immutable scalars only: the full validator writes a fresh literal each time, so a
    # shared default must be one nobody can change in place.
    return type(value) in (str, int, bool) or value is None or (type(value) is float and math.isfinite(value))


def _object_source(schema: dict[str, Any], constants: _Constants, full: str) -> str | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True)
    if (
        type(properties) is not dict
        or type(required) is not list
        or not all(_plain_name(k) for k in required)
        or type(closed) is not bool
        or ("$schema" in schema and schema["$schema"] not in _DRAFT7)
    ):
        return None
    closed = not closed
    needed = set(required)
    missing = constants.name(object())
    lines = ["def check(data):", "    if type(data) is not dict:", f"        return {full}(data)"]
    if closed:
        lines.append("    n = 0")
    defaults: list[tuple[str, str]] = []
    for key, prop in properties.items():
        if not _plain_name(key):
            return None
        test = _scalar_test(prop, constants)
        if test is None:
            return None
        k = constants.name(key)
        # One lookup (``get`` with a sentinel no value can be) where ``in`` then ``[]`` took two.
        lines.append(f"    v = data.get({k}, {missing})")
        if key in needed:
            # Every test but "True" begins with one on the type (or ``v is None``), which the
            # sentinel fails: a missing key goes to the full validator with no test of its own.
            lines.append(f"    if v is {missing}: return {full}(data)" if test == "True" else f"    if not {test}: return {full}(data)")
            if closed:
                lines.append("    n += 1")
        else:
            lines.append(f"    if v is not {missing}:")
            if test != "True":
                lines.append(f"        if not {test}: return {full}(data)")
            lines.append("        n += 1" if closed else "        pass")
        if key not in needed and "default" in prop:
            if not _default_ok(prop["default"]):
                return None
            defaults.append((k, constants.name(prop["default"])))
    if closed:
        lines.append(f"    if n != len(data): return {full}(data)")
    for key in dict.fromkeys(k for k in required if k not in properties):
        lines.append(f"    if {constants.name(key)} not in data: return {full}(data)")
    # Filled only once everything is known valid, in the properties' order as the full
    # validator does: a fallback always sees the data untouched.
    for k, d in defaults:
        lines.append(f"    if {k} not in data: data[{k}] = {d}")
    lines.append("    return data")
    return "\n".join(lines) + "\n"


def flat_validator(schema: Any, full: Validator) -> Validator | None:
    """A check answering as ``full`` (the validator fastjsonschema compiled from ``schema`` with
    ``use_default=True``) does, quickly for the values it is sure of and by calling ``full``
    for any other; ``None`` when ``schema`` is outside the flat subset (see the module).

    Args:
        schema: the JSON Schema ``full`` was compiled from.
        full: that validator; called with the data untouched whenever the check is not sure.

    Returns:
        The check (one argument: the data), or ``None``.
    """
    constants = _Constants()
    f = constants.name(full)
    if type(schema) is dict and schema.get("type") == "object":
        if not schema.keys() <= _OBJECT_KEYWORDS:
            return None
        source = _object_source(schema, constants, f)
    else:
        test = _scalar_test(schema, constants)
        source = None if test is None else f"def check(v):\n    if {test}: return v\n    return {f}(v)\n"
    if source is None:
        return None
    namespace = constants.namespace
    exec(compile(source, "<flat_schema>", "exec"), namespace)  # noqa: S102 - source from fixed templates only
    check: Validator = namespace["check"]
    return check


def compile_validator(schema: Any, handlers: Mapping[str, Callable[[str], Any]]) -> Validator:
    """``fastjsonschema.compile(schema, handlers=handlers, use_default=True)`` with its patterns
    matched by RE2 (``runtime.regex_schema``: a schema's patterns come from its author, a peer
    for the daemon), and ``flat_validator``'s fast path in front when ``schema`` is flat.

    Raises:
        Whatever ``regex_schema.compile_schema`` raises for ``schema`` (the fast path is built
        only for a schema that compiled): ``ValueError`` for a pattern RE2 cannot compile.
    """
    full = compile_schema(schema, handlers, use_default=True)
    return flat_validator(schema, full) or full
