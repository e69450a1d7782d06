"""A journal batch that can never be written (not a full disk: a value SQLite cannot store)
stops the orchestrator with that error instead of being retried for ever, and nothing of it
is sent or written. Real journal, real sockets, a real client."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.abc
import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols.client import ListRuns
from ontoflow.runtime.cli import open_client
from ontoflow.runtime.cli._daemon import _exit_code
from ontoflow.runtime.cli._shared import EXIT_FAILED
from ontoflow.runtime.journal import JournalBatchError, RunRow, open_journal

pytestmark = pytest.mark.anyio


async def test_an_unwritable_batch_stops_the_orchestrator_with_its_error(tmp_path: Path) -> None:
    journal = open_journal(tmp_path / "j.sqlite")
    orch = compose_orchestrator(serve_clients=True, address=f"ipc://{tmp_path}/d.sock", journal=journal,
                                tick_ms=10).orchestrator
    raised: list[BaseException] = []
    stopped = anyio.Event()

    async def serve(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            await orch.run(task_status=task_status)
        except JournalBatchError as exc:
            raised.append(exc)
        stopped.set()

    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                await tg.start(serve)
                # A row whose time is past SQLite's 64-bit INTEGER joins the next batch.
                orch.durability.submitted(RunRow(run_id="poison", source_hash="h", submitted_ms=2**70), ("h", b"{}"))
                async with open_client(orch.address) as client:
                    client.send(ListRuns(limit=1))  # any batch: its end commits
                    await stopped.wait()  # run ends once the failure stopped it (no retry loop)
        assert "cannot be written" in str(raised[0]) and "OverflowError" in str(raised[0])
        assert orch.outbox.failures == 1  # tried once, not again and again
        assert journal.run("poison") is None
    finally:
        journal.close()


def test_the_daemon_exits_1_on_an_unwritable_batch_not_3_as_for_a_corrupt_journal() -> None:
    assert _exit_code(JournalBatchError("journal j: a batch cannot be written")) == EXIT_FAILED
