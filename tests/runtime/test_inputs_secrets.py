"""No parameter value in an error message: the keys of a map value are part of the value.

fastjsonschema's message for ``additionalProperties: false`` quotes the offending keys
(``must not contain {'SECRET'} properties``), and both the submit-time check
(``runtime/inputs.py``) and the capability base (``actors/capability/_schema.py``
``describe_violation``) pass its text on. Found with ``ontoflow run ... --input
'p.obj={"SECRET99X": 1}'``: ``input 'p.obj' must not contain {'SECRET99X'} properties``.

Both now word those rules from the schema (``runtime.inputs.violation_text``): ``must not
contain properties its schema does not declare``.
"""

from __future__ import annotations

import fastjsonschema
import pytest

from ontoflow.actors.capability._schema import describe_violation
from ontoflow.protocols import CapabilityMetadata
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.inputs import check_inputs

SCHEMA = {"type": "object", "properties": {"inner": {"type": "string"}}, "additionalProperties": False}
CATALOG = {"probe.s": CapabilityMetadata(id="probe.s", events=["success"],
                                         input_schema={"type": "object", "properties": {"p.obj": SCHEMA}})}


def test_the_submit_check_does_not_quote_the_keys_of_a_map_value() -> None:
    with pytest.raises(ConfigError) as caught:
        check_inputs({"p.obj": {"SECRET99X": 1}}, CATALOG)
    assert "p.obj" in str(caught.value)
    assert "SECRET99X" not in str(caught.value)


def test_the_capability_base_does_not_quote_the_keys_of_a_map_value() -> None:
    """``describe_violation``'s text (the base then scrubs it of the values it was handed,
    which may or may not catch a key; the submit-time check above has no such scrub)."""
    validate = fastjsonschema.compile({"type": "object", "properties": {"p.obj": SCHEMA}})
    with pytest.raises(fastjsonschema.JsonSchemaValueException) as caught:
        validate({"p.obj": {"SECRET99X": 1}})
    text = describe_violation(caught.value)
    assert "p.obj" in text
    assert "SECRET99X" not in text


MAP_SCHEMA = {"type": "object", "properties": {"p.obj": {"type": "object", "additionalProperties": {"type": "string"}},
                                               "p.list": {"type": "array", "items": {"type": "object",
                                                          "properties": {"a.b": {"type": "integer"}}}}}}


def test_a_key_of_a_map_value_in_the_path_is_not_quoted() -> None:
    """A map checked by ``additionalProperties: {schema}`` puts the offending key in the path
    fastjsonschema names (``data.p.obj.SECRET99X must be string``): declared names and indexes
    stay, the value's own keys show as ``<key>``."""
    validate = fastjsonschema.compile(MAP_SCHEMA)
    for data, shown in [({"p.obj": {"SECRET99X": 1}}, "input 'p.obj.<key>' must be string"),
                        ({"p.list": [{"a.b": "x"}]}, "input 'p.list[0].a.b' must be integer")]:
        with pytest.raises(fastjsonschema.JsonSchemaValueException) as caught:
            validate(data)
        assert describe_violation(caught.value, MAP_SCHEMA) == shown
    catalog = {"probe.m": CapabilityMetadata(id="probe.m", events=["success"], input_schema=MAP_SCHEMA)}
    with pytest.raises(ConfigError) as refused:
        check_inputs({"p.obj": {"SECRET99X": 1}}, catalog)
    assert "SECRET99X" not in str(refused.value) and "p.obj" in str(refused.value)
