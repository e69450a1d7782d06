"""A stop signal that comes after the run ended by itself changes nothing: ``run_with_progress``
(``run``, ``plan run``, ``pipeline run``) returns the run as it ended, not as interrupted.

The signal is real (``os.kill`` of this process, SIGINT), sent the moment the run's result is
in hand and before the stoppable scope is left: the window in which it used to turn a completed
run into exit 130 ("interrupted; the steps it ran are above")."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, ClassVar

import anyio
import pytest

from ontoflow import Capability, CapabilityMetadata, Result
from ontoflow.protocols import manifest_from_data
from ontoflow.runtime.cli._in_process import run_with_progress
from ontoflow.runtime.cli._signals import STOP
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                       reason="signal handlers are set in the main thread only"),
]


class Done(Capability):
    """Succeeds at once."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(id="t.stop.done", events=["success", "failure"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Result:
        return Result(event="success")


MANIFEST = {"name": "stop-after-end", "start": "main",
            "nodes": {"main": {"entry_block": "b", "blocks": {"b": {"worker": "t.stop.done", "transitions": []}}}}}


async def test_a_signal_right_after_the_run_ended_leaves_it_completed_and_not_interrupted() -> None:
    with anyio.fail_after(30), STOP.installed():  # a hang guard only
        async with open_local_cluster([Done], ["t.stop.done"], transport="inproc") as cluster:
            compiled = cluster.compile(manifest_from_data(MANIFEST))
            orchestrator = cluster.orchestrator
            result_of = orchestrator.result

            async def result_then_signal(run_id: str) -> Any:
                ended = await result_of(run_id)
                os.kill(os.getpid(), signal.SIGINT)  # the handler schedules the scope's cancel
                await anyio.sleep(0)  # a checkpoint inside the stoppable scope: the cancel lands here
                return ended

            orchestrator.result = result_then_signal  # type: ignore[method-assign]
            result, interrupted = await run_with_progress(cluster, compiled, {})
        assert STOP.stopped  # the signal did come
    assert (result.status, interrupted) == ("completed", False)
