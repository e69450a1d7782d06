"""The daemon's edge without sockets: wiring, refused sentences, questions asked before anything
runs, and session memory kept per session and bounded (the runs themselves are tested with a
real daemon and worker in ``tests/integration/test_edge_daemon.py``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.actors.intent import MemoryLimits
from ontoflow.actors.orchestrator import compose_edge, compose_orchestrator
from ontoflow.protocols.client import Ask, AskReply, Error
from ontoflow.runtime.cli._intents import load_catalogue

pytestmark = pytest.mark.anyio

FINANCE = Path(__file__).resolve().parents[3] / "configs" / "examples" / "finance"


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue([FINANCE])[0]


def test_the_edge_is_wired_to_the_client_service_by_the_composition(catalogue) -> None:
    composed = compose_orchestrator(address="inproc://edge-wired", serve_clients=True, catalogue=catalogue)
    assert composed.edge is not None and composed.clients is not None
    assert composed.clients.ask_handler == composed.edge.handle
    plain = compose_orchestrator(address="inproc://edge-none", serve_clients=True)
    assert plain.edge is None and plain.clients is not None and plain.clients.ask_handler is None
    with pytest.raises(ValueError):
        compose_orchestrator(address="inproc://edge-bad", catalogue=catalogue)


def test_the_edge_observes_run_ends_only_while_a_turn_waits_on_a_run(catalogue) -> None:
    # Its observer is added by a turn that waits on a run it started, and removed after: the
    # runs the edge never started end without calling it (tests/integration/test_edge_suspend.py
    # and test_edge_daemon.py run turns that wait).
    composed = compose_orchestrator(address="inproc://edge-observer", serve_clients=True, catalogue=catalogue)
    assert composed.clients is not None and composed.edge is not None
    assert composed.orchestrator.on_run_ended == [composed.clients.run_ended]


async def test_a_refused_sentence_says_why_and_nothing_is_remembered(catalogue) -> None:
    composed = compose_orchestrator(address="inproc://edge-refused", serve_clients=True, catalogue=catalogue)
    edge = composed.edge
    assert edge is not None
    reply = await edge.ask("bad session!", "qual o preço?")
    assert isinstance(reply, AskReply) and reply.status == "failure" and reply.metadata["code"] == "invalid"
    assert "session_id" in reply.explanation and reply.run_id is None


async def test_memory_is_per_session_and_the_oldest_session_is_forgotten(catalogue) -> None:
    composed = compose_orchestrator(address="inproc://edge-memory", serve_clients=True, catalogue=catalogue)
    assert composed.clients is not None
    edge = compose_edge(composed.orchestrator, composed.clients, catalogue, limits=MemoryLimits(max_sessions=2))
    async with anyio.create_task_group() as tg:  # the edge's actors serve its asks
        await tg.start(edge.run)
        for session in ("s1", "s2", "s3"):  # each asked which company: the next line answers it
            asked = await edge.ask(session, "qual o preço?")
            assert isinstance(asked, AskReply) and asked.status == "clarification" and asked.run_id is None
        # s3 remembers its question: "Vale" is read as its answer (no worker here: the plan cannot run).
        answered = await edge.ask("s3", "Vale")
        assert isinstance(answered, AskReply)
        assert answered.intent["goal"] == "GET_QUOTE" and answered.intent["entities"] == {"symbol_text": "Vale"}
        assert answered.metadata.get("code") == "unavailable"
        # s1 was the oldest of three with room for two: "Vale" alone means nothing there.
        forgotten = await edge.ask("s1", "Vale")
        assert isinstance(forgotten, AskReply) and forgotten.intent.get("entities") != {"symbol_text": "Vale"}
        tg.cancel_scope.cancel()


async def test_empty_huge_and_control_character_sentences_are_answered_never_echoed(catalogue) -> None:
    composed = compose_orchestrator(address="inproc://edge-sentences", serve_clients=True, catalogue=catalogue)
    edge = composed.edge
    assert edge is not None
    async with anyio.create_task_group() as tg:
        await tg.start(edge.run)
        for text, code in (("   \t\n", "invalid"), ("x" * 2001, "invalid")):
            refused = await edge.ask("s1", text)
            assert isinstance(refused, AskReply) and refused.metadata["code"] == code and "xxx" not in refused.explanation
        for text in ("\x00\x1b[31m\u202e", "😀" * 500, "preço da Vale\x00"):
            answered = await edge.ask("s2", text)
            assert isinstance(answered, AskReply) and answered.status in ("clarification", "failure")
            assert "\x1b" not in answered.explanation and "\x00" not in answered.explanation
        tg.cancel_scope.cancel()


class _Sink:
    """Where the ROUTER would be: keeps the client replies."""

    def __init__(self) -> None:
        self.client: list = []

    def send_many(self, items) -> None:
        pass

    def send_client(self, identity: bytes, message) -> None:
        self.client.append(message)

    def send_clients(self, items) -> None:
        self.client += [message for _, message in items]


async def test_an_ask_before_the_edge_is_up_is_unavailable_and_after_it_stopped_shutting_down(catalogue) -> None:
    # Before: the daemon said "listening on" before its edge ran, and an Ask in between was
    # refused ``shutting_down`` (a client reads: go away), not ``unavailable`` (retry).
    composed = compose_orchestrator(address="inproc://edge-not-up", serve_clients=True, catalogue=catalogue)
    edge, sink = composed.edge, _Sink()
    assert edge is not None
    composed.orchestrator.outbox.attach(sink)
    edge.handle(b"c1", Ask(session_id="s1", text="qual o preço?"))
    async with anyio.create_task_group() as tg:
        await tg.start(edge.run)
        tg.cancel_scope.cancel()
    edge.handle(b"c1", Ask(session_id="s1", text="qual o preço?"))
    composed.orchestrator.outbox.flush()
    assert [(type(m), m.code) for m in sink.client] == [(Error, "unavailable"), (Error, "shutting_down")]
