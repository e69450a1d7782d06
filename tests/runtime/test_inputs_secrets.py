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
