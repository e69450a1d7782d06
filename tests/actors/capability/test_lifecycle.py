"""Seed 001's lifecycle: initialize in order, shutdown in reverse, and a shutdown that raises,
exits or hangs neither skips the others nor holds its host (or ``run_manifest``) up; an
initialize that exits is the capability's init error, not the caller's exit."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow import Capability, CapabilityMetadata, run_manifest
from ontoflow.actors.capability import shut_down
from ontoflow.actors.errors import CapabilityInitError

pytestmark = pytest.mark.anyio

ORDER: list[str] = []
SECRET = "dsn-password-Qx81"


def _capability(name: str, on_shutdown: BaseException | str | None = None) -> type[Capability]:
    class Tracked(Capability):
        metadata = CapabilityMetadata(id=f"demo.{name}")

        async def initialize(self) -> None:
            ORDER.append(f"initialize {name}")

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            return None

        async def shutdown(self) -> None:
            ORDER.append(f"shutdown {name}")
            if on_shutdown == "hang":
                await anyio.sleep_forever()
            if isinstance(on_shutdown, BaseException):
                raise on_shutdown

    Tracked.__qualname__ = f"Tracked_{name}"
    return Tracked


@pytest.mark.parametrize("raised", [SystemExit(5), KeyboardInterrupt(SECRET), RuntimeError(SECRET)],
                         ids=["sys.exit", "KeyboardInterrupt", "an error"])
def test_a_shutdown_that_raises_does_not_skip_the_others_nor_end_the_caller(raised: BaseException) -> None:
    ORDER.clear()
    doc = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.a"}}}}}
    with capture_logs() as logs:
        result = run_manifest(doc, [_capability("a"), _capability("b", raised), _capability("c")])
    assert result.status == "completed"
    assert ORDER == ["initialize a", "initialize b", "initialize c", "shutdown c", "shutdown b", "shutdown a"]
    failed = [e for e in logs if e["event"] == "capability_shutdown_failed"]
    assert [(e["capability"], e["error"]) for e in failed] == [("demo.b", type(raised).__name__)]
    assert SECRET not in repr(logs)


async def test_a_shutdown_that_hangs_is_given_up_after_its_time() -> None:
    with capture_logs() as logs, anyio.fail_after(5):
        assert await shut_down(_capability("h", "hang")(), timeout_s=0.01) is False  # type: ignore[arg-type]
    assert [e["event"] for e in logs] == ["capability_shutdown_timed_out"]


async def test_a_shutdown_that_returns_is_true() -> None:
    assert await shut_down(_capability("fine")(), timeout_s=5) is True


async def test_a_cancelled_caller_still_propagates() -> None:
    cap = _capability("h2", "hang")()
    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            scope.cancel()
            await shut_down(cap, timeout_s=60)
    assert scope.cancelled_caught


class ExitsAtStart(Capability):
    metadata = CapabilityMetadata(id="demo.exits_at_start")

    async def initialize(self) -> None:
        sys.exit(3)  # a library giving up: 3 is also the CLI's "journal is corrupt"

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None


def test_an_initialize_that_exits_is_an_init_error_not_the_callers_exit() -> None:
    doc = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.exits_at_start"}}}}}
    with pytest.raises(CapabilityInitError, match=r"^capability 'demo.exits_at_start' could not initialise: SystemExit: 3$"):
        run_manifest(doc, [ExitsAtStart])
