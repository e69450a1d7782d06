"""The Intent actor on its own (no orchestrator, no loop of its own): batches handed to it with
``deliver``, its answers read from the planner's in-memory mailbox."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.intent import PLANNER, Catalogue, EdgeWire, IntentActor, Matcher
from ontoflow.protocols.edge import Classified, Classify

pytestmark = pytest.mark.anyio


async def _answers(wire: EdgeWire) -> list[Any]:
    return [message for _, message in await wire.mailbox(PLANNER).recv_batch()]


async def test_the_matcher_answers_within_the_batch_and_is_rebuilt_when_the_catalogue_changes(catalogue) -> None:
    wire = EdgeWire()
    current = [Catalogue([catalogue.domains["building"]], catalogue.capabilities)]
    actor = IntentActor(wire, catalogue=lambda: current[0])
    actor.deliver([(PLANNER, Classify(ask_id=1, text="qual o preço da Petrobras?"))])
    (first,) = await _answers(wire)
    assert isinstance(first, Classified) and first.ask_id == 1 and first.intent is not None
    assert first.intent.goal != "GET_QUOTE" and actor.builds == 1  # finance is not in the catalogue yet
    actor.deliver([(PLANNER, Classify(ask_id=2, text="qual o preço da Petrobras?"))])
    await _answers(wire)
    assert actor.builds == 1  # the same catalogue: the same matcher
    current[0] = catalogue  # a worker announced finance
    actor.deliver([(PLANNER, Classify(ask_id=3, text="qual o preço da Petrobras?"))])
    (third,) = await _answers(wire)
    assert third.intent.goal == "GET_QUOTE" and third.intent.entities == {"symbol_text": "Petrobras"}
    assert actor.builds == 2 and isinstance(actor.understanding()[1], Matcher)


async def test_one_adapter_given_as_it_is_is_never_rebuilt(catalogue) -> None:
    wire = EdgeWire()
    fixed = Matcher(catalogue)
    actor = IntentActor(wire, catalogue=lambda: catalogue, adapter=fixed)
    actor.deliver([(PLANNER, Classify(ask_id=7, text="maiores altas do Brasil"))])
    (answer,) = await _answers(wire)
    assert answer.intent.goal == "TOP_MOVERS" and actor.understanding()[1] is fixed and actor.builds == 0
