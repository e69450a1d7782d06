"""The edge as actors on the kernel, with a real orchestrator and an in-process worker: a
crashed Intent actor is restarted by its supervisor while plain runs go on, a slow adapter
holds up nobody's loop, a custom (LLM) adapter is rebuilt when a worker announces a domain,
and the confidence gate's "which goal did you mean?" is answered by position through a session."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.intent import Catalogue, IntentAdapter, LlmAdapter, Matcher
from ontoflow.actors.llm import LlmClient, LlmConfig
from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import AskReply, Error
from ontoflow.protocols.intent import IntentOutput, Turn
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.cli._intents import load_catalogue
from ontoflow.runtime.transport import shared_context
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

FINANCE = Path(__file__).resolve().parents[3] / "configs" / "examples" / "finance"


@pytest.fixture(scope="module")
def finance() -> tuple[Catalogue, list[Any]]:
    catalogue, classes, _ = load_catalogue([FINANCE])
    return catalogue, classes


class _Adapter(IntentAdapter):
    """The matcher behind an adapter that waits (as a model does), and may be told to fail."""

    name = "scripted"

    def __init__(self, catalogue: Catalogue, *, crash: bool = False, hold: anyio.Event | None = None) -> None:
        self._matcher = Matcher(catalogue)
        self._crash = crash
        self._hold = hold

    async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        await anyio.lowlevel.checkpoint()
        if self._hold is not None:
            await self._hold.wait()
        if self._crash:
            raise RuntimeError("a bug in the adapter")
        return self._matcher.match(text, previous=previous)


async def _plain_run(orch: Any, classes: list[Any]) -> str:
    """Submit a one-step plan directly (no edge) and wait for its end."""
    from ontoflow.actors.orchestrator.plans import compile_plan
    from ontoflow.protocols.plan import plan_from_data

    catalog = {c.metadata.id: c.metadata for c in classes}
    plan = plan_from_data({"name": "plain", "execution_mode": "sequential", "steps": [
        {"id": "q", "capability": "finance.get_stock_price", "params": {"finance.symbol": "PETR4.SA"}}]})
    run_id = orch.submit(compile_plan(plan, catalog), {})
    return (await orch.result(run_id)).status


async def _serve(tg: anyio.abc.TaskGroup, composed: Any, classes: list[Any]) -> None:
    orch = composed.orchestrator
    await tg.start(orch.run)
    host = WorkerHost([c() for c in classes], address=orch.address, worker_id="w", context=shared_context())
    await tg.start(host.run)
    with anyio.fail_after(30):
        await orch.wait_for_workers(1)
    await tg.start(composed.edge.run)


def _compose(catalogue: Catalogue, **options: Any) -> Any:
    return compose_orchestrator(address=f"inproc://edge-actors-{uuid.uuid4().hex}", context=shared_context(),
                                serve_clients=True, catalogue=catalogue, **options)


async def test_a_crashed_intent_actor_is_restarted_and_plain_runs_go_on_meanwhile(finance) -> None:
    catalogue, classes = finance
    built: list[_Adapter] = []

    def factory(cat: Catalogue) -> _Adapter:
        built.append(_Adapter(cat, crash=not built))  # the first adapter has a bug
        return built[-1]

    composed = _compose(catalogue, intent_adapter=factory)
    async with anyio.create_task_group() as tg:
        await _serve(tg, composed, classes)
        with capture_logs() as logs, anyio.fail_after(30):
            crashed = await composed.edge.ask("s1", "qual o preço da Petrobras?")
            assert await _plain_run(composed.orchestrator, classes) == "completed"
            again = await composed.edge.ask("s1", "qual o preço da Petrobras?")
        assert isinstance(crashed, Error) and crashed.code == "internal"
        assert any(e["event"] == "actor_crashed" and e["child"] == "intent" for e in logs)
        assert any(e["event"] == "child_restarted" and e["child"] == "intent" for e in logs)
        assert isinstance(again, AskReply) and again.status == "success", again
        assert len(built) == 2  # the restart built a fresh adapter
        assert not any("Petrobras" in str(e) for e in logs)
        tg.cancel_scope.cancel()


async def test_a_slow_adapter_blocks_neither_the_orchestrator_nor_other_sessions(finance) -> None:
    catalogue, classes = finance
    hold = anyio.Event()

    class _SlowOnPetrobras(_Adapter):
        async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
            if "Petrobras" in text:  # this sentence's model call takes its time
                await hold.wait()
            return await super().classify(text, previous=previous)

    composed = _compose(catalogue, intent_adapter=lambda cat: _SlowOnPetrobras(cat))
    edge = composed.edge
    replies: list[Any] = []
    async with anyio.create_task_group() as tg:
        await _serve(tg, composed, classes)

        async def ask() -> None:
            replies.append(await edge.ask("slow", "qual o preço da Petrobras?"))

        tg.start_soon(ask)
        with anyio.fail_after(30):
            while len(edge.planner) == 0:  # the planner waits on the adapter's answer
                await anyio.sleep(0)
            # Meanwhile the orchestrator runs plans, and another session is understood and answered.
            assert await _plain_run(composed.orchestrator, classes) == "completed"
            other = await edge.ask("quick", "qual o preço da Vale?")
            assert isinstance(other, AskReply) and other.status == "success", other
            assert not replies and len(edge.planner) == 1
            hold.set()
            while not replies:
                await anyio.sleep(0)
        assert isinstance(replies[0], AskReply) and replies[0].status == "success", replies[0]
        assert replies[0].intent["entities"] == {"symbol_text": "Petrobras"}
        tg.cancel_scope.cancel()


async def test_the_gates_question_is_answered_by_position_through_a_session(finance) -> None:
    catalogue, classes = finance
    composed = _compose(catalogue)
    edge = composed.edge
    async with anyio.create_task_group() as tg:
        await _serve(tg, composed, classes)
        with anyio.fail_after(30):
            asked = await edge.ask("g1", "ações")
            assert isinstance(asked, AskReply) and asked.status == "clarification" and asked.run_id is None
            goals = [c["goal"] for c in asked.result["candidates"]]
            assert goals == ["GET_QUOTE", "TOP_MOVERS"]
            chosen = await edge.ask("g1", "a segunda")
            assert isinstance(chosen, AskReply) and chosen.intent["goal"] == "TOP_MOVERS", chosen
            assert chosen.status == "success" and chosen.run_id is not None
            assert chosen.intent["original_query"] == "ações" and chosen.intent["confidence"] == 1.0
            # By number, in another session; the first goal needs a company: asked for it.
            await edge.ask("g2", "ações")
            first = await edge.ask("g2", "1")
            assert isinstance(first, AskReply) and first.intent["goal"] == "GET_QUOTE" and first.status == "clarification"
            # A sentence that names no candidate is understood afresh.
            await edge.ask("g3", "ações")
            fresh = await edge.ask("g3", "qual o preço da Petrobras?")
            assert isinstance(fresh, AskReply) and fresh.status == "success"
            assert fresh.intent["entities"] == {"symbol_text": "Petrobras"}
            # The choice is asked once: "2" after an answered choice is a sentence of its own.
            again = await edge.ask("g1", "2")
            # (a choice carries the sentence that was gated, and a certain confidence)
            assert isinstance(again, AskReply) and again.intent.get("original_query") == "2"
            assert again.intent.get("confidence") != 1.0
        tg.cancel_scope.cancel()


WEATHER: dict[str, Any] = {
    "domain": "weather", "capabilities": ["weather.forecast"],
    "goals": [{"id": "FORECAST", "capability": "weather.forecast", "description": "the forecast",
               "intent_hints": {"keywords": ["weather", "forecast"]},
               "entities_schema": {"city_text": {"type": "string", "required": True, "param": "weather.city_text"}}}],
}
TIDES: dict[str, Any] = {
    "domain": "tides", "capabilities": ["tides.table"],
    "goals": [{"id": "TIDE_TABLE", "capability": "tides.table", "description": "the tide table",
               "intent_hints": {"keywords": ["tide", "tides"]},
               "entities_schema": {"port_text": {"type": "string", "required": True, "param": "tides.port_text"}}}],
}


def _meta(cap: str, key: str) -> CapabilityMetadata:
    return CapabilityMetadata(id=cap, input_schema={"type": "object", "properties": {key: {}}},
                              outputs=["ontoflow.domain.output"])


def _said(domain: str, goal: str, entities: dict[str, Any]) -> dict[str, Any]:
    return answer(content=msgspec.json.encode({"primary_domain": domain, "goal": goal, "entities": entities,
                                               "confidence": 0.5}).decode())


async def test_a_custom_llm_adapter_is_rebuilt_when_a_worker_announces_a_domain(monkeypatch) -> None:
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-edge")
    script = [_said("weather", "FORECAST", {"city_text": "Lisbon"}), _said("tides", "TIDE_TABLE", {"port_text": "Porto"})]
    async with open_fake_openai(script) as model:
        client = LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env="TEST_LLM_KEY"))
        composed = compose_orchestrator(address=f"inproc://edge-llm-{uuid.uuid4().hex}", serve_clients=True,
                                        expected_domains=[], intent_adapter=lambda cat: LlmAdapter(client, cat))
        orch, edge = composed.orchestrator, composed.edge
        async with anyio.create_task_group() as tg:
            await tg.start(edge.run)
            with anyio.fail_after(30):
                nothing = await edge.ask("s", "weather in Lisbon")
                assert isinstance(nothing, Error) and nothing.code == "no_domains"
                orch.pool.ready(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", domains=[WEATHER],
                                             capabilities=[_meta("weather.forecast", "weather.city_text")]), 0)
                first = await edge.ask("s", "weather in Lisbon")
                orch.pool.ready(b"w2", Ready(protocol=PROTOCOL_VERSION, worker_id="w2", domains=[TIDES],
                                             capabilities=[_meta("tides.table", "tides.port_text")]), 1)
                second = await edge.ask("t", "tides in Porto")
            tg.cancel_scope.cancel()
    # Unsure (0.5 < 0.94): the gate asks, nothing runs; what matters is which catalogue the model saw.
    assert isinstance(first, AskReply) and first.intent["goal"] == "FORECAST" and first.status == "clarification"
    assert isinstance(second, AskReply) and second.intent["goal"] == "TIDE_TABLE", second
    assert edge.intent.builds == 2
    prompts = [r["messages"][0]["content"] for r in model.requests]
    assert "FORECAST" in prompts[0] and "TIDE_TABLE" not in prompts[0]
    assert "FORECAST" in prompts[1] and "TIDE_TABLE" in prompts[1]
    goals = model.requests[1]["response_format"]["json_schema"]["schema"]["properties"]["goal"]["enum"]
    assert "TIDE_TABLE" in goals


class _Fixed(IntentAdapter):
    """A domain's own adapter that always says the same (as a model of that domain might)."""

    name = "finance-own"

    def __init__(self, catalogue: Catalogue) -> None:
        self.domains = sorted(catalogue.domains)

    async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        await anyio.lowlevel.checkpoint()
        return IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=0.42,
                            entities={"symbol_text": "Vale"}, original_query=text)


