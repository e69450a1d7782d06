"""The template method of the capability base: retries, backoff, timeouts, checks (seed 001)."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability, PermanentError, Result, TransientError
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import Segment, StepContext
from ontoflow.runtime.retry import backoff_ms
from tests.actors.capability._support import LANG_KEY, FakeSleep, make_metadata, make_request

pytestmark = pytest.mark.anyio


class Scripted(Capability):
    """Plays a script: each call takes the next entry (the last repeats); exceptions are raised."""

    metadata = make_metadata()

    def __init__(self, script: list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script = list(script)
        self.calls = 0
        self.seen: list[dict[str, Any]] = []

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        self.calls += 1
        self.seen.append(inputs)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, BaseException):
            raise step
        return step


def scripted(script: list[Any], *, secrets: tuple[str, ...] = (), **meta: Any) -> tuple[Scripted, FakeSleep]:
    """A Scripted capability with its own metadata (when given), a fake sleep, a seeded Random."""
    cls = type("Custom", (Scripted,), {"metadata": make_metadata(**meta)}) if meta else Scripted
    sleep = FakeSleep()
    return cls(script, secrets=secrets, sleep=sleep, random=random.Random(7)), sleep


class Forever(Capability):
    """An attempt that never ends on its own."""

    metadata = make_metadata(timeout_ms=20, retry=RetryPolicy(max_retries=0))

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = 0
        self.entered = anyio.Event()

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> None:
        self.calls += 1
        self.entered.set()
        await anyio.sleep_forever()


# -- retries -------------------------------------------------------------------------------


async def test_transient_errors_are_retried_until_success() -> None:
    cap, sleep = scripted([TransientError("rate limited"), ConnectionError("reset by peer"), {"out": 1}])
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.outputs, outcome.error, outcome.reason) == ("success", {"out": 1}, None, None)
    assert outcome.retries == 2
    assert cap.calls == 3
    assert len(sleep.delays) == 2
    assert (outcome.run_id, outcome.step_id, outcome.attempt) == ("r1", "s1", 2)
    assert isinstance(outcome.duration_ms, float) and outcome.duration_ms > 0


async def test_permanent_error_is_not_retried() -> None:
    cap, sleep = scripted([PermanentError("account disabled"), {"out": 1}])
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason, outcome.retries) == ("failure", "error", 0)
    assert outcome.error == "permanent: PermanentError: account disabled"
    assert cap.calls == 1 and sleep.delays == []


async def test_unknown_error_is_not_retried() -> None:
    cap, sleep = scripted([ValueError("something odd"), {"out": 1}])
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.retries, cap.calls, sleep.delays) == ("failure", 0, 1, [])
    assert outcome.error == "unknown: ValueError: something odd"


async def test_max_retries_is_respected() -> None:
    cap, sleep = scripted([TransientError("busy")], retry=RetryPolicy(max_retries=1))
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason, outcome.retries) == ("failure", "error", 1)
    assert outcome.error == "transient: TransientError: busy"
    assert cap.calls == 2 and len(sleep.delays) == 1


async def test_backoff_follows_the_jittered_exponential_schedule() -> None:
    cap, sleep = scripted([TransientError("busy")])  # max_retries=3, 100 ms x2, jitter 0.25
    outcome = await cap.invoke(make_request())
    assert outcome.retries == 3 and cap.calls == 4
    nominal = [0.1, 0.2, 0.4]
    assert len(sleep.delays) == 3
    for delay, base in zip(sleep.delays, nominal, strict=True):
        assert base * 0.75 <= delay <= base * 1.25
    factors = [delay / base for delay, base in zip(sleep.delays, nominal, strict=True)]
    assert len({round(f, 9) for f in factors}) == 3, "each retry draws its own jitter"
    assert all(abs(f - 1.0) > 1e-9 for f in factors)
    # Exactly the policy's arithmetic with the injected Random's draws.
    rng = random.Random(7)
    expected = [backoff_ms(cap.metadata.retry, n, rng.random()) / 1000 for n in (1, 2, 3)]
    assert sleep.delays == pytest.approx(expected)


# -- timeouts and deadlines ----------------------------------------------------------------


async def test_an_attempt_past_its_timeout_ends_in_timeout() -> None:
    cap = Forever(sleep=FakeSleep())
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason, outcome.retries) == ("timeout", "timeout", 0)
    assert outcome.error is not None and "20 ms" in outcome.error
    assert cap.calls == 1


async def test_timed_out_attempts_are_retried_as_transient() -> None:
    cls = type("RetriedForever", (Forever,), {"metadata": make_metadata(timeout_ms=20, retry=RetryPolicy(max_retries=1))})
    sleep = FakeSleep()
    cap = cls(sleep=sleep)
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.retries, cap.calls, len(sleep.delays)) == ("timeout", 1, 2, 1)


async def test_no_backoff_sleep_crosses_the_deadline() -> None:
    # The first backoff (>= 75 ms) would end past the 20 ms deadline: no retry is started.
    cap, sleep = scripted([TransientError("busy"), {"out": 1}])
    outcome = await cap.invoke(make_request(deadline_ms=20))
    assert (outcome.event, outcome.retries, cap.calls, sleep.delays) == ("failure", 0, 1, [])


async def test_the_deadline_bounds_an_attempt_without_timeout() -> None:
    cls = type("Unbounded", (Forever,), {"metadata": make_metadata(timeout_ms=None, retry=RetryPolicy(max_retries=0))})
    outcome = await cls().invoke(make_request(deadline_ms=20))
    assert (outcome.event, outcome.reason) == ("timeout", "timeout")
    assert outcome.error is not None and "deadline" in outcome.error


# -- inputs --------------------------------------------------------------------------------


async def test_invalid_input_names_the_key_and_rule_not_the_value() -> None:
    cap, _ = scripted([{}])
    outcome = await cap.invoke(make_request({LANG_KEY: "klingon-value"}))
    assert (outcome.event, outcome.reason, outcome.retries) == ("invalid", "invalid_input", 0)
    assert outcome.error == "input 'obdc.base.lang.code' must be one of ['en', 'pt_BR']"
    assert cap.calls == 0


async def test_a_missing_required_key_is_named() -> None:
    cap, _ = scripted([{}], input_schema={"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]})
    outcome = await cap.invoke(make_request({}))
    assert (outcome.event, outcome.error) == ("invalid", "input 'count' is required")


async def test_inputs_that_are_not_a_mapping_are_invalid() -> None:
    cap, _ = scripted([{}])
    outcome = await cap.invoke(make_request(["not", "a", "dict"]))
    assert (outcome.event, outcome.reason) == ("invalid", "invalid_input")


async def test_schema_defaults_fill_missing_keys_without_touching_the_request() -> None:
    cap, _ = scripted([{}])
    request = make_request({"count": 3})
    outcome = await cap.invoke(request)
    assert outcome.event == "success"
    assert cap.seen == [{"count": 3, LANG_KEY: "en"}]
    assert request.inputs == {"count": 3}


async def test_one_validator_is_compiled_per_class() -> None:
    first, _ = scripted([{}])
    second, _ = scripted([{}])
    assert first._spec is second._spec
    assert Scripted._class_spec() is Scripted._class_spec()


def test_a_schema_that_does_not_compile_names_the_capability() -> None:
    class Broken(Scripted):
        metadata = make_metadata(id="test.capability.broken", input_schema={"type": "object", "properties": {"a": {"type": "nope"}}})

    with pytest.raises(CapabilityDefinitionError, match="test.capability.broken"):
        Broken([{}])


# -- what execute returns ------------------------------------------------------------------


async def test_declared_events_and_segments_pass_through() -> None:
    segment = Segment(id="s1.0", type="CODE_OUTPUT", content="done")
    cap, _ = scripted([Result(event="empty", outputs={"n": 0}, segments=[segment])])
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.outputs, outcome.segments) == ("empty", {"n": 0}, [segment])


async def test_none_is_a_success_without_outputs() -> None:
    cap, _ = scripted([None])
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.outputs, outcome.error) == ("success", {}, None)


async def test_an_undeclared_event_becomes_a_failure_naming_it() -> None:
    cap, _ = scripted([Result(event="paginated")])
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "undeclared_event")
    assert outcome.error is not None and "'paginated'" in outcome.error


async def test_an_undeclared_output_is_dropped_and_logged_by_key() -> None:
    cap, _ = scripted([{"declared.key": 1, "stray.key": "stray-value-xyz"}], outputs=["declared.key"])
    with capture_logs() as logs:
        outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.outputs) == ("success", {"declared.key": 1})
    dropped = [e for e in logs if e["event"] == "undeclared_output_dropped"]
    assert len(dropped) == 1 and dropped[0]["keys"] == ["stray.key"]
    assert "stray-value-xyz" not in repr(logs)


async def test_outputs_are_kept_when_none_are_declared() -> None:
    cap, _ = scripted([{"any.key": 1}])
    outcome = await cap.invoke(make_request())
    assert outcome.outputs == {"any.key": 1}


async def test_perceive_defaults_to_nothing() -> None:
    cap, _ = scripted([{}])
    assert await cap.perceive() == []
