"""A flood of observations leaves room for clients' submits.

A capability perceiving faster than workers run filled every one of ``--max-runs`` with
triggered runs, and every ``ontoflow submit`` was answered ``busy`` for as long as the flood
lasted (measured: 10,000 new observations a second, each CLI submit retried 120 s and failed)."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._triggers import trigger_share
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.client import Busy, Submit, SubmitAccepted
from ontoflow.protocols.messages import Observation

WORKFLOW = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "test.capability.echo"}}}}}
TRIGGERED = {**WORKFLOW, "triggers": [{"kind": "file"}]}


@pytest.mark.parametrize(("max_runs", "share"), [(1, 1), (2, 1), (5, 4), (10, 9), (10_000, 9_000)])
def test_triggered_runs_take_nine_tenths_of_max_runs(max_runs: int, share: int) -> None:
    assert trigger_share(max_runs) == share


def test_a_client_submits_while_observations_flood_the_daemon() -> None:
    composed = compose_orchestrator(address="inproc://red23t-share", serve_clients=True, max_runs=10,
                                    trigger_workflows=[TRIGGERED])
    orch, clients = composed.orchestrator, composed.clients
    assert clients is not None and composed.triggers is not None
    orch.registry.know([CapabilityMetadata(id="test.capability.echo")])
    for n in range(100):
        composed.triggers.observe(Observation(capability="cap", kind="file", id=f"o{n}"))
    assert orch.runs_in_flight == 9
    sent: list[Any] = []
    orch.send_client = lambda identity, message: sent.append(message)  # type: ignore[method-assign]
    clients.handle(b"client", Submit(manifest=WORKFLOW))
    assert [type(m) for m in sent] == [SubmitAccepted]
    clients.handle(b"client", Submit(manifest=WORKFLOW))  # the bound itself still holds for submits
    assert [type(m) for m in sent] == [SubmitAccepted, Busy]
