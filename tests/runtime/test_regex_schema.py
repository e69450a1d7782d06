"""A schema's patterns are matched by RE2, never by Python's backtracking ``re`` (re2_20).

The pin on fastjsonschema's internals comes first: ``runtime.regex_schema`` swaps each pattern
for a token and puts the RE2 pattern in the table the generated code looks patterns up in
(``REGEX_PATTERNS``, a global of the validator). If fastjsonschema ever stops doing that, the
first test here fails loudly (and the module refuses every schema with a pattern meanwhile).
"""

from __future__ import annotations

from typing import Any

import fastjsonschema
import pytest
from fastjsonschema import JsonSchemaDefinitionException, JsonSchemaValueException

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.flat_schema import compile_validator
from ontoflow.runtime.inputs import InputValidators
from ontoflow.protocols.patterns import compile_pattern
from ontoflow.runtime.regex_schema import _Search, compile_schema

EVIL = "^(a+)+$"
#: Python's re takes 2**60 steps to fail it (it never returns); RE2 one pass.
LONG = "a" * 59 + "!"


def test_fastjsonschema_still_looks_its_patterns_up_in_REGEX_PATTERNS_by_their_text() -> None:
    calls: list[tuple[str, str]] = []

    class Spy:
        def __init__(self, name: str) -> None:
            self.name = name

        def search(self, text: str) -> bool:
            calls.append((self.name, text))
            return True

    validate = fastjsonschema.compile({"type": "object", "properties": {"s": {"pattern": "p1"}},
                                       "patternProperties": {"p2": {}}})
    table = validate.__globals__["REGEX_PATTERNS"]
    assert set(table) == {"p1", "p2"}
    table.update(p1=Spy("p1"), p2=Spy("p2"))
    validate({"s": "abc"})
    assert calls == [("p1", "abc"), ("p2", "s")]


def _table(validate: Any) -> dict[str, Any]:
    inner = next(c.cell_contents for c in validate.__closure__ if callable(c.cell_contents))  # the wrapped validator
    return inner.__globals__["REGEX_PATTERNS"]


def test_every_pattern_is_an_re2_pattern_and_re_never_sees_it() -> None:
    validate = compile_schema({"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}},
                               "patternProperties": {"^x-": {"type": "integer"}}})
    table = _table(validate)
    assert table and all(type(p) is _Search for p in table.values())
    assert all(key.startswith("(?#re2 ") for key in table)  # re compiled tokens only


@pytest.mark.parametrize("pattern", ["^a+$", "b", "é", r"^\d{2}$", "^$", r"\bword\b", "(?i)ABC", r"^\p{Greek}+$"])
def test_the_quick_search_through_google_re2s_binding_agrees_with_its_public_search(pattern: str) -> None:
    compiled = compile_pattern(pattern, captures=False)
    quick = _Search(compiled)
    assert quick.search is not compiled.search  # the binding is there as expected: the quick path is taken
    for text in ["", "a", "aaa", "ab", "b", "xéy", "12", "123", "a word here", "abc", "αβ", "\n", "a\n"]:
        assert bool(quick.search(text)) == (compiled.search(text) is not None), (pattern, text)


