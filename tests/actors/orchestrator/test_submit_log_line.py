"""The line a submit logs stays small whatever the inputs: their keys are listed up to a bound.

A ``Submit`` may carry 4,096 input keys of 256 characters each; every key on the
``run_submitted`` line made a line of about 1 MB per submit (red20d).
"""

from __future__ import annotations

from structlog.testing import capture_logs

from ontoflow.actors.orchestrator import compose_orchestrator

from tests.actors.orchestrator.parts import one_step


def test_a_submit_of_thousands_of_keys_logs_a_few_of_them_and_how_many() -> None:
    orch = compose_orchestrator(address="inproc://submit-log-line").orchestrator
    inputs = {f"k{i:04d}." + "x" * 200: i for i in range(4_096)}
    with capture_logs() as logs:
        orch.submit(one_step(), inputs)
    [line] = [entry for entry in logs if entry["event"] == "run_submitted"]
    assert line["input_key_count"] == 4_096
    assert line["input_keys"] == sorted(inputs)[:16]


def test_a_submit_of_a_few_keys_logs_them_all() -> None:
    orch = compose_orchestrator(address="inproc://submit-log-line-few").orchestrator
    with capture_logs() as logs:
        orch.submit(one_step(), {"b.key": 1, "a.key": 2})
    [line] = [entry for entry in logs if entry["event"] == "run_submitted"]
    assert line["input_keys"] == ["a.key", "b.key"] and line["input_key_count"] == 2
