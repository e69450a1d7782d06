"""The Intent actor stops the adapter's call of a withdrawn ask (``AskWithdrawn``: its caller
went away), whether the call is at the model or still waits its turn, and answers nothing for
it; the other asks are answered as before. Before, a withdrawn ask's call went on to the end,
its retries included, and the asks queued behind it waited for it."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator

import anyio
import msgspec
import pytest

from ontoflow.actors.intent import INTENT, PLANNER, EdgeWire, IntentActor, LlmCapabilityAdapter
from ontoflow.actors.llm import LlmConfig
from ontoflow.protocols.edge import AskWithdrawn, Classified, Classify
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

BODY = msgspec.json.encode({"choices": [{"message": {"content": msgspec.json.encode(
    {"primary_domain": "finance", "goal": "GET_QUOTE", "entities": {}, "confidence": 0.98}).decode()}}]})


async def test_a_withdrawn_ask_is_no_longer_worked_on_nor_answered(catalogue) -> None:
    held = anyio.Event()

    async def first() -> AsyncIterator[bytes]:
        await held.wait()  # never set: only a withdrawal ends this call
        yield BODY

    async with open_fake_openai([answer(stream=first), answer(raw=BODY)]) as model:
        wire = EdgeWire()
        llm = LlmConfig(base_url=model.url, model="fake", api_key_env=None, timeout_s=600)
        actor = IntentActor(wire, catalogue=lambda: catalogue, max_classifying=1,
                            adapter=functools.partial(LlmCapabilityAdapter, llm=llm))
        intent = wire.mailbox(INTENT)
        intent.put(Classify(ask_id=1, text="qual o preço?"), PLANNER)  # at the model, held
        intent.put(Classify(ask_id=2, text="qual o preço?"), PLANNER)  # waits its turn behind it
        intent.put(Classify(ask_id=3, text="qual o preço?"), PLANNER)
        intent.put(AskWithdrawn(ask_id=3), PLANNER)  # withdrawn while it waits its turn
        answered: list[Classified] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.serve)
            with anyio.fail_after(30):
                while len(model.requests) < 1 or actor.classifying() != (1, 1):
                    await anyio.sleep(0.01)
                intent.put(AskWithdrawn(ask_id=1), PLANNER)  # withdrawn at the model
                while not answered:
                    answered += [m for _, m in await wire.mailbox(PLANNER).recv_batch()]
                while actor.classifying() != (0, 0):
                    await anyio.sleep(0.01)
                wire.mailbox(PLANNER).put(Classified(ask_id=-1), INTENT)  # read up to here: nothing else came
                while answered[-1].ask_id != -1:
                    answered += [m for _, m in await wire.mailbox(PLANNER).recv_batch()]
            tg.cancel_scope.cancel()
    answered.pop()
    assert [m.ask_id for m in answered] == [2] and answered[0].intent is not None
    assert len(model.requests) == 2  # ask 1 once (cut), ask 2; ask 3 never reached the model