async def test_an_adapter_chosen_per_domain_has_the_last_word_for_its_domain_only() -> None:
    building = FINANCE.parent / "building_domain"
    catalogue, _, _ = load_catalogue([FINANCE, building])
    built: list[_Fixed] = []

    def finance_own(cat: Catalogue) -> _Fixed:
        built.append(_Fixed(cat))
        return built[-1]

    composed = _compose(catalogue, intent_adapter={"finance": finance_own})
    async with anyio.create_task_group() as tg:
        await tg.start(composed.edge.run)
        with anyio.fail_after(30):
            quote = await composed.edge.ask("p1", "qual o preço da Petrobras?")
            pipes = await composed.edge.ask("p2", "list the pipes")
        tg.cancel_scope.cancel()
    # The matcher read "finance": the domain's own adapter answered (and the gate asked, 0.42).
    assert isinstance(quote, AskReply) and quote.intent["confidence"] == 0.42 and quote.status == "clarification"
    assert [d.domains for d in built] == [["finance"]]  # built over its domain alone
    # Another domain: the matcher's answer stands.
    assert isinstance(pipes, AskReply) and pipes.intent["primary_domain"] == "building"
    assert pipes.intent["confidence"] != 0.42


async def test_an_edge_that_crashes_too_often_is_down_but_the_orchestrator_serves_on(finance) -> None:
    from ontoflow.actors.orchestrator import compose_edge

    catalogue, classes = finance
    composed = _compose(catalogue)
    edge = compose_edge(composed.orchestrator, composed.clients, catalogue,
                        adapter=lambda cat: _Adapter(cat, crash=True), max_restarts=1, within_s=60)
    async with anyio.create_task_group() as tg:
        await _serve(tg, composed, classes)
        await tg.start(edge.run)
        with capture_logs() as logs, anyio.fail_after(30):
            replies = [await edge.ask(f"c{i}", "qual o preço da Petrobras?") for i in range(3)]
            assert await _plain_run(composed.orchestrator, classes) == "completed"
        assert all(isinstance(r, Error) and r.code == "internal" for r in replies), replies
        assert [e["event"] for e in logs].count("actor_crashed") == 2  # the second crash is one too many
        assert any(e["event"] == "edge_down" for e in logs)
        tg.cancel_scope.cancel()


async def test_a_run_that_suspends_before_its_turn_waits_is_answered_with_its_question(finance) -> None:
    """The race a loaded daemon hit: the submit awaits its commit, and meanwhile the run's first
    step asks which Nordea; the turn must answer with that question, not wait for an event that
    already came."""
    catalogue, classes = finance
    composed = _compose(catalogue)
    orch = composed.orchestrator
    submit = orch.asubmit

    async def slow_submit(*args: Any, **kwargs: Any) -> str:  # returns only once the run asks
        run_id = await submit(*args, **kwargs)
        while not orch.questions(run_id):
            await anyio.sleep(0)
        return run_id

    orch.asubmit = slow_submit
    async with anyio.create_task_group() as tg:
        await _serve(tg, composed, classes)
        with anyio.fail_after(30):
            asked = await composed.edge.ask("s1", "what is the price of Nordea?")
        assert isinstance(asked, AskReply) and asked.status == "clarification", asked
        assert "NDA-FI.HE" in str(asked.result) + asked.explanation
        tg.cancel_scope.cancel()
