"""The flat-schema fast path answers exactly as fastjsonschema's full validator does.

Differential: for generated schemas of the flat subset and generated data (valid, invalid,
edge types: bool for int, 1.0, NaN, big ints, Decimal, subclasses of str/int/dict), the
checked value returned (and whether it is the object given, defaults filled in place) or the
exception raised (type, message, name, rule) is the same as the full validator's.
"""

from __future__ import annotations

import copy
import math
from decimal import Decimal
from typing import Any

import fastjsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ontoflow.actors.capability._schema import compile_schema
from ontoflow.runtime.flat_schema import compile_validator, flat_validator
from ontoflow.runtime.inputs import InputValidators


class Text(str):
    pass


class Number(int):
    pass


class Mapping_(dict):
    pass


NAMES = ["a", "b", "bench.size", "obdc.base.lang.code", 'q"uote', "sp ace", "é"]
TYPES = ["string", "integer", "number", "boolean", "null"]
SCALARS = st.sampled_from([
    True, False, 0, 1, -1, 2, 7, 64, 10**30, -(10**30), 0.0, -0.0, 1.0, 2.5, -3.5, 1e300,
    math.nan, math.inf, -math.inf, "", "x", "en", "pt_BR", "é" * 9, "1", None,
    Decimal("1"), Decimal("2.5"), Text("x"), Text(""), Number(1), Number(7),
])
VALUES = st.one_of(SCALARS, st.integers(), st.floats(), st.text(max_size=10), st.just([]), st.just({}),
                   st.just(["x"]), st.just({"a": 1}))
BOUNDS = st.one_of(st.integers(-5, 70), st.sampled_from([0.5, -2.5, 1e10, 10**30]))


@st.composite
def scalar_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    types = draw(st.lists(st.sampled_from(TYPES), min_size=0, max_size=3, unique=True))
    if types:
        schema["type"] = types[0] if len(types) == 1 and draw(st.booleans()) else types
    if "string" in types:
        for key in ("minLength", "maxLength"):
            if draw(st.booleans()):
                schema[key] = draw(st.integers(0, 12))
    if {"integer", "number"} & set(types):
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if draw(st.integers(0, 2)) == 0:
                schema[key] = draw(BOUNDS)
    if draw(st.integers(0, 3)) == 0:
        schema["enum"] = draw(st.lists(st.sampled_from(["x", "en", "pt_BR", "", 0, 1, 7, 10**30, None]),
                                       min_size=1, max_size=4, unique=True))
    if draw(st.integers(0, 2)) == 0:
        schema["default"] = draw(st.sampled_from(["en", "", 0, 3, 10**30, 1.5, -0.0, True, False, None]))
    if draw(st.integers(0, 4)) == 0:
        schema["description"] = "a property"
    return schema


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))
    schema: dict[str, Any] = {"type": "object", "properties": {n: draw(scalar_schemas()) for n in names}}
    if draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(NAMES + ["undeclared"]), max_size=3, unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0:
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    return schema


@st.composite
def object_data(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.one_of(VALUES, st.just(Mapping_(a="x"))))
    keys = draw(st.lists(st.sampled_from(NAMES + ["undeclared", "extra"]), max_size=6, unique=True))
    data = {}
    for key in keys:
        prop = schema["properties"].get(key, {})
        # Mostly values of the property's own shape, so that many cases are valid.
        if draw(st.integers(0, 2)) and "enum" in prop:
            data[key] = draw(st.sampled_from(prop["enum"]))
        elif draw(st.integers(0, 2)) and prop.get("type") == "string":
            data[key] = draw(st.text(max_size=14))
        elif draw(st.integers(0, 2)) and prop.get("type") == "integer":
            data[key] = draw(st.integers(-10, 80))
        else:
            data[key] = draw(VALUES)
    return data


def _outcome(validate: Any, data: Any) -> tuple[Any, ...]:
    given_data = copy.deepcopy(data)
    try:
        result = validate(given_data)
    except fastjsonschema.JsonSchemaValueException as exc:
        return ("raised", type(exc), exc.message, exc.name, exc.rule, repr(given_data))
    except Exception as exc:  # none expected; if the full validator raises one, the same one
        return ("raised", type(exc), str(exc), repr(given_data))
    return ("returned", repr(result), type(result), result is given_data, repr(given_data))


