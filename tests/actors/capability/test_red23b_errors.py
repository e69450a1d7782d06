"""An exception whose class or attributes misbehave is still the capability's own failure,
classified and reported by its real class name: never the base's ``internal`` failure."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.capability._classify import ErrorClass, classify_error
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio


class RaisingName(type):
    """A metaclass whose ``__name__`` raises: ``type(exc).__name__`` raised in the base."""

    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("no name")


class LyingName(type):
    """A metaclass whose ``__name__`` is any text the class likes."""

    @property
    def __name__(cls) -> str:  # type: ignore[override]
        return "password=hunter2"


class Nameless(Exception, metaclass=RaisingName):
    pass


class Liar(Exception, metaclass=LyingName):
    pass


class UnreadableResponse(Exception):
    """An HTTP-ish error whose ``response`` property raises (a closed client's)."""

    @property
    def response(self) -> Any:
        raise RuntimeError("response already closed")


class Raiser(Capability):
    metadata = make_metadata(retry=RetryPolicy(max_retries=2, initial_ms=1.0, max_ms=1.0))
    to_raise: BaseException = RuntimeError()

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        raise self.to_raise


async def _no_sleep(_seconds: float) -> None:
    return None


def test_an_error_whose_response_property_raises_is_still_classified() -> None:
    assert classify_error(UnreadableResponse("read timed out")) is ErrorClass.TRANSIENT


async def test_an_error_whose_response_property_raises_is_retried_as_transient() -> None:
    cap = Raiser(sleep=_no_sleep)
    cap.to_raise = UnreadableResponse("read timed out")
    outcome = await cap.invoke(make_request())
    assert (outcome.reason, outcome.retries) == ("error", 2)
    assert outcome.error == "transient: UnreadableResponse: read timed out"


async def test_an_error_class_whose_name_raises_is_the_capability_failure() -> None:
    cap = Raiser(sleep=_no_sleep)
    cap.to_raise = Nameless("bad row")
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "error")
    assert outcome.error == "unknown: Nameless: bad row"


async def test_an_error_class_whose_name_lies_is_named_as_python_names_it() -> None:
    cap = Raiser(sleep=_no_sleep)
    cap.to_raise = Liar("bad row")
    outcome = await cap.invoke(make_request())
    assert outcome.error == "unknown: Liar: bad row"


def _nested(depth: int, leaf: Exception) -> ExceptionGroup:
    group = ExceptionGroup("attempts", [leaf])
    for _ in range(depth):
        group = ExceptionGroup("attempts", [group])
    return group


@pytest.mark.parametrize(("leaf", "expected"), [(ConnectionError("reset"), ErrorClass.TRANSIENT),
                                                (PermissionError("denied"), ErrorClass.PERMANENT)])
def test_a_deeply_nested_exception_group_is_classified_by_its_leaves(leaf: Exception, expected: ErrorClass) -> None:
    assert classify_error(_nested(3_000, leaf)) is expected


async def test_a_deeply_nested_group_of_transient_errors_is_retried() -> None:
    cap = Raiser(sleep=_no_sleep)
    cap.to_raise = _nested(3_000, ConnectionError("reset"))
    outcome = await cap.invoke(make_request())
    assert (outcome.reason, outcome.retries) == ("error", 2)
    assert outcome.error == "transient: ExceptionGroup: attempts (1 sub-exception)"


def test_a_group_holding_an_exit_is_permanent_as_the_exit_alone_is() -> None:
    # A task group in execute where one child called sys.exit and another timed out: retried.
    group = BaseExceptionGroup("children", [TimeoutError(), SystemExit(2)])
    assert classify_error(SystemExit(2)) is ErrorClass.PERMANENT
    assert classify_error(group) is ErrorClass.PERMANENT
    assert classify_error(ExceptionGroup("outer", [ConnectionError()])) is ErrorClass.TRANSIENT
