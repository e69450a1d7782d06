"""The capability base's guarantees: no exception escapes, nothing secret leaks, cancellation
propagates (seed 001)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import Segment, StepContext
from ontoflow.protocols.messages import Outcome
from tests.actors.capability._support import make_metadata, make_request
from tests.actors.capability.test_invoke import Forever, scripted

pytestmark = pytest.mark.anyio


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class RaisingStatusError(Exception):
    @property
    def status_code(self) -> int:
        raise RuntimeError("no status either")


class SyncExecute(Capability):
    """A common mistake: execute written without ``async``."""

    metadata = make_metadata()

    def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:  # type: ignore[override]
        return {"out": 1}


class Unencodable:
    pass


NASTY_RESULTS = {
    "unprintable exception": UnprintableError(),
    "status property raising": RaisingStatusError("odd"),
    "exception group": ExceptionGroup("several", [ValueError("a"), KeyError("b")]),
    "outputs not a dict": Result(outputs="not a dict"),  # type: ignore[arg-type]
    "event not a str": Result(event=123),  # type: ignore[arg-type]
    "segments not segments": Result(segments=["text"]),  # type: ignore[list-item]
    # Sent, refused by the orchestrator's decoder, and the step waited out its deadline.
    "a segment with a non-str field": Result(segments=[Segment(id=1, type="t", content="c")]),  # type: ignore[arg-type]
    "a segment with bytes content": Result(segments=[Segment(id="a", type="t", content=b"c")]),  # type: ignore[arg-type]
    "non-str output key": {1: "x"},
    "unencodable output": {"k": Unencodable()},
    "a list returned": ["success"],
    "a string returned": "success",
}


@pytest.mark.parametrize("behaviour", list(NASTY_RESULTS.values()), ids=list(NASTY_RESULTS))
async def test_nothing_but_an_outcome_comes_out(behaviour: Any) -> None:
    cap, _ = scripted([behaviour], retry=RetryPolicy(max_retries=0))
    outcome = await cap.invoke(make_request())
    assert isinstance(outcome, Outcome)
    assert outcome.event == "failure"
    assert outcome.reason in {"error", "invalid_result"}
    assert outcome.error and len(outcome.error) <= 500
    assert (outcome.run_id, outcome.step_id, outcome.attempt) == ("r1", "s1", 2)


async def test_a_sync_execute_ends_in_failure() -> None:
    outcome = await SyncExecute().invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "error")
    assert outcome.error is not None and outcome.error.startswith("unknown: TypeError: ")


async def test_a_broken_sleep_still_ends_in_an_outcome() -> None:
    async def broken_sleep(seconds: float) -> None:
        raise RuntimeError("clock on fire")

    cls = type("Flaky", (Forever,), {"metadata": make_metadata(timeout_ms=20, retry=RetryPolicy(max_retries=1))})
    outcome = await cls(sleep=broken_sleep).invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "internal")
    assert outcome.duration_ms > 0


async def test_a_huge_error_message_is_capped() -> None:
    cap, _ = scripted([ValueError("x " * 10_000)])
    outcome = await cap.invoke(make_request())
    assert outcome.error is not None and len(outcome.error) <= 500


async def test_parameter_values_and_secrets_never_reach_the_outcome_or_logs() -> None:
    email = "alice@example.com"
    secret = "sk-live-0123-SECRET"
    phone = 5551234567
    error = ValueError(f"lookup for {email} (tel {phone}) failed with key {secret}; password=hunter22")
    cap, _ = scripted([error], secrets=(secret,), retry=RetryPolicy(max_retries=0))
    with capture_logs() as logs:
        outcome = await cap.invoke(make_request({"customer.email": email, "count": phone}))
    assert outcome.error is not None and outcome.error.startswith("unknown: ValueError: lookup for <redacted>")
    for leaked in (email, secret, str(phone), "hunter22"):
        assert leaked not in outcome.error
        assert leaked not in repr(logs)
    events = {e["event"]: e for e in logs}
    started = events["capability_step_started"]
    assert sorted(started["input_keys"]) == ["count", "customer.email"]
    assert isinstance(started["input_bytes"], int) and started["input_bytes"] > 0
    failed = events["capability_attempt_failed"]
    assert (failed["error_class"], failed["exc_type"], failed["attempt"]) == ("unknown", "ValueError", 1)
    completed = events["capability_step_completed"]
    assert (completed["outcome"], completed["retries"], completed["run_id"], completed["step_id"]) == ("failure", 0, "r1", "s1")
    assert completed["duration_ms"] >= 0


async def test_cancelling_invoke_propagates_instead_of_returning() -> None:
    cap = type("Long", (Forever,), {"metadata": make_metadata(timeout_ms=10_000)})()
    returned: list[Outcome] = []

    async def run() -> None:
        returned.append(await cap.invoke(make_request()))

    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await cap.entered.wait()
                scope.cancel()
    assert scope.cancelled_caught
    assert returned == []


async def test_cancelling_during_backoff_propagates() -> None:
    sleeping = anyio.Event()

    async def long_sleep(seconds: float) -> None:
        sleeping.set()
        await anyio.sleep_forever()

    cls = type("Busy", (Forever,), {"metadata": make_metadata(timeout_ms=20, retry=RetryPolicy(max_retries=3))})
    cap = cls(sleep=long_sleep)
    returned: list[Outcome] = []

    async def run() -> None:
        returned.append(await cap.invoke(make_request()))

    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await sleeping.wait()
                scope.cancel()
    assert returned == [] and cap.calls == 1


class ForgotSuper(Capability):
    """A subclass whose __init__ does not call super().__init__(): a common slip."""

    metadata = make_metadata(retry=RetryPolicy(max_retries=1, initial_ms=1.0, max_ms=1.0))

    def __init__(self) -> None:
        self.client = {"calls": 0}

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        self.client["calls"] += 1
        if self.client["calls"] == 1:
            raise TimeoutError("slow upstream")
        return {"count": self.client["calls"]}


async def test_a_subclass_that_forgot_super_init_still_runs_with_retries() -> None:
    # Before: every step failed as "unknown: AttributeError: the capability base failed".
    cap = ForgotSuper()
    with anyio.fail_after(5):
        outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.outputs, outcome.retries) == ("success", {"count": 2}, 1)
    assert cap.secrets == () and dict(cap.config) == {}
    with pytest.raises(AttributeError, match="'ForgotSuper' object has no attribute 'missing'"):
        cap.missing  # noqa: B018 - the usual error for anything else
