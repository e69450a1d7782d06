"""A question the edge asked before anything ran ("which company?", "did you mean one of
these?") is let go by "cancel": before, "cancel" was read as the missing entity (a ticker
named "cancel" looked up, its run started) and the question stayed for the next line."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols.client import AskReply
from ontoflow.runtime.cli._intents import load_catalogue

pytestmark = pytest.mark.anyio

FINANCE = Path(__file__).resolve().parents[3] / "configs" / "examples" / "finance"


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue([FINANCE])[0]


async def test_cancel_lets_a_missing_entity_question_go(catalogue) -> None:
    composed = compose_orchestrator(address="inproc://edge-let-go", serve_clients=True, catalogue=catalogue)
    edge = composed.edge
    assert edge is not None
    async with anyio.create_task_group() as tg:
        await tg.start(edge.run)
        asked = await edge.ask("s1", "qual o preço?")
        assert isinstance(asked, AskReply) and asked.status == "clarification" and asked.result["missing"]
        let_go = await edge.ask("s1", "cancela, por favor")
        assert isinstance(let_go, AskReply) and let_go.status == "success" and let_go.run_id is None
        assert let_go.explanation.startswith("Cancelled") and let_go.metadata["code"] == "cancelled"
        assert let_go.intent == {}  # nothing was understood of "cancela": no ticker named so
        after = await edge.ask("s1", "Vale")  # no question pending: not read as its answer
        assert isinstance(after, AskReply) and after.intent.get("entities") != {"symbol_text": "Vale"}
        # Another session's question is untouched, and a real answer still answers.
        await edge.ask("s2", "qual o preço?")
        answered = await edge.ask("s2", "Vale")
        assert isinstance(answered, AskReply) and answered.intent["entities"] == {"symbol_text": "Vale"}
        tg.cancel_scope.cancel()


async def test_cancel_lets_the_gates_which_goal_question_go(catalogue) -> None:
    composed = compose_orchestrator(address="inproc://edge-let-go-gate", serve_clients=True, catalogue=catalogue)
    edge = composed.edge
    assert edge is not None
    async with anyio.create_task_group() as tg:
        await tg.start(edge.run)
        gated = await edge.ask("s1", "a segunda")
        assert isinstance(gated, AskReply) and gated.status == "clarification", gated
        assert gated.metadata.get("resolution") in ("low_confidence", "no_match")
        let_go = await edge.ask("s1", "never mind")
        assert isinstance(let_go, AskReply) and let_go.explanation.startswith("Cancelled")
        again = await edge.ask("s1", "1")  # no longer a pick among the gate's goals
        assert isinstance(again, AskReply) and again.intent.get("goal") != "GET_QUOTE"
        tg.cancel_scope.cancel()
