"""The seeds' own examples, run through the public face as a user would write them.

Each test takes a seed's example as the seed writes it (seed 000's metadata, seed 002's
manifest shape, seed 004's composition metadata) and runs it with ``ontoflow.arun_manifest``:
an orchestrator and a worker host over ``inproc://`` in this process.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ontoflow import Capability, CapabilityMetadata, Result, TransientError, arun_manifest
from ontoflow.actors.errors import CapabilityDefinitionError, CapabilityInitError
from ontoflow.actors.orchestrator import AnswerRefused
from ontoflow.protocols import Composition, ManifestError

pytestmark = pytest.mark.anyio

RAN: list[str] = []


class ListMaterials(Capability):
    metadata = CapabilityMetadata(
        id="seed.capability.base.list_materials", outputs=["infobim.materials"], timeout_ms=5_000
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        RAN.append(self.metadata.id)
        return Result(outputs={"infobim.materials": ["pvc"]})


class ListPipes(Capability):
    """Seed 000's ``ListPipesCapability`` metadata, in the seed's shape."""

    metadata = CapabilityMetadata(
        id="seed.capability.base.list_pipes",
        events={
            "success": "seed.capability.base.list_pipes.success",
            "failure": "seed.capability.base.list_pipes.failure",
            "required": ["seed.capability.base.list_materials"],
        },
        input_schema={
            "type": "object",
            "properties": {"obdc.base.lang.code": {"type": "string", "enum": ["en", "pt_BR"], "default": "en"}},
        },
        outputs=["seed.lang"],
        timeout_ms=5_000,
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        RAN.append(self.metadata.id)
        return Result(outputs={"seed.lang": inputs["obdc.base.lang.code"]})


def one_block(worker: str) -> dict[str, Any]:
    """A seed-002 manifest of one node and one block."""
    return {"nodes": {"main": {"entry_block": "a", "context_inheritance": True, "static_memory": {}, "blocks": {
        "a": {"worker": worker, "payload_merge_strategy": [], "transitions": [{"on_signal": "success", "action": "RETURN"}]},
    }}}}


async def test_seed000_metadata_runs_its_prerequisite_first() -> None:
    RAN.clear()
    with anyio.fail_after(20):
        result = await arun_manifest(one_block(ListPipes.metadata.id), [ListMaterials, ListPipes],
                                     inputs={"obdc.base.lang.code": "pt_BR"})
    assert result.status == "completed", result.error
    assert RAN == ["seed.capability.base.list_materials", "seed.capability.base.list_pipes"]
    assert result.context["seed.lang"] == "pt_BR"
    assert result.trace[0].prerequisite_of == "seed.capability.base.list_pipes"


class Ask(Capability):
    """Asks which of two tickers, then answers with the one chosen (seed 004's clarification)."""

    metadata = CapabilityMetadata(
        id="seed.ask",
        input_schema={"type": "object", "properties": {"ontoflow.answer": {"type": "string"}}},
        outputs=["seed.choice", "ontoflow.domain.output"],
        timeout_ms=5_000,
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        RAN.append(context.system.block)
        if "ontoflow.answer" in inputs:
            return Result(outputs={"seed.choice": inputs["ontoflow.answer"]})
        output = {"status": "clarification", "result": {"candidates": ["NDA-SE.ST", "NDA-FI.HE"]},
                  "explanation": "Which Nordea?", "confidence": 1.0, "metadata": {}}
        return Result(event="clarification", outputs={"ontoflow.domain.output": output})


def two_nodes() -> dict[str, Any]:
    """Seed 002's exact shape (no ``start``): main CALLs sub, whose RETURN comes back to b."""
    block = lambda *t: {"worker": "seed.ask", "payload_merge_strategy": [], "transitions": [  # noqa: E731
        {"on_signal": s, "action": a} for s, a in t]}
    return {"nodes": {
        "main": {"entry_block": "a", "context_inheritance": True, "static_memory": {}, "blocks": {
            "a": block(("success", "CALL:sub")), "b": block(("success", "RETURN"))}},
        "sub": {"entry_block": "x", "context_inheritance": False, "static_memory": {}, "blocks": {
            "x": block(("success", "RETURN"))}},
    }}


async def test_seed002_manifest_starts_in_the_node_given_as_execute_does() -> None:
    RAN.clear()
    with anyio.fail_after(20):
        result = await arun_manifest(two_nodes(), [Ask], start="main", answers=["NDA-FI.HE"])
    assert result.status == "completed", result.error
    assert [(t.node, t.block, t.action) for t in result.trace] == [
        ("main", "a", "SUSPEND"), ("main", "a", "CALL:sub"), ("sub", "x", "RETURN"), ("main", "b", "RETURN")]
    assert RAN == ["a", "a", "x", "b"]  # the asking step again with the answer, nothing else twice


async def test_a_document_that_does_not_compile_raises_manifest_error_itself() -> None:
    # Not an ExceptionGroup around it: the docstring and a user's pytest.raises say ManifestError.
    with anyio.fail_after(20), pytest.raises(ManifestError, match="start"):
        await arun_manifest(two_nodes(), [Ask])


async def test_start_is_refused_for_a_plan() -> None:
    with anyio.fail_after(20), pytest.raises(ManifestError, match="start: names the node a workflow starts in"):
        await arun_manifest({"steps": [{"id": "s", "capability": "seed.ask"}]}, [Ask], start="main")


async def test_a_question_nobody_answers_returns_suspended_with_it() -> None:
    # Before, run_manifest waited for the question's expiry (a day by default).
    with anyio.fail_after(20):
        result = await arun_manifest(two_nodes(), [Ask], start="main")
    assert result.status == "suspended"
    (question,) = result.questions
    assert (question.step_id, question.question, question.candidates) == ("s1", "Which Nordea?", ["NDA-SE.ST", "NDA-FI.HE"])
    assert "asks a question" in (result.error or "")


async def test_an_answer_that_is_none_of_the_candidates_is_refused() -> None:
    with anyio.fail_after(20), pytest.raises(AnswerRefused):
        await arun_manifest(two_nodes(), [Ask], start="main", answers=["NDA-XX"])


class GetStockPrice(Capability):
    """A seed-004 domain handler: its answer is one DomainOutput, with the seed's composition."""

    metadata = CapabilityMetadata(
        id="seed.finance.get_stock_price",
        input_schema={"type": "object", "properties": {"symbol": {"type": "string"}, "notify": {"type": "boolean"}}},
        outputs=["ontoflow.domain.output"],
        composition=Composition(
            followup_roles=["notifier"],
            enabled_if={"path": "parameters.notify", "equals": True},
            param_map={"message": {"from_parameters": ["_step_explanation"]}},
        ),
        timeout_ms=5_000,
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        output = {"status": "success", "result": {"price": 38.45, "currency": "BRL"},
                  "explanation": f"{inputs['symbol']} está em 38.45 BRL", "confidence": 1.0, "metadata": {}}
        return Result(outputs={"ontoflow.domain.output": output})


class SendTelegramMessage(Capability):
    metadata = CapabilityMetadata(
        id="seed.notify.send_telegram_message",
        roles=["notifier"],
        input_schema={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
        outputs=["seed.sent"],
        timeout_ms=5_000,
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        return Result(outputs={"seed.sent": inputs["message"]})


async def test_seed004s_compose_notify_plan_passes_the_explanation() -> None:
    # Seed 004's "multi-step (compose/notify)" plan, ids and reference as the seed writes them.
    plan = {"execution_mode": "dag", "combine_mode": "report", "steps": [
        {"id": 1, "capability": "seed.finance.get_stock_price", "params": {"symbol": "PETR4.SA"}, "depends_on": []},
        {"id": 2, "capability": "seed.notify.send_telegram_message", "params": {"message": "${1.explanation}"},
         "depends_on": [1], "required": False},
    ]}
    with anyio.fail_after(20):
        result = await arun_manifest(plan, [GetStockPrice, SendTelegramMessage])
    assert result.status == "completed", result.error
    assert result.context["ontoflow.plan.report"]["2"]["outputs"] == {"seed.sent": "PETR4.SA está em 38.45 BRL"}


async def test_seed004s_composition_metadata_sends_the_step_explanation_to_the_notifier() -> None:
    plan = {"execution_mode": "sequential", "parameters": {"notify": True}, "combine_mode": "report", "steps": [
        {"id": 1, "capability": "seed.finance.get_stock_price", "params": {"symbol": "PETR4.SA"}}]}
    with anyio.fail_after(20):
        result = await arun_manifest(plan, [GetStockPrice, SendTelegramMessage])
    assert result.status == "completed", result.error
    report = result.context["ontoflow.plan.report"]
    assert report["1+notifier"]["outputs"] == {"seed.sent": "PETR4.SA está em 38.45 BRL"}


ATTEMPTS: list[int] = []


class Flaky(Capability):
    """Always a transient failure, under seed 001's retry_policy map."""

    metadata = CapabilityMetadata(
        id="seed.flaky",
        retry={"max_retries": 2, "backoff": "exponential", "backoff_multiplier": 1.5, "initial_ms": 1, "max_ms": 5},
        timeout_ms=5_000,
    )

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        ATTEMPTS.append(1)
        raise TransientError("rate limited (429)")


async def test_seed001_retry_policy_map_is_the_policy_the_base_follows() -> None:
    ATTEMPTS.clear()
    with anyio.fail_after(20):
        result = await arun_manifest(one_block("seed.flaky"), [Flaky])
    assert result.status == "failed"
    assert len(ATTEMPTS) == 3 and result.trace[0].retries == 2


class BadSchema(Capability):
    metadata = CapabilityMetadata(id="seed.bad_schema",
                                  input_schema={"type": "object", "properties": {"x": {"type": "strin"}}})

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        return Result()


class FailingInit(Capability):
    """Seed 001's lifecycle: initialize() before the first step; this one cannot."""

    metadata = CapabilityMetadata(id="seed.failing_init")

    async def initialize(self) -> None:
        raise ConnectionRefusedError("the mail server is down")

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        return Result()


async def test_a_schema_that_does_not_compile_raises_its_own_error() -> None:
    with anyio.fail_after(20), pytest.raises(CapabilityDefinitionError, match="seed.bad_schema"):
        await arun_manifest(one_block("seed.bad_schema"), [BadSchema])


async def test_an_initialize_that_raises_reaches_the_caller_as_the_init_error_naming_it() -> None:
    # As ``ontoflow run`` prints it (the text scrubbed, nothing chained), not the error itself.
    with anyio.fail_after(20), pytest.raises(CapabilityInitError, match="^capability 'seed.failing_init' could not "
                                             "initialise: ConnectionRefusedError: the mail server is down$"):
        await arun_manifest(one_block("seed.failing_init"), [FailingInit])
