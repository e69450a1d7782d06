"""The unlimited first attempt's quick answer (a step with neither a timeout nor a deadline
that returns nothing but a declared event) answers exactly as the checked path does, and
the inputs a step was sent are never changed by the base or by the step."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import Segment, StepContext
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio


class _Event(str):
    pass


class _Outputs(dict):
    pass


class _Result(Result):
    pass


RESULTS: dict[str, Any] = {
    "none": None,
    "plain result": Result(),
    "declared event": Result(event="empty"),
    "undeclared event": Result(event="nope"),
    "event a str subclass": Result(event=_Event("success")),
    "event not a str": Result(event=1),  # type: ignore[arg-type]
    "outputs an empty list": Result(outputs=[]),  # type: ignore[arg-type]
    "outputs an empty dict subclass": Result(outputs=_Outputs()),
    "segments an empty tuple": Result(segments=()),  # type: ignore[arg-type]
    "a segment": Result(segments=[Segment(id="a", type="t", content="c")]),
    "a Result subclass": _Result(event="empty"),
    "an empty dict": {},
    "outputs": Result(outputs={"out": 1}),
}


def _returning(raw: Any, **meta: Any) -> Capability:
    class Returns(Capability):
        metadata = make_metadata(retry=RetryPolicy(max_retries=0), **meta)

        async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
            return raw

    return Returns()


def _answer(outcome: Any) -> dict[str, Any]:
    fields = msgspec.structs.asdict(outcome)
    fields.pop("duration_ms")
    return fields


@pytest.mark.parametrize("raw", list(RESULTS.values()), ids=list(RESULTS))
@pytest.mark.parametrize("verbose", [False, True])
async def test_the_unlimited_first_attempt_answers_as_a_limited_one(raw: Any, verbose: bool) -> None:
    limited = await _returning(raw, timeout_ms=5_000).invoke(make_request(), verbose=verbose)
    unlimited = await _returning(raw, timeout_ms=None).invoke(make_request(), verbose=verbose)
    assert _answer(unlimited) == _answer(limited)
    assert unlimited.duration_ms >= 0


async def test_a_verbose_quick_answer_is_logged() -> None:
    with capture_logs() as logs:
        outcome = await _returning(None, timeout_ms=None).invoke(make_request(), verbose=True)
    completed = [e for e in logs if e["event"] == "capability_step_completed"]
    assert outcome.event == "success"
    assert [(e["outcome"], e["run_id"], e["retries"]) for e in completed] == [("success", "r1", 0)]


class _Mutates(Capability):
    """Changes the inputs it is handed and returns what it saw."""

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        seen = dict(inputs)
        inputs["count"] = -1
        inputs["added"] = True
        return {"out": sorted(seen)}


@pytest.mark.parametrize("timeout_ms", [None, 5_000])
async def test_the_inputs_sent_stay_as_sent_without_schema_defaults(timeout_ms: int | None) -> None:
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
    cap = type("NoDefaults", (_Mutates,), {"metadata": make_metadata(input_schema=schema, outputs=["out"], timeout_ms=timeout_ms)})()
    request = make_request({"count": 3})
    first = await cap.invoke(request)
    second = await cap.invoke(request)
    assert request.inputs == {"count": 3}
    assert first.outputs == second.outputs == {"out": ["count"]}


@pytest.mark.parametrize("timeout_ms", [None, 5_000])
async def test_schema_defaults_reach_the_step_not_the_inputs_sent(timeout_ms: int | None) -> None:
    cap = type("Defaults", (_Mutates,), {"metadata": make_metadata(outputs=["out"], timeout_ms=timeout_ms)})()
    request = make_request({"count": 3})
    outcome = await cap.invoke(request)
    assert request.inputs == {"count": 3}
    assert outcome.outputs == {"out": ["count", "obdc.base.lang.code"]}
