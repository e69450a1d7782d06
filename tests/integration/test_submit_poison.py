"""One client's Submit must never wedge the journal for everyone.

A ``deadline_ms`` past what SQLite's INTEGER holds (``2**63 - 1``, msgspec accepts ints up
to ``2**64 - 1``) is accepted by the client handler; the run's ``deadline_at_ms`` (now + it)
then overflows in the journal's commit (``OverflowError``, not an ``sqlite3.Error``). The
commit is retried for ever with the same batch, so from then on the daemon answers every
submit, cancel and answer with ``unavailable: journal`` until it is restarted: one request
from any client disables it (found probing a live daemon with raw frames).

``RunCommands.submit`` (``actors/orchestrator/_run_commands.py``) refuses a ``deadline_ms``
past ``protocols.client.MAX_DEADLINE_MS`` (ten years) as it refuses one below 1, answered
``invalid_request``, and a client-chosen run id that ``protocols.client.run_id_problem``
finds wrong.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Error, ListRuns, RunList, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.daemon import DaemonConfig, serve_daemon
from tests.integration.durable_capabilities import manifest

pytestmark = pytest.mark.anyio


async def test_a_deadline_past_sqlites_integer_is_refused_and_the_daemon_goes_on(tmp_path: Path) -> None:
    config = DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", journal=str(tmp_path / "j.sqlite"), announce=False,
                          capabilities=["tests.integration.durable_capabilities"])
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(serve_daemon, config)
            async with open_client(config.bind) as client:
                poison = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 1}, deadline_ms=2**63 - 1),
                                       timeout_s=10)  # before: no answer (its commit never succeeded)
                after = await request(client, Submit(manifest=manifest(1), inputs={"t.value": 2}), timeout_s=10)
                listed = await request(client, ListRuns())
            tg.cancel_scope.cancel()
    assert isinstance(listed, RunList)  # reads are answered either way
    assert isinstance(poison, Error) and poison.code == "invalid_request" and "deadline_ms" in poison.message
    assert isinstance(after, SubmitAccepted), after  # before: Error(unavailable, "journal: ... disk full?")


async def test_a_client_chosen_run_id_that_is_empty_or_huge_is_refused(tmp_path: Path) -> None:
    """``Submit.run_id`` lets a client choose the id. An empty one was accepted (then
    ``ontoflow status ''`` is the run), so was a 100,000-character one (journaled, indexed,
    and echoed back whole in every ``unknown_run`` error), and ``../../etc``."""
    config = DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", journal=str(tmp_path / "j.sqlite"), announce=False,
                          capabilities=["tests.integration.durable_capabilities"])
    replies = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(serve_daemon, config)
            async with open_client(config.bind) as client:
                for i, run_id in enumerate(["", "x" * 100_000, "../../etc"]):
                    replies.append(await request(client, Submit(manifest=manifest(1), inputs={"t.value": i}, run_id=run_id),
                                                 timeout_s=10))
            tg.cancel_scope.cancel()
    for reply in replies:
        assert isinstance(reply, Error) and reply.code == "invalid_request" and "run_id" in reply.message, reply


async def test_an_idempotency_key_that_is_empty_or_huge_is_refused_without_quoting_it(tmp_path: Path) -> None:
    """A 1 MB key was journaled and indexed whole, and an idempotency_conflict quoted it back."""
    config = DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", journal=str(tmp_path / "j.sqlite"), announce=False,
                          capabilities=["tests.integration.durable_capabilities"])
    replies = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(serve_daemon, config)
            async with open_client(config.bind) as client:
                for i, key in enumerate(["", "k" * 1_000_000, "k" * 256]):
                    replies.append(await request(client, Submit(manifest=manifest(1), inputs={"t.value": i},
                                                                idempotency_key=key), timeout_s=10))
            tg.cancel_scope.cancel()
    for reply in replies[:2]:
        assert isinstance(reply, Error) and reply.code == "invalid_request", reply
        assert "idempotency_key must be 1 to 256 characters" in reply.message and "kkk" not in reply.message
    assert isinstance(replies[2], SubmitAccepted), replies[2]
