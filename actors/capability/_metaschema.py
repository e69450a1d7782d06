"""JSON Schema draft-07's meta-schema: what a capability's ``input_schema`` must itself be.

fastjsonschema compiles only what it generates code for: ``{"minLength": -1}``,
``{"multipleOf": 0}``, ``{"anyOf": {}}`` or ``{"additionalProperties": "no"}`` compiled, and
then validated nothing or refused every input, with no word at load time. Checked against this
meta-schema first, the mistake is named with its path in the schema. The ``format`` of
``$id``/``$ref`` is left out (no network, no URI grammar needed: a remote ``$ref`` is refused
when compiling).
"""

from __future__ import annotations

import re
from typing import Any

import fastjsonschema

from ontoflow.protocols.patterns import pattern_problem

__all__ = ["DRAFT7_METASCHEMA", "metaschema_problem"]

_SCHEMA = {"$ref": "#"}
_NON_NEGATIVE = {"type": "integer", "minimum": 0}
_STRING_ARRAY = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
_SCHEMA_ARRAY = {"type": "array", "minItems": 1, "items": _SCHEMA}
_SCHEMA_MAP = {"type": "object", "additionalProperties": _SCHEMA}
_SIMPLE_TYPES = {"enum": ["array", "boolean", "integer", "null", "number", "object", "string"]}

#: The draft-07 meta-schema (http://json-schema.org/draft-07/schema), as a Python value.
DRAFT7_METASCHEMA: dict[str, Any] = {
    "type": ["object", "boolean"],
    "properties": {
        "$id": {"type": "string"},
        "$schema": {"type": "string"},
        "$ref": {"type": "string"},
        "$comment": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "readOnly": {"type": "boolean"},
        "writeOnly": {"type": "boolean"},
        "examples": {"type": "array"},
        "multipleOf": {"type": "number", "exclusiveMinimum": 0},
        "maximum": {"type": "number"},
        "exclusiveMaximum": {"type": "number"},
        "minimum": {"type": "number"},
        "exclusiveMinimum": {"type": "number"},
        "maxLength": _NON_NEGATIVE,
        "minLength": _NON_NEGATIVE,
        "pattern": {"type": "string", "format": "regex"},
        "additionalItems": _SCHEMA,
        "items": {"anyOf": [_SCHEMA, _SCHEMA_ARRAY]},
        "maxItems": _NON_NEGATIVE,
        "minItems": _NON_NEGATIVE,
        "uniqueItems": {"type": "boolean"},
        "contains": _SCHEMA,
        "maxProperties": _NON_NEGATIVE,
        "minProperties": _NON_NEGATIVE,
        "required": _STRING_ARRAY,
        "additionalProperties": _SCHEMA,
        "definitions": _SCHEMA_MAP,
        "properties": _SCHEMA_MAP,
        "patternProperties": {**_SCHEMA_MAP, "propertyNames": {"format": "regex"}},
        "dependencies": {"type": "object", "additionalProperties": {"anyOf": [_SCHEMA, _STRING_ARRAY]}},
        "propertyNames": _SCHEMA,
        "enum": {"type": "array"},
        "type": {"anyOf": [_SIMPLE_TYPES, {"type": "array", "items": _SIMPLE_TYPES, "minItems": 1, "uniqueItems": True}]},
        "format": {"type": "string"},
        "contentMediaType": {"type": "string"},
        "contentEncoding": {"type": "string"},
        "if": _SCHEMA,
        "then": _SCHEMA,
        "else": _SCHEMA,
        "allOf": _SCHEMA_ARRAY,
        "anyOf": _SCHEMA_ARRAY,
        "oneOf": _SCHEMA_ARRAY,
        "not": _SCHEMA,
    },
}


_DRAFT7 = ("", "http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#",
           "https://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema#")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_validator: Any = None


def metaschema_problem(schema: Any, what: str = "input_schema") -> str | None:
    """What makes ``schema`` an invalid draft-07 JSON Schema, with its path, or None.

    A schema whose ``$schema`` names another draft is not checked here (its own rules differ:
    draft-04's boolean ``exclusiveMinimum``); compiling it still catches what its generator
    cannot handle.

    Args:
        schema: a capability's ``input_schema`` (or ``observation_schema``).
        what: the name the path starts with.

    Returns:
        ``"<path> <rule>"``, e.g. ``input_schema.properties['obdc.base.lang.code'].minLength
        must be bigger than or equal to 0``; None when it is valid (or of another draft).
    """
    global _validator
    if isinstance(schema, dict) and schema.get("$schema", "") not in _DRAFT7:
        return None
    if _validator is None:  # compiled on first use: most processes never load a capability
        # ``format: regex`` is RE2's grammar, the one every pattern is matched with (not re's:
        # ``\p{L}`` is RE2's and not re's, ``(a)\1`` re's and not RE2's).
        _validator = fastjsonschema.compile(DRAFT7_METASCHEMA, formats={"regex": _is_re2_pattern})
    try:
        _validator(schema)
    except fastjsonschema.JsonSchemaValueException as exc:
        name = exc.name or "data"
        rule = exc.message[len(name):].strip() if exc.message.startswith(name) else exc.message
        tokens = list(exc.path or [])[1:]
        if exc.rule == "format":  # only ``regex`` here: fastjsonschema says "must be regex"
            rule = "must be a pattern RE2 compiles"
        elif exc.rule == "anyOf" and tokens[-1:] == ["type"]:  # "cannot be validated by any definition"
            rule = f"must be one of {', '.join(_SIMPLE_TYPES['enum'])}, or a list of them"
        return f"{_schema_path(schema, tokens, what)} {rule}"
    except RecursionError:
        return f"{what} is nested too deeply to check"
    return None


def _is_re2_pattern(pattern: str) -> bool:
    """Whether RE2 compiles ``pattern`` (the meta-schema's ``format: regex``)."""
    return pattern_problem(pattern) is None


def _schema_path(schema: Any, tokens: list[str], what: str) -> str:
    """The path fastjsonschema gives as dot-split ``tokens``, rebuilt against ``schema``'s own
    keys (an ontology key such as ``obdc.base.lang.code`` is one key, not four)."""
    path, node, i = what, schema, 0
    while i < len(tokens):
        if isinstance(node, list) and tokens[i].isdigit() and int(tokens[i]) < len(node):
            path, node, i = f"{path}[{tokens[i]}]", node[int(tokens[i])], i + 1
            continue
        key = next((".".join(tokens[i:j]) for j in range(len(tokens), i, -1)
                    if isinstance(node, dict) and ".".join(tokens[i:j]) in node), None)
        if key is None:  # a key fastjsonschema wrote differently (``a[0]``): the rest as given
            return path + "".join(f".{t}" for t in tokens[i:])
        path += f".{key}" if _WORD.fullmatch(key) else f"[{key!r}]"
        node, i = node[key], i + key.count(".") + 1
    return path
