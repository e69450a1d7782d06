"""A capability's ``initialize()`` is bounded: one that never returns, or blocks the event loop
past the bound, stops its worker host with a ``CapabilityInitError`` naming the capability and
the bound (``ontoflow worker`` exits 1 saying so), instead of a worker that never registers and
says nothing. The capabilities started before it are shut down."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow import Capability, CapabilityMetadata
from ontoflow.actors.errors import CapabilityInitError
from ontoflow.actors.worker import DEFAULT_INIT_TIMEOUT_S, WorkerHost

pytestmark = pytest.mark.anyio

BOUND_S = 0.05
EVENTS: list[str] = []


class Fine(Capability):
    metadata = CapabilityMetadata(id="t.fine")

    async def initialize(self) -> None:
        EVENTS.append("initialize t.fine")

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def shutdown(self) -> None:
        EVENTS.append("shutdown t.fine")


class NeverReturns(Capability):
    """Awaits a connection that never answers."""

    metadata = CapabilityMetadata(id="t.never")

    async def initialize(self) -> None:
        await anyio.sleep_forever()

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None

    async def shutdown(self) -> None:
        EVENTS.append("shutdown t.never")  # never started: never shut down


class BlocksTheLoop(NeverReturns):
    """A blocking client: no await, so no cancel scope can stop it; it returns, too late."""

    metadata = CapabilityMetadata(id="t.blocks")

    async def initialize(self) -> None:
        time.sleep(BOUND_S * 3)


class WrapsTheCancellation(NeverReturns):
    """Turns the cancellation of its bound into an error of its own."""

    metadata = CapabilityMetadata(id="t.wraps")

    async def initialize(self) -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            raise ConnectionError("connect aborted") from None


@pytest.mark.parametrize("cls", [NeverReturns, BlocksTheLoop, WrapsTheCancellation],
                         ids=["awaits_forever", "blocks_the_loop", "wraps_the_cancellation"])
async def test_an_initialize_past_its_bound_stops_the_host_naming_it(cls: type[Capability]) -> None:
    EVENTS.clear()
    host = WorkerHost([Fine(), cls()], address="ipc:///nonexistent/never-connected", init_timeout_s=BOUND_S)
    # Before: run() never returned (and never registered); fail_after only guards the test.
    with anyio.fail_after(30), pytest.raises(CapabilityInitError) as raised:
        await host.run()
    capability = cls.metadata.id
    assert str(raised.value) == (f"capability {capability!r} did not initialise within {BOUND_S:g} s "
                                 "(the worker's init timeout: ontoflow worker --init-timeout-s)")
    assert EVENTS == ["initialize t.fine", "shutdown t.fine"]


async def test_an_error_raised_within_the_bound_is_still_told_as_itself() -> None:
    class Refused(NeverReturns):
        metadata = CapabilityMetadata(id="t.refused")

        async def initialize(self) -> None:
            raise ConnectionRefusedError("no database")

    host = WorkerHost([Refused()], address="ipc:///nonexistent/never-connected", init_timeout_s=60)
    with anyio.fail_after(30), pytest.raises(CapabilityInitError, match="could not initialise: ConnectionRefusedError"):
        await host.run()


def test_the_default_bound_is_generous_but_finite() -> None:
    assert WorkerHost([Fine()], address="ipc:///x").init_timeout_s == DEFAULT_INIT_TIMEOUT_S == 60.0


_CAPS = '''
import anyio
from ontoflow import Capability, CapabilityMetadata

class Hangs(Capability):
    metadata = CapabilityMetadata(id="demo.hangs_at_start")

    async def initialize(self):
        await anyio.sleep_forever()

    async def execute(self, inputs, context):
        return None
'''


_BLOCKING_CAPS = _CAPS.replace("await anyio.sleep_forever()", "__import__('time').sleep(3600)  # a blocking client")


async def test_an_initialize_blocking_the_loop_for_good_is_told_by_the_watchdog(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from ontoflow.actors.capability import _watchdog

    told = threading.Event()
    said: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def error(self, event: str, **fields: Any) -> None:
            said.append((event, fields))
            told.set()

    monkeypatch.setattr(_watchdog, "log", Log())

    class BlocksUntilTold(NeverReturns):
        metadata = CapabilityMetadata(id="t.blocks_until_told")

        async def initialize(self) -> None:
            told.wait(30)  # blocks the loop: only the watchdog thread can still speak

    host = WorkerHost([BlocksUntilTold()], address="ipc:///nonexistent/never-connected", init_timeout_s=BOUND_S)
    with pytest.raises(CapabilityInitError, match="did not initialise within"):
        await host.run()  # an embedded host: told, not ended (its process is not its own)
    assert said == [("capability_initialize_blocked", {"capability": "t.blocks_until_told", "timeout_s": BOUND_S})]


@pytest.mark.parametrize("bound", [None, "0.2", "0", "nan", "blocking"], ids=["default", "given", "zero", "nan", "blocking"])
def test_ontoflow_worker_exits_1_when_an_initialize_hangs(tmp_path: Path, bound: str | None) -> None:
    (tmp_path / "caps.py").write_text(_BLOCKING_CAPS if bound == "blocking" else _CAPS)
    blocking = bound == "blocking"
    bound = "0.2" if blocking else bound
    argv = [sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{tmp_path}/none.sock",
            "-c", "caps.py", "--no-builtins"]
    if bound is None:  # the default bound (60 s) is too long to wait for: only the option's help is checked
        ran = subprocess.run(argv + ["--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
        assert "--init-timeout-s" in ran.stdout and "default 60" in " ".join(ran.stdout.split())
        return
    ran = subprocess.run(argv + ["--init-timeout-s", bound], cwd=tmp_path, capture_output=True, text=True,
                         timeout=90, stdin=subprocess.DEVNULL)
    if bound in ("0", "nan"):
        assert ran.returncode == 2 and "argument --init-timeout-s: must be a finite number > 0" in ran.stderr, ran.stderr
        return
    # Before: the process sat there for ever, never registering, saying nothing.
    assert ran.returncode == 1, ran.stderr[-2000:]
    assert ("ontoflow: capability 'demo.hangs_at_start' did not initialise within 0.2 s "
            "(the worker's init timeout: ontoflow worker --init-timeout-s)" + (": it blocks the event loop" if blocking else "")
            ) in ran.stderr
    assert "Traceback" not in ran.stderr


# -- what a host is handed in code is checked ----------------------------------------------------


def test_two_capabilities_with_one_id_are_refused() -> None:
    # Before: the last one won, the first was never initialised nor shut down, and nothing said so.
    from ontoflow.actors.errors import CapabilityDefinitionError

    class Twin(Fine):
        pass

    with pytest.raises(CapabilityDefinitionError, match=r"^two capabilities with one id: 't\.fine'$"):
        WorkerHost([Fine(), Twin()], address="ipc:///x")


def test_metadata_of_the_wrong_type_is_refused_when_the_host_is_made() -> None:
    # Before: run() ended in a bare TypeError comparing "5" with 0, after initialising the others.
    from ontoflow.actors.errors import CapabilityDefinitionError

    class StringInterval(Fine):
        metadata = CapabilityMetadata(id="t.interval", perceive_interval_ms="5")  # type: ignore[arg-type]

    with pytest.raises(CapabilityDefinitionError, match=r"'t\.interval' has invalid metadata: .*perceive_interval_ms"):
        WorkerHost([StringInterval()], address="ipc:///x")
    with pytest.raises(CapabilityDefinitionError, match="^a worker host takes Capability instances, not the class Fine$"):
        WorkerHost([Fine], address="ipc:///x")  # type: ignore[list-item]
