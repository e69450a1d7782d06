"""A capability that misbehaves does not bend the base's promises (seed 001): a step that
blocks the event loop past its deadline and then answers is a timeout, not a late success; a
retry sees the inputs as they were sent, whatever the attempt before it changed in them."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from ontoflow import Capability, CapabilityMetadata, PermanentError, TransientError, arun_manifest
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from ontoflow.protocols.messages import Invoke
from tests.actors.capability._support import FakeSleep

pytestmark = pytest.mark.anyio

TIMEOUT_MS = 50
_NO_WAIT = RetryPolicy(max_retries=2, initial_ms=1.0, max_ms=1.0)


def _block_past(deadline_ms: float) -> None:
    """Block the event loop (no await: no cancel scope can stop this) until well past the deadline."""
    time.sleep(deadline_ms * 3 / 1000)


def _single(capability: str) -> dict[str, Any]:
    return {"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": capability}}}}}


class BlocksThenAnswers(Capability):
    """Blocks the loop past its timeout, then returns success (or raises, ``t.raise``)."""

    metadata = CapabilityMetadata(
        id="t.blocks", outputs=["t.out"], timeout_ms=TIMEOUT_MS, retry=RetryPolicy(max_retries=0),
        input_schema={"type": "object", "properties": {"t.raise": {"type": "boolean", "default": False}}},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        _block_past(TIMEOUT_MS)
        if inputs["t.raise"]:
            raise PermanentError("gave up")
        return {"t.out": "late"}


async def test_a_step_blocking_the_loop_past_its_timeout_then_succeeding_is_a_timeout() -> None:
    # Before: the run completed with the step a "success", after its deadline had passed.
    result = await arun_manifest(_single("t.blocks"), [BlocksThenAnswers])
    (step,) = result.trace
    assert (step.event, step.reason) == ("timeout", "timeout"), step
    assert step.error == f"transient: TimeoutError: attempt exceeded {TIMEOUT_MS} ms"
    assert result.status == "failed" and "t.out" not in result.context


async def test_an_error_raised_past_the_deadline_is_a_timeout_too() -> None:
    outcome = await BlocksThenAnswers().invoke(_invoke("t.blocks", {"t.raise": True}))
    assert (outcome.event, outcome.reason) == ("timeout", "timeout"), outcome


class LateOnce(Capability):
    """The first attempt blocks past the timeout; the retry answers in time."""

    metadata = CapabilityMetadata(id="t.late_once", outputs=["t.out"], timeout_ms=TIMEOUT_MS, retry=_NO_WAIT)

    def __init__(self) -> None:
        super().__init__(sleep=FakeSleep())
        self.attempts = 0

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        self.attempts += 1
        if self.attempts == 1:
            _block_past(TIMEOUT_MS)
        return {"t.out": self.attempts}


async def test_a_late_attempt_is_retried_as_a_timed_out_one_is() -> None:
    cap = LateOnce()
    outcome = await cap.invoke(_invoke("t.late_once", {}))
    assert (outcome.event, outcome.outputs, outcome.retries) == ("success", {"t.out": 2}, 1), outcome


class UnlimitedButDeadline(Capability):
    """No timeout of its own: the step's deadline (``Invoke.deadline_ms``) bounds it."""

    metadata = CapabilityMetadata(id="t.deadline", outputs=["t.out"], timeout_ms=None, retry=RetryPolicy(max_retries=0))

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        _block_past(TIMEOUT_MS)
        return {"t.out": 1}


async def test_a_step_answering_past_the_step_deadline_is_a_timeout() -> None:
    outcome = await UnlimitedButDeadline().invoke(_invoke("t.deadline", {}, deadline_ms=TIMEOUT_MS))
    assert (outcome.event, outcome.reason) == ("timeout", "timeout"), outcome
    assert outcome.error == f"transient: TimeoutError: attempt exceeded the step deadline of {TIMEOUT_MS} ms"


# -- retries see the inputs as sent -------------------------------------------------------------


class Mutates(Capability):
    """Changes what it was given in place (nested values too), then fails transiently twice."""

    metadata = CapabilityMetadata(
        id="t.mutates", outputs=["t.seen"], retry=_NO_WAIT,
        input_schema={"type": "object", "properties": {
            "t.items": {"type": "array"}, "t.map": {"type": "object"}, "t.name": {"type": "string"},
        }},
    )

    def __init__(self) -> None:
        super().__init__(sleep=FakeSleep())
        self.seen: list[dict[str, Any]] = []

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        self.seen.append({k: _copy(v) for k, v in inputs.items()})
        for value in inputs.values():
            if isinstance(value, list):
                value.append("from attempt")
            elif isinstance(value, (dict, set)):
                value.clear()
            elif isinstance(value, Box):
                value.items.append("from attempt")
        inputs["t.name"] = "changed"
        if len(self.seen) < 3:
            raise TransientError("again")
        return {"t.seen": len(self.seen)}


