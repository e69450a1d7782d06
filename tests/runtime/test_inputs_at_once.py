"""``flat_values_check`` and its use by ``CatalogInputCheck``: one test of a submit's scalar
inputs, true only when every validator accepts its value; anything else is left to them."""

from __future__ import annotations

import fastjsonschema
import pytest

from ontoflow.protocols import CapabilityMetadata
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.flat_schema import flat_values_check
from ontoflow.runtime.inputs import CatalogInputCheck, InputValidators

LABEL = {"type": "string", "minLength": 1, "maxLength": 8}
SIZE = {"type": "integer", "minimum": 0, "maximum": 100}
KIND = {"enum": ["a", "b", None]}
VALUES = ["", "ok", "far too long", 0, 1, 50, 101, -1, 1.0, True, False, None, "a", "b", [], {}, 2.5]


def _meta(cid: str, **properties: object) -> CapabilityMetadata:
    return CapabilityMetadata(id=cid, input_schema={"type": "object", "properties": properties})


def test_the_test_at_once_is_true_only_when_every_full_validator_accepts_the_value() -> None:
    pairs = [("k.label", LABEL), ("k.size", SIZE), ("k.kind", KIND), ("k.size", {"type": "number", "maximum": 60})]
    test = flat_values_check(pairs)
    assert test is not None
    full = [(key, fastjsonschema.compile(schema)) for key, schema in pairs]
    for value in VALUES:
        for key in ("k.label", "k.size", "k.kind"):
            data = {"k.label": "ok", "k.size": 5, "k.kind": "a", key: value}
            if test(data):
                for k, validate in full:
                    validate(data[k])  # raises when the test said yes wrongly


def test_a_schema_outside_the_scalar_subset_gives_no_test_at_once() -> None:
    assert flat_values_check([("k.label", LABEL), ("k.obj", {"type": "object"})]) is None
    assert flat_values_check([("k.label", {"type": "string", "pattern": "^a"})]) is None
    assert flat_values_check([])({"anything": 1}) is True  # nothing declared: nothing to check


@pytest.mark.parametrize("inputs", [{"k.size": 3, "k.obj": {"x": 1}}, {"k.obj": {"x": "no"}, "k.size": 30},
                                    {"k.size": 30, "k.obj": 5}])
def test_a_key_set_with_a_schema_not_scalar_is_checked_by_the_validators(inputs: dict) -> None:
    obj = {"type": "object", "properties": {"x": {"type": "integer"}}}
    catalog = {"c": _meta("c", **{"k.size": {"type": "integer", "minimum": 10}, "k.obj": obj})}
    validators = InputValidators()
    with pytest.raises(ConfigError) as expected:
        validators.check(inputs, catalog)
    with pytest.raises(ConfigError) as caught:
        CatalogInputCheck(catalog, validators).check(inputs)
    assert str(caught.value) == str(expected.value)


def test_a_value_the_test_is_not_sure_of_goes_to_the_validators_and_refused_values_stay_refused() -> None:
    catalog = {"c": _meta("c", **{"k.size": SIZE, "k.label": LABEL})}
    check = CatalogInputCheck(catalog, InputValidators())
    check.check({"k.size": 5, "k.label": "ok"})  # the test at once says yes
    check.check({"k.size": 5.0, "k.label": "ok"})  # 5.0: not sure, the validator takes it as an integer
    for bad in ({"k.size": 101, "k.label": "ok"}, {"k.size": 5, "k.label": ""}, {"k.size": True, "k.label": "ok"}):
        with pytest.raises(ConfigError):
            check.check(bad)
    check.check({"k.size": 5, "k.label": "ok"})  # the same key set after refusals: still accepted
