"""A context value's nesting is bounded at ``MAX_VALUE_DEPTH`` (found by harden11; the daemon
side is ``tests/integration/test_submit_depth.py``)."""

from __future__ import annotations

import msgspec

from ontoflow.actors.orchestrator._step_payload import MAX_VALUE_DEPTH, OUTPUT_TOO_LARGE, check_payload, limit_outputs, too_deep
from ontoflow.protocols.messages import Outcome


def nested(levels: int, leaf: object = 1) -> object:
    """A value of ``levels`` maps and lists, alternating, around ``leaf``."""
    value = leaf
    for n in range(levels):
        value = {"k": value} if n % 2 else [value]
    return value


def test_a_value_at_the_bound_passes_and_one_level_more_is_named_by_its_key() -> None:
    assert too_deep({"a": 1, "b": nested(MAX_VALUE_DEPTH), "c": "x"}) is None
    assert too_deep({"a": 1, "b": nested(MAX_VALUE_DEPTH + 1)}) == "b"
    assert too_deep({"a": [1, 2, {"x": nested(MAX_VALUE_DEPTH)}]}) == "a"  # depth counts from the value


def test_a_submit_of_a_too_deep_input_is_refused_naming_the_key_not_the_value() -> None:
    message = check_payload({"t.value": 1, "secret.doc": nested(5_000, "s3cret")}, 1 << 20, "input")
    assert message == f"input 'secret.doc' is nested deeper than {MAX_VALUE_DEPTH} levels"


def test_an_output_too_deep_fails_its_step_without_the_output() -> None:
    outcome = Outcome(run_id="r", step_id="s", attempt=1, event="success", outputs={"o": nested(MAX_VALUE_DEPTH + 1)})
    limited = limit_outputs(outcome, 1 << 20)
    assert (limited.event, limited.reason, limited.outputs) == ("failure", OUTPUT_TOO_LARGE, {})
    assert limited.error == f"output 'o' is nested deeper than {MAX_VALUE_DEPTH} levels"
    fine = msgspec.structs.replace(outcome, outputs={"o": nested(MAX_VALUE_DEPTH)})
    assert limit_outputs(fine, 1 << 20) is fine
