"""The Intent actor bounds how many sentences an awaited adapter works on at once.

Before: each sentence for an LLM adapter was a task of its own, all asking at once: a burst of
200 asks was 200 concurrent requests to the model (a rate-limited endpoint answers that with
429s). Now at most ``max_classifying`` ask; the others wait their turn and are all answered.
The model is a local server speaking the OpenAI API, holding each answer until released."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator

import anyio
import msgspec
import pytest

from ontoflow.actors.intent import INTENT, PLANNER, EdgeWire, IntentActor, LlmCapabilityAdapter
from ontoflow.actors.llm import LlmConfig
from ontoflow.protocols.edge import Classified, Classify
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

BODY = msgspec.json.encode({"choices": [{"message": {"content": msgspec.json.encode(
    {"primary_domain": "finance", "goal": "GET_QUOTE", "entities": {}, "confidence": 0.98}).decode()}}]})


async def test_a_burst_of_sentences_asks_the_model_a_few_at_a_time(catalogue) -> None:
    asking = {"now": 0, "most": 0}
    reached, release = anyio.Event(), anyio.Event()

    async def held() -> AsyncIterator[bytes]:
        asking["now"] += 1
        asking["most"] = max(asking["most"], asking["now"])
        if asking["now"] >= 4:
            reached.set()
        try:
            await release.wait()
            yield BODY
        finally:
            asking["now"] -= 1

    async with open_fake_openai([answer(stream=held)]) as model:
        wire = EdgeWire()
        llm = LlmConfig(base_url=model.url, model="fake", api_key_env=None)
        actor = IntentActor(wire, catalogue=lambda: catalogue, max_classifying=4,
                            adapter=functools.partial(LlmCapabilityAdapter, llm=llm))
        for ask_id in range(12):
            wire.mailbox(INTENT).put(Classify(ask_id=ask_id, text="qual o preço?"), PLANNER)
        answered: list[Classified] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.serve)
            with anyio.fail_after(30):
                await reached.wait()  # four at the model...
                while actor.classifying() != (4, 8):  # ...and eight waiting their turn
                    await anyio.lowlevel.checkpoint()
                release.set()
                while len(answered) < 12:
                    answered += [m for _, m in await wire.mailbox(PLANNER).recv_batch()]
            tg.cancel_scope.cancel()
    assert asking["most"] == 4 and len(model.requests) == 12
    assert sorted(m.ask_id for m in answered) == list(range(12))
    assert all(m.intent is not None and m.intent.goal == "GET_QUOTE" for m in answered)