def _same(schema: Any, data: Any) -> None:
    try:
        full = fastjsonschema.compile(schema, use_default=True)
    except Exception:
        assume(False)
        raise
    fast = flat_validator(schema, full)
    assert fast is not None, schema
    assert _outcome(fast, data) == _outcome(full, data)


# make test draws 400 and 300 examples (each compiles a fastjsonschema validator, the cost):
# enough to catch a dropped closed-object check or enum type guard in every trial run; make soak
# draws the 1,500 and 1,000 of before.
def _object_case(data: st.DataObject) -> None:
    schema = data.draw(object_schemas())
    _same(schema, data.draw(object_data(schema)))


def _scalar_case(schema: dict[str, Any], value: Any) -> None:
    _same(schema, value)


def _examples(n: int):
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


test_object_schema_fast_path_answers_as_the_full_validator = _examples(400)(given(st.data())(_object_case))
test_scalar_schema_fast_path_answers_as_the_full_validator = _examples(300)(given(scalar_schemas(), VALUES)(_scalar_case))
test_object_schema_fast_path_answers_as_the_full_validator_soak = pytest.mark.soak(
    _examples(1500)(given(st.data())(_object_case)))
test_scalar_schema_fast_path_answers_as_the_full_validator_soak = pytest.mark.soak(
    _examples(1000)(given(scalar_schemas(), VALUES)(_scalar_case)))


def test_valid_data_is_answered_without_the_full_validator() -> None:
    """The fast path answers valid data itself, defaults filled in order, same object."""
    schema = {"type": "object", "required": ["a"], "additionalProperties": False,
              "properties": {"a": {"type": "string", "minLength": 1}, "b": {"type": "integer", "default": 3},
                             "c": {"type": "boolean", "default": False}}}
    calls: list[Any] = []
    fast = flat_validator(schema, calls.append)
    assert fast is not None
    data = {"c": True, "a": "x"}
    assert fast(data) is data
    assert list(data.items()) == [("c", True), ("a", "x"), ("b", 3)]
    assert calls == []
    for unsure in ({"a": Text("x")}, {"a": "x", "b": True}, {"a": "x", "b": 3.0}, {"a": ""}, {"b": 1},
                   {"a": "x", "z": 1}, Mapping_(a="x")):
        snapshot = copy.copy(unsure)
        fast(unsure)
        assert calls[-1] is unsure and unsure == snapshot  # handed over untouched


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^a"},
    {"type": "string", "format": "email"},
    {"type": "integer", "multipleOf": 2},
    {"type": "object", "properties": {"a": {"type": "object"}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}, "definitions": {"x": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"a": {"type": "string", "default": ["x"]}}},
    {"type": "object", "properties": {"a": {"type": "number", "default": math.nan}}},
    {"type": "object", "properties": {"a\\b": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1},
    {"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"},
    {"type": "string", "minimum": 1},
    {"type": "integer", "minLength": 1},
    {"type": "number", "minimum": math.inf},
    {"enum": [1.5]},
    {"enum": [True]},
    {"enum": [["x"]]},
    {"const": "x"},
    {"anyOf": [{"type": "string"}]},
])
def test_a_schema_outside_the_subset_gets_no_fast_path(schema: dict[str, Any]) -> None:
    full = fastjsonschema.compile(schema, use_default=True)
    assert flat_validator(schema, full) is None
    assert compile_validator(schema, {}) is not None


def test_the_worker_and_the_daemon_both_compile_through_the_fast_path() -> None:
    flat = {"type": "object", "properties": {"a": {"type": "string"}}}
    worker = compile_schema("cap.x", flat)
    daemon = InputValidators().validator("cap.x", "a", {"type": "string"})
    assert worker is not None and daemon is not None
    assert worker.__code__.co_filename == daemon.__code__.co_filename == "<flat_schema>"
    with pytest.raises(fastjsonschema.JsonSchemaValueException, match="data.a must be string"):
        worker({"a": 1})
