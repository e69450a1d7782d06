"""A worker session ends on the orchestrator's silence only at the second look: after its event
loop stalled (a step's import on a loaded machine), the first tick may run before the
heartbeats queued on the socket are read. It ended the session then, and the orchestrator
declared the worker lost and dispatched its steps again (a model asked twice)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ontoflow.actors.worker._session import Session


def _session() -> tuple[Session, list[Any]]:
    sent: list[Any] = []
    # A stand-in for the host: on_tick reads its settings and sends heartbeats, nothing more.
    host = SimpleNamespace(heartbeat_s=0.1, liveness=3, worker_id="w1", session_token="tok",
                           send=lambda identity, message: sent.append(message))
    session = Session(host, 1)  # type: ignore[arg-type]
    session.welcomed = True
    return session, sent


def test_one_silent_tick_does_not_end_the_session_when_the_queue_then_speaks() -> None:
    session, _ = _session()
    session.on_tick(1_000)  # 1 s silent against a 300 ms window: the first look
    assert not session.over
    session.last_heard_ms = 1_000  # the queued heartbeats, read after the tick
    session.on_tick(1_050)
    assert not session.over


def test_two_silent_ticks_with_nothing_heard_between_end_it() -> None:
    session, _ = _session()
    session.on_tick(1_000)
    session.on_tick(1_050)
    assert session.over


def test_a_silence_after_hearing_again_needs_its_own_two_looks() -> None:
    session, _ = _session()
    session.on_tick(1_000)
    session.last_heard_ms = 1_000
    session.on_tick(2_000)  # silent again since 1 000: a first look at this silence
    assert not session.over
    session.on_tick(2_050)
    assert session.over
