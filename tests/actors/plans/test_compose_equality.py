"""A follow-up's ``enabled_if`` compares as JSON does: ``true`` is not ``1``."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.plans._compose import condition_holds


@pytest.mark.parametrize(
    ("value", "expected", "holds"),
    [
        (True, True, True),
        (1, True, False),        # before: True == 1 enabled the follow-up
        (0, False, False),
        (1.0, 1, True),          # one JSON number
        ([1, True], [1, True], True),
        ([True], [1], False),
        ({"a": False}, {"a": 0}, False),
        ("true", True, False),
    ],
)
def test_equals_and_not_equals(value, expected, holds: bool) -> None:
    params = {"notify": value}
    assert condition_holds({"path": "parameters.notify", "equals": expected}, params, {}, {}) is holds
    assert condition_holds({"path": "parameters.notify", "not_equals": expected}, params, {}, {}) is not holds
