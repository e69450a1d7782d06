"""What a local cluster's startup timeout says when its worker processes were crashing."""

from __future__ import annotations

import anyio
import pytest

from ontoflow.runtime.actor import ChildSpec, Supervisor
from ontoflow.runtime.embedded import _restarted

pytestmark = pytest.mark.anyio


async def test_a_startup_timeout_names_the_workers_that_were_restarted() -> None:
    # On a busy machine a worker that crashes at every start can use the whole startup window
    # before its supervisor gives up: the timeout's error must still say which one crashed.
    crashes = {"worker-0": 0}
    restarted_twice = anyio.Event()

    async def crashing() -> None:
        crashes["worker-0"] += 1
        if crashes["worker-0"] == 3:
            restarted_twice.set()
            await anyio.sleep_forever()
        raise RuntimeError("cannot reach the database")

    async def healthy() -> None:
        await anyio.sleep_forever()

    supervisor = Supervisor([ChildSpec("worker-0", crashing), ChildSpec("worker-1", healthy)],
                            max_restarts=10, name="local-workers")
    assert _restarted(supervisor) == ""
    async with anyio.create_task_group() as tg:
        await tg.start(supervisor.run)
        with anyio.fail_after(5):
            await restarted_twice.wait()
        said = _restarted(supervisor)
        await supervisor.stop()
    assert said == " (restarts after a crash: worker-0 2 times; its error is above)"
    assert "database" not in said
    assert _restarted(None) == ""
