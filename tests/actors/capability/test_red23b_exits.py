"""An exit or an interrupt raised by the capability's own objects while the base reads them
(an exception's ``__str__`` or ``status_code``, a result's event) is that step's failure, as
one raised by ``execute`` is: it never escapes ``invoke``."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.capability import Capability, Result
from ontoflow.actors.capability._classify import ErrorClass, classify_error
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio


class ExitingText(Exception):
    def __str__(self) -> str:
        raise SystemExit(3)


class InterruptingText(Exception):
    def __str__(self) -> str:
        raise KeyboardInterrupt


class ExitingStatus(Exception):
    @property
    def status_code(self) -> int:
        raise SystemExit(4)


class ExitingResponse(Exception):
    @property
    def response(self) -> Any:
        raise SystemExit(5)


class ExitingEvent(str):
    """An event name whose comparison exits (read only once the base checks it)."""

    def __hash__(self) -> int:
        raise SystemExit(7)

    def __eq__(self, other: object) -> bool:
        raise SystemExit(7)


class Raiser(Capability):
    metadata = make_metadata(retry=RetryPolicy(max_retries=0))
    to_raise: BaseException | None = None
    result: Any = None

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        if self.to_raise is not None:
            raise self.to_raise
        return self.result


@pytest.mark.parametrize("error", [ExitingText(), InterruptingText(), ExitingStatus("x"), ExitingResponse("x")],
                         ids=lambda e: type(e).__name__)
async def test_an_exit_raised_reading_the_error_is_the_step_failure(error: BaseException) -> None:
    cap = Raiser()
    cap.to_raise = error
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "error")
    assert outcome.error is not None and outcome.error.startswith(f"unknown: {type(error).__name__}: ")


def test_classify_never_raises_an_exit_from_the_error() -> None:
    assert classify_error(ExitingText()) is ErrorClass.UNKNOWN
    assert classify_error(ExitingStatus("x")) is ErrorClass.UNKNOWN


@pytest.mark.parametrize("verbose", [False, True])
async def test_an_exit_raised_reading_the_result_is_an_invalid_result(verbose: bool) -> None:
    cap = Raiser()
    cap.result = Result(event=ExitingEvent("success"))
    outcome = await cap.invoke(make_request(), verbose=verbose)
    assert (outcome.event, outcome.reason) == ("failure", "invalid_result")
    assert outcome.error == "the result cannot be read: SystemExit"
