"""Discovery of a database another program is writing: SQLite makes a reader wait (its busy
timeout) while a writer holds the lock. That wait must not hold the worker's event loop (its
heartbeats, its other steps): here the lock holder is a task on the same loop, and discovery
succeeds only if that task can release the lock while discovery waits. A lock never released
ends in an answer that says the database is busy, not that it is no SQLite database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from ontoflow.actors.synthesis import DiscoverSource, SourceNotFoundError, discover_sqlite
from ontoflow.protocols import StepContext

pytestmark = pytest.mark.anyio


def _shop(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER)")
    db.execute("INSERT INTO users VALUES (1)")
    db.commit()
    db.close()
    return path


async def test_a_locked_database_does_not_hold_the_event_loop(tmp_path: Path) -> None:
    shop = _shop(tmp_path / "shop.db")
    writer = sqlite3.connect(shop, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN EXCLUSIVE")  # readers wait for it
    results: list = []

    async def discover() -> None:
        results.append(await DiscoverSource().execute({"pipelines.request": {"source": str(shop)}}, StepContext()))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(discover)
            await anyio.lowlevel.checkpoint()  # discovery has begun (and waits on the lock, off the loop)
            writer.execute("COMMIT")  # this line runs only if the loop is free
    writer.close()
    (result,) = results
    assert result.event == "success", result.outputs
    assert [t["name"] for t in result.outputs["pipelines.discovery"]["tables"]] == ["users"]


def test_a_database_locked_for_good_says_it_is_busy(tmp_path: Path) -> None:
    shop = _shop(tmp_path / "shop.db")
    writer = sqlite3.connect(shop, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(SourceNotFoundError, match=r"shop.db is busy: another program holds it locked"):
            discover_sqlite(shop, busy_timeout_s=0.0)
    finally:
        writer.execute("COMMIT")
        writer.close()
