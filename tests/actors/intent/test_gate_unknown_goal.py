"""An adapter's answer naming a goal the catalogue does not hold, however sure, is a question
back, never a crash. The gate formatted the threshold of a domain that was not there (a
TypeError): in the daemon that crashed the Planner actor, which its supervisor restarted,
failing every sentence it held; a few such answers and the edge was down for everyone. The
adapter is any ``IntentAdapter`` (``compose_orchestrator(intent_adapter=...)``), and the gate
runs again on a session's gated intent, kept across a restart whose catalogue may differ."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import IntentAdapter, confidence_gate, understand
from ontoflow.protocols.intent import EntryRequest, IntentOutput, SessionMemory, Turn

pytestmark = pytest.mark.anyio


class Inventing(IntentAdapter):
    name = "inventing"

    def __init__(self, domain: str, goal: str) -> None:
        self._domain, self._goal = domain, goal

    async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        return IntentOutput(primary_domain=self._domain, goal=self._goal, entities={}, confidence=0.99,
                            original_query=text)


@pytest.mark.parametrize(("domain", "goal"), [("brokerage", "SELL_ALL"), ("", "GET_QUOTE"), ("finance", "SELL_ALL"),
                                              ("general", "SMALL_TALK")])
async def test_a_sure_answer_naming_a_goal_the_catalogue_lacks_is_asked_about(catalogue, domain: str, goal: str) -> None:
    request = EntryRequest(session_id="s1", input_text="sell everything I have")
    understood = await understand(request, catalogue=catalogue, adapter=Inventing(domain, goal),
                                  memory=SessionMemory(), now_ms=0)
    question = understood.clarification
    assert question is not None and understood.planned is None
    assert question.explanation.startswith("I did not recognise what you want.")
    assert question.metadata["resolution"] == "no_match"
    assert {c["goal"] for c in question.result["candidates"]} <= {g.id for _, g in catalogue.goals()}
    assert understood.memory == SessionMemory()  # nothing remembered of it


def test_a_known_goal_below_its_threshold_still_says_how_sure(catalogue) -> None:
    unsure = IntentOutput(primary_domain="finance", goal="GET_QUOTE", entities={}, confidence=0.5, original_query="x")
    question = confidence_gate(unsure, catalogue)
    assert question is not None and "confidence 0.50, needed 0.94" in question.explanation
    assert question.result["candidates"][0]["goal"] == "GET_QUOTE"
