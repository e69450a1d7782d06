"""An observation's data becomes a run's context: it is held to the bounds a submit's inputs have.

A submit with a nan input, an input key of a thousand characters or 100,000 input keys is
refused; an observation carrying the same started a run (the nan read back as ``null``, the key
logged whole in ``run_submitted``, 100,000 keys in one run's context)."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Observation

TRIGGERED = {
    "start": "m",
    "triggers": [{"kind": "file"}],
    "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "test.capability.echo"}}}},
}


def _composed(name: str) -> Any:
    composed = compose_orchestrator(address=f"inproc://red23t-{name}", serve_clients=True,
                                    trigger_workflows=[TRIGGERED])
    composed.orchestrator.registry.know([CapabilityMetadata(id="test.capability.echo")])
    return composed


@pytest.mark.parametrize(("name", "data", "reason"), [
    ("nan", {"x": float("nan")}, "not finite"),
    ("inf", {"x": {"deep": [float("-inf")]}}, "not finite"),
    ("long_key", {"k" * 1_000: 1}, "1,000 characters"),
    ("many_keys", {str(i): 1 for i in range(5_000)}, "5,000 keys"),
])
def test_an_observation_with_data_a_submit_may_not_carry_starts_no_run(name: str, data: dict[str, Any],
                                                                        reason: str) -> None:
    composed = _composed(name)
    with capture_logs() as logs:
        composed.triggers.observe(Observation(capability="cap", kind="file", id="1", data=data))
    assert composed.orchestrator.runs_in_flight == 0
    refused = [e for e in logs if e["event"] == "observation_refused"]
    assert len(refused) == 1 and reason in refused[0]["reason"]
    assert all(len(repr(e)) < 1_000 for e in logs)  # no key, no value quoted


def test_an_observation_with_data_within_the_bounds_starts_its_run() -> None:
    composed = _composed("fine")
    composed.triggers.observe(Observation(capability="cap", kind="file", id="1",
                                          data={"k" * 256: 1.5, **{str(i): i for i in range(4_000)}}))
    assert composed.orchestrator.runs_in_flight == 1
