"""A capability whose ``input_schema`` is not a valid JSON Schema is refused when it is loaded,
naming the capability and the path in the schema. Before, fastjsonschema compiled these without
a word into a validator that checked nothing (``minLength: -1``, ``multipleOf: 0``, ``format``
on a non-string) or refused every input (``anyOf: {}``)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from ontoflow import Capability, CapabilityMetadata, run_manifest
from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.runtime.errors import CapabilityLoadError

KEY = "obdc.base.lang.code"

INVALID = {
    "negative minLength": ({KEY: {"type": "string", "minLength": -1}},
                           rf"input_schema.properties\['{KEY}'\].minLength must be bigger than or equal to 0"),
    "zero multipleOf": ({"n": {"type": "number", "multipleOf": 0}}, r"input_schema.properties.n.multipleOf must be bigger than 0"),
    "anyOf a map": ({"x": {"anyOf": {}}}, r"input_schema.properties.x.anyOf must be array"),
    "required a string in a property": ({"x": {"type": "object", "required": "y"}},
                                         r"input_schema.properties.x.required must be array"),
    "a misspelt type": ({"x": {"type": "strin"}}, r"input_schema.properties.x.type must be one of array, boolean, .* or a list"),
    "a nested one": ({"a.b": {"anyOf": [{"type": "string"}, {"minimum": "x"}]}},
                     r"input_schema.properties\['a.b'\].anyOf\[1\].minimum must be number"),
}


def _class(properties: dict[str, Any], **schema: Any) -> type[Capability]:
    class Declared(Capability):
        metadata = CapabilityMetadata(id="demo.declared", input_schema={"type": "object", "properties": properties, **schema})

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            return None

    return Declared


@pytest.mark.parametrize(("properties", "pattern"), list(INVALID.values()), ids=list(INVALID))
def test_run_manifest_refuses_an_invalid_schema_naming_the_capability_and_the_path(properties: dict, pattern: str) -> None:
    doc = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.declared"}}}}}
    with pytest.raises(CapabilityDefinitionError, match=r"capability 'demo.declared': input_schema .*" + pattern):
        run_manifest(doc, [_class(properties)])


def test_a_broken_regex_is_refused_by_the_metadata_check_naming_the_path() -> None:
    # RE2 compiles every pattern first (protocols.patterns, in check_metadata), as a daemon does a peer's.
    doc = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.declared"}}}}}
    with pytest.raises(CapabilityDefinitionError, match=r"capability 'demo.declared' has invalid metadata: "
                                                        r".*input_schema.properties.x.pattern: RE2 cannot compile it"):
        run_manifest(doc, [_class({"x": {"type": "string", "pattern": "("}})])


def test_the_top_level_is_checked_too() -> None:
    with pytest.raises(CapabilityDefinitionError, match=r"input_schema.additionalProperties must be object or boolean"):
        _class({}, additionalProperties="no")._class_spec()


def test_a_loaded_file_names_the_spec_the_capability_and_the_path(tmp_path: Path) -> None:
    path = tmp_path / "caps.py"
    path.write_text(textwrap.dedent(f"""
        from ontoflow import Capability, CapabilityMetadata

        class Lang(Capability):
            metadata = CapabilityMetadata(id="demo.lang", input_schema={{
                "type": "object", "properties": {{"{KEY}": {{"type": "string", "maxLength": "two"}}}}}})

            async def execute(self, inputs, context):
                return None
    """))
    with pytest.raises(CapabilityLoadError, match=rf"'.*caps.py': capability 'demo.lang': .*properties\['{KEY}'\].maxLength must be integer"):
        load_capabilities([str(path)])


@pytest.mark.parametrize(
    "schema",
    [{"properties": {KEY: {"type": ["string", "null"], "enum": ["en", None], "default": "en"}, "flag": True}},
     {"properties": {"n": {"type": "integer"}}, "required": ["n"], "x-ontology": {"n": "acme.count"}},
     # Another draft's rules are its own: draft-04's boolean exclusiveMinimum stays accepted.
     {"$schema": "http://json-schema.org/draft-04/schema#",
      "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}}],
    ids=["types, enum, default, boolean schema", "extension keyword", "draft-04"],
)
def test_valid_schemas_still_load(schema: dict) -> None:
    cls = _class(schema.pop("properties"), **schema)
    assert cls._class_spec().validator is not None


def test_the_meta_schema_reads_patterns_as_re2_does() -> None:
    # A pattern RE2 compiles and re does not (\p{L}) is a valid schema; one re compiles and RE2
    # does not ((a)\1) is not: the grammar the pattern will be matched with decides.
    from ontoflow.actors.capability._metaschema import metaschema_problem

    letters = {"type": "object", "properties": {"a": {"type": "string", "pattern": r"\p{L}+"}}}
    assert metaschema_problem(letters) is None
    assert metaschema_problem({"type": "object", "patternProperties": {r"^\p{L}+$": {}}}) is None
    backreference = {"type": "object", "properties": {"a": {"type": "string", "pattern": r"(a)\1"}}}
    assert metaschema_problem(backreference) == "input_schema.properties.a.pattern must be a pattern RE2 compiles"