class MutatesBounded(Mutates):
    """The same, with a timeout: its attempts run in the attempts loop, under a cancel scope."""

    metadata = CapabilityMetadata(
        id="t.mutates_bounded", outputs=["t.seen"], retry=_NO_WAIT, timeout_ms=60_000,
        input_schema=Mutates.metadata.input_schema,
    )


class Box:
    """A value msgpack cannot carry (only ever handed in code), holding a list."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other.items == self.items


def _copy(value: Any) -> Any:
    if isinstance(value, Box):
        return Box(list(value.items))
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, set):
        return set(value)
    return value


SENT = {"t.items": ["a"], "t.map": {"k": ["v"]}, "t.name": "n"}


async def test_every_attempt_of_a_worker_step_sees_the_inputs_as_sent() -> None:
    # Before: the second attempt saw ["a", "from attempt"], the third two appends, {} for the map.
    hosted: list[Mutates] = []

    class Recorded(Mutates):
        def __init__(self) -> None:
            super().__init__()
            hosted.append(self)

    result = await arun_manifest(_single("t.mutates"), [Recorded], inputs=SENT)
    assert result.status == "completed", result
    assert result.trace[0].retries == 2
    assert hosted[0].seen == [SENT, SENT, SENT]


@pytest.mark.parametrize("cls", [Mutates, MutatesBounded], ids=["unlimited", "with_timeout"])
async def test_every_attempt_sees_the_inputs_as_sent(cls: type[Mutates]) -> None:
    cap = cls()
    outcome = await cap.invoke(_invoke(cls.metadata.id, {"t.items": ["a"], "t.map": {"k": ["v"]}, "t.name": "n"}))
    assert (outcome.event, outcome.retries) == ("success", 2), outcome
    assert cap.seen == [SENT, SENT, SENT]


async def test_undeclared_and_unencodable_inputs_are_kept_for_retries_too() -> None:
    # An undeclared key (no schema type vouches for it) and a value msgpack cannot carry (only
    # ever handed in code): a deep copy is kept instead.
    cap = Mutates()
    sent = {"t.other": [1], "t.box": Box([1])}
    outcome = await cap.invoke(_invoke("t.mutates", {"t.other": [1], "t.box": Box([1])}))
    assert outcome.event == "success", outcome
    assert [{k: v for k, v in seen.items() if k != "t.name"} for seen in cap.seen] == [sent, sent, sent]


def _invoke(capability: str, inputs: dict[str, Any], *, deadline_ms: int | None = None) -> Invoke:
    return Invoke(run_id="r", step_id="s", attempt=1, capability=capability, inputs=inputs, deadline_ms=deadline_ms)


async def test_a_step_that_blocks_within_its_timeout_is_still_a_success() -> None:
    # The other side of the rule: blocking is not punished, only answering late.
    class Brief(Capability):
        metadata = CapabilityMetadata(id="t.brief", outputs=["t.out"], timeout_ms=60_000)

        async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
            time.sleep(0.001)
            await anyio.sleep(0)
            return {"t.out": 1}

    outcome = await Brief().invoke(_invoke("t.brief", {}))
    assert (outcome.event, outcome.outputs) == ("success", {"t.out": 1}), outcome


class SwallowsTheCancellation(Capability):
    """Catches the cancellation of its timeout and answers success anyway."""

    metadata = CapabilityMetadata(id="t.swallows", outputs=["t.out"], timeout_ms=TIMEOUT_MS,
                                  retry=RetryPolicy(max_retries=0))

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            pass
        return {"t.out": "after the deadline"}


async def test_a_step_that_swallows_its_timeout_and_answers_is_a_timeout() -> None:
    # Before: "success", with outputs produced after the deadline.
    outcome = await SwallowsTheCancellation().invoke(_invoke("t.swallows", {}))
    assert (outcome.event, outcome.reason, outcome.outputs) == ("timeout", "timeout", {}), outcome


class RoutesByItsOwnEvents(Capability):
    """Declares no ``success``, and forgets to return one of its events."""

    metadata = CapabilityMetadata(id="t.routes", events=["found", "missing"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        return None


async def test_none_from_a_capability_without_success_is_an_undeclared_event_as_a_dict_is() -> None:
    # Before: None answered "success" unchecked, and only the orchestrator refused it, with
    # another message; {} was refused here.
    outcome = await RoutesByItsOwnEvents().invoke(_invoke("t.routes", {}))
    assert (outcome.event, outcome.reason) == ("failure", "undeclared_event"), outcome
    assert outcome.error == "capability returned None: undeclared event 'success'"