def test_a_long_value_against_a_backtracking_pattern_is_refused_naming_the_pattern() -> None:
    validate = compile_schema({"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}})
    with pytest.raises(JsonSchemaValueException) as info:
        validate({"s": LONG})
    assert (info.value.message, info.value.rule, info.value.rule_definition) == ("data.s must match pattern ^(a+)+$", "pattern", EVIL)
    assert info.value.definition["pattern"] == EVIL and LONG not in str(info.value)
    assert validate({"s": "aaa"}) == {"s": "aaa"}


@pytest.mark.parametrize(("pattern", "value", "ok"), [
    ("b", "abc", True),          # unanchored: a search, as JSON Schema means
    ("^b", "abc", False),
    ("^a$", "a\n", False),       # ECMA-262's $ is the end of the text (re's took "a\n")
    (r"^\d+$", "١٢", False),     # \d is ASCII in ECMA-262 and RE2
    (r"^\p{Greek}+$", "αβ", True),
])
def test_patterns_keep_json_schemas_meaning(pattern: str, value: str, ok: bool) -> None:
    validate = compile_schema({"type": "string", "pattern": pattern})
    if ok:
        assert validate(value) == value
    else:
        with pytest.raises(JsonSchemaValueException):
            validate(value)


def test_pattern_properties_with_required_names_compile_without_re() -> None:
    # fastjsonschema searched each required name with each patternProperties key while compiling.
    closed = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}, "^x-": {}}, "additionalProperties": False}
    with pytest.raises(JsonSchemaDefinitionException, match=r"items \['a+!'\] are required but not allowed"):
        compile_schema({**closed, "required": [LONG]})
    validate = compile_schema({**closed, "required": ["aaa", "x-y"]})
    assert validate({"aaa": 1, "x-y": "z"}) == {"aaa": 1, "x-y": "z"}
    for bad in ({"aaa": "s", "x-y": 1}, {"aaa": 1, "x-y": 1, "b": 1}, {"aaa": 1}):
        with pytest.raises(JsonSchemaValueException):
            validate(bad)


@pytest.mark.parametrize("schema", [
    {"pattern": r"(a)\1"},
    {"properties": {"s": {"pattern": "(?<=a)b"}}},
    {"patternProperties": {"(?!a)": {}}},
])
def test_a_pattern_re2_cannot_compile_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="RE2 cannot compile it"):
        compile_schema(schema)


@pytest.mark.parametrize("schema", [
    # a pattern under a data keyword, reached by a $ref: re would have compiled and run it
    {"$ref": "#/properties/x/default", "properties": {"x": {"default": {"pattern": EVIL}}}},
    # a property map read as a schema: its required name searched with re while compiling
    {"$ref": "#/properties", "properties": {"required": [LONG], "additionalProperties": False,
                                            "patternProperties": {EVIL: {}}}},
])
def test_a_pattern_at_a_place_no_keyword_names_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(JsonSchemaDefinitionException, match="no schema keyword names"):
        compile_schema(schema)


def test_a_schema_without_patterns_gets_fastjsonschemas_validator_itself() -> None:
    validate = compile_schema({"type": "object", "properties": {"n": {"type": "integer", "default": 1}}})
    assert validate.__module__ != __name__ and "REGEX_PATTERNS" in validate.__globals__
    assert validate({}) == {"n": 1}
    assert compile_schema({"type": "string", "format": "date"})("2026-11-24") == "2026-11-24"  # its formats kept


def test_the_daemons_input_check_names_the_pattern_and_never_the_value() -> None:
    meta = CapabilityMetadata(id="t.cap", input_schema={"type": "object", "properties": {"t.name": {"type": "string", "pattern": EVIL}}})
    validators = InputValidators()
    with pytest.raises(ConfigError) as info:
        validators.check({"t.name": LONG}, {meta.id: meta})
    assert str(info.value) == "input 't.name' must match pattern ^(a+)+$ (as declared by t.cap)"
    validators.check({"t.name": "aa"}, {meta.id: meta})
    assert compile_validator({"type": "string", "pattern": "^a"}, {})("ab") == "ab"


def test_the_checker_matches_a_clients_literal_against_a_workers_pattern_with_re2() -> None:
    # The daemon checks a submitted document's literal params against its workers' schemas.
    from ontoflow.actors.checker._schema import literal_problem

    assert literal_problem(LONG, {"type": "string", "pattern": EVIL}) == "must match pattern ^(a+)+$"
    assert literal_problem("aa", {"type": "string", "pattern": EVIL}) is None


def test_a_remote_ref_is_refused_never_fetched_by_default() -> None:
    # The daemon's checker compiled a peer's schema with fastjsonschema's defaults: urlopen on its loop.
    with pytest.raises(JsonSchemaDefinitionException, match="remote"):
        compile_schema({"$ref": "http://127.0.0.1:9/schema.json"})
    from ontoflow.actors.checker._schema import literal_problem

    assert literal_problem("x", {"$ref": "http://127.0.0.1:9/schema.json"}) is None  # no check: it went to urlopen
