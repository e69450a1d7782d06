"""The one composition function: the services are wired to the orchestrator here, not by themselves."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._queries import Waiters
from ontoflow.protocols.errors import ManifestError

TRIGGERED = {
    "start": "m",
    "triggers": [{"kind": "file"}],
    "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "test.capability.echo"}}}},
}


def test_without_clients_only_the_orchestrator_is_made() -> None:
    composed = compose_orchestrator(address="inproc://compose-plain")
    assert composed.clients is None and composed.triggers is None
    assert composed.orchestrator.client_handler is None and composed.orchestrator.on_run_ended == []


def test_the_services_are_wired_in_by_the_composition() -> None:
    composed = compose_orchestrator(address="inproc://compose-all", serve_clients=True, max_runs=7,
                                    trigger_workflows=[TRIGGERED])
    orch, clients = composed.orchestrator, composed.clients
    assert clients is not None and composed.triggers is not None and clients.max_runs == 7
    assert orch.client_handler == clients.handle
    assert orch.on_run_ended == [clients.run_ended] and orch.on_progress == []  # no Watch held yet
    assert orch.on_observation == [composed.triggers.observe]


def test_trigger_workflows_need_clients_and_must_declare_triggers() -> None:
    with pytest.raises(ValueError):
        compose_orchestrator(address="inproc://compose-bad", trigger_workflows=[TRIGGERED])
    untriggered = {k: v for k, v in TRIGGERED.items() if k != "triggers"}
    with pytest.raises(ManifestError):
        compose_orchestrator(address="inproc://compose-bad", serve_clients=True, trigger_workflows=[untriggered])


def test_the_watchers_hook_is_in_the_run_table_only_while_a_watch_is_held() -> None:
    waiters = Waiters()
    composed = compose_orchestrator(address="inproc://compose-watch", serve_clients=True, waiters=waiters)
    orch, clients = composed.orchestrator, composed.clients
    assert clients is not None and orch.on_progress == []
    assert waiters.hold(b"c1", "r1", "status", 0) is True and orch.on_progress == []
    assert waiters.hold(b"c1", "r1", "watch", 0) is True and waiters.hold(b"c2", "r1", "watch", 0) is True
    assert orch.on_progress == [clients.progress]  # once, however many watch
    assert waiters.ended("r1") == [b"c1", b"c2"] and orch.on_progress == []
    assert waiters.hold(b"c1", "r2", "watch", 5) is True and orch.on_progress == [clients.progress]
    assert waiters.expire(5 + waiters.lease_ms) and orch.on_progress == []


def test_a_watchers_hook_put_in_by_hand_is_not_added_twice() -> None:
    """A caller that appended the client service's hook itself (the wiring before it came and
    went with the Watches) gets each step's progress once, not twice."""
    waiters = Waiters()
    composed = compose_orchestrator(address="inproc://compose-watch-twice", serve_clients=True, waiters=waiters)
    orch, clients = composed.orchestrator, composed.clients
    assert clients is not None
    orch.on_progress.append(clients.progress)
    assert waiters.hold(b"c1", "r1", "watch", 0) is True
    assert orch.on_progress == [clients.progress]
