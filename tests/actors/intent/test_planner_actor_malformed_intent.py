"""An adapter's answer that is not the ``IntentOutput`` it claims is refused, never a crash.

Before: an ``IntentAdapter`` (any, given to ``compose_orchestrator``) builds its answer in code,
and nothing checked it: a confidence of ``"high"`` raised a TypeError in the gate, entities
given as a list one in the resolver; the Planner actor crashed (its supervisor restarted it,
failing every sentence it held). Now the ask is answered ``adapter_failed``, the actor goes on."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.intent import EdgeWire, PlannerActor
from ontoflow.actors.intent._edge_wire import ENTRY
from ontoflow.actors.intent._intent_actor import INTENT
from ontoflow.protocols.edge import Classified, PlanAnswer, PlanAsk
from ontoflow.protocols.intent import EntryRequest, IntentOutput


class _Book:
    """The least session book: nothing remembered, nothing asked."""

    def turns(self, sid: str) -> Any: return None
    def asked(self, sid: str) -> Any: return None
    def remember(self, sid: str, turns: Any) -> None: pass
    def question(self, sid: str, run_id: str, answer_steps: Any) -> None: pass
    def forget_question(self, sid: str) -> None: pass
    def gated(self, sid: str) -> Any: return None
    def gate(self, sid: str, intent: Any) -> None: pass
    def conversation(self, key: str, sid: str) -> None: pass


def _intent(**fields: Any) -> IntentOutput:
    values = {"primary_domain": "finance", "goal": "GET_QUOTE", "confidence": 0.99,
              "entities": {"symbol_text": "Petrobras"}, "original_query": "preço da Petrobras", **fields}
    return IntentOutput(**values)


@pytest.mark.parametrize("fields", [{"confidence": "high"}, {"confidence": None}, {"entities": ["Petrobras"]},
                                    {"goal": 7}, {"alternatives": [{"domain": "finance"}]}])
def test_a_malformed_answer_is_refused_and_the_next_one_planned(catalogue, fields: dict[str, Any]) -> None:
    wire = EdgeWire()
    answers: list[Any] = []
    wire.route(ENTRY, lambda sender, message: answers.append(message))
    planner = PlannerActor(wire, sessions=_Book(), catalogue=lambda: catalogue)
    request = EntryRequest(session_id="s1", input_text="preço da Petrobras")
    planner.deliver([(ENTRY, PlanAsk(ask_id=1, request=request)), (ENTRY, PlanAsk(ask_id=2, request=request))])
    planner.deliver([(INTENT, Classified(ask_id=1, intent=_intent(**fields), adapter="custom")),
                     (INTENT, Classified(ask_id=2, intent=_intent(), adapter="custom"))])
    first, second = (a for a in answers if isinstance(a, PlanAnswer))
    assert first.code == "adapter_failed" and "custom" in first.rejected and "Petrobras" not in first.rejected
    assert second.plan is not None and len(planner) == 0
