"""Input validation: one compiled JSON Schema validator per capability class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fastjsonschema

from ontoflow.actors.capability._metaschema import metaschema_problem
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.runtime.flat_schema import compile_validator
from ontoflow.runtime.inputs import violation_parts

__all__ = ["Validator", "compile_schema", "describe_violation"]

#: A compiled validator: returns the data with schema defaults filled in, or raises
#: ``fastjsonschema.JsonSchemaValueException``.
Validator = Callable[[Any], Any]

_ROOT = "data"


def _refuse_remote(uri: str) -> Any:
    # fastjsonschema would otherwise fetch a remote $ref with urlopen at compile time:
    # loading a capability must not reach the network.
    raise CapabilityDefinitionError(f"remote $ref {uri!r} is not allowed in an input_schema")


_NO_REMOTE = {scheme: _refuse_remote for scheme in ("http", "https", "ftp", "file")}


def compile_schema(capability_id: str, schema: dict[str, Any], what: str = "input_schema") -> Validator:
    """Compile ``schema`` once, with ``default`` values filling missing keys (and, for a flat
    schema, ``runtime.flat_schema``'s fast path in front, which answers exactly as it does).

    A schema without ``$schema`` (or naming draft-07) is first checked against draft-07's
    meta-schema, so a keyword with a value no validator can mean (``minLength: -1``,
    ``anyOf: {}``, ``additionalProperties: "no"``) is refused, not compiled into a validator
    that checks nothing or refuses everything.

    Args:
        capability_id: named in the error.
        schema: the capability's ``input_schema`` (or ``observation_schema``).
        what: which of them, as the error names it.

    Returns:
        The validator.

    Raises:
        CapabilityDefinitionError: when the schema is not a valid JSON Schema or does not
            compile (an unknown type, a broken regex, a remote ``$ref``); the message names
            the capability id and, for the former, the path in the schema
            (``input_schema.properties['obdc.base.lang.code'].minLength``).
    """
    problem = metaschema_problem(schema, what)
    if problem is not None:
        raise CapabilityDefinitionError(f"capability {capability_id!r}: {what} does not compile: "
                                        f"it is not a valid JSON Schema: {problem}")
    try:
        return compile_validator(schema, _NO_REMOTE)
    except Exception as exc:  # JsonSchemaDefinitionException, re.error, TypeError, ...
        raise CapabilityDefinitionError(
            f"capability {capability_id!r}: {what} does not compile: {type(exc).__name__}: {exc}"
        ) from None


def describe_violation(exc: fastjsonschema.JsonSchemaValueException, schema: Any = None) -> str:
    """Turn a validation error into a message that names the key and the rule, not the value.

    ``data.obdc.base.lang.code must be one of ['en', 'pt_BR']`` becomes
    ``input 'obdc.base.lang.code' must be one of ['en', 'pt_BR']``. fastjsonschema's messages
    quote the schema (enum members, patterns, bounds), not the offending value, but for the
    rules whose message lists the offending keys, and for a key of the value in the path
    (``runtime.inputs.violation_parts``: given the ``schema`` validated against, only its
    declared names are kept).
    """
    name = exc.name or _ROOT
    key, rule_text = violation_parts(exc, schema)
    if name == _ROOT:
        if exc.rule == "required" and isinstance(exc.rule_definition, list):
            present = exc.value if isinstance(exc.value, dict) else {}
            missing = [k for k in exc.rule_definition if k not in present]
            if len(missing) == 1:
                return f"input {missing[0]!r} is required"
            if missing:
                return "inputs " + ", ".join(repr(k) for k in missing) + " are required"
        return f"inputs {rule_text}"
    return f"input {key!r} {rule_text}"
