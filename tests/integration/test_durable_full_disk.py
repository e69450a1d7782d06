"""A daemon whose journal is on a real 2 MiB tmpfs the test mounts: the disk fills (a filler
file, then the WAL's own growth), the daemon stays up answering ``unavailable`` and reads, a
freed disk lets it carry on by itself, and after a restart on the same journal no acknowledged
run is lost (real processes, real sockets, real SQLite)."""

from __future__ import annotations

import errno
import itertools
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow.protocols.client import Error, ListRuns, RunList, RunStatus, Status, Submit, SubmitAccepted, Workers
from ontoflow.runtime.cli import NoAnswerError, open_client, request
from tests.integration.durable_capabilities import STEP_ID, manifest
from tests.integration.durable_helpers import Daemon, Worker, journal_runs

pytestmark = pytest.mark.anyio


@pytest.fixture
def small_disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A tmpfs mounted for this test only (2 MiB; 8 MiB for a soak test, whose runs fill
    more), unmounted after it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    size = "8m" if request.node.get_closest_marker("soak") else "2m"
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(disk)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def _fill(path: Path) -> int:
    """Write ``path`` until the disk is full; returns the bytes written."""
    written = 0
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as fh:
        while True:
            try:
                written += fh.write(chunk if written % (1 << 20) < (1 << 20) - 65536 else chunk[:4096])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        try:  # the last pages a smaller write still finds
            while fh.write(b"\0" * 512):
                written += 512
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return written


async def _submit(address: str, key: str) -> Any:
    """One submit on its own connection: the reply, or None when none came within 2 s (an
    acknowledgement held behind a commit that failed; the key asks again later)."""
    async with open_client(address) as client:
        try:
            return await request(client, Submit(manifest=manifest(3), inputs={"t.value": 1}, idempotency_key=key),
                                 timeout_s=2)
        except NoAnswerError:
            return None


async def _ask(address: str, message: Any, timeout_s: float = 10) -> Any:
    async with open_client(address) as client:
        return await request(client, message, timeout_s=timeout_s)


async def _full_disk_cycles(tmp_path: Path, disk: Path, cycles: int, submitters: int, figures=None) -> None:
    """Load from ``submitters`` concurrent clients while the disk fills and frees ``cycles``
    times; then a kill -9 and a restart on the same journal: no acknowledged run lost."""
    address = f"ipc://{tmp_path}/d.sock"
    journal = disk / "j.sqlite"
    worker = Worker(address, tmp_path / "a.audit", step_s=0.01)
    daemon = Daemon(address, journal, tmp_path / "d.log")
    acknowledged: dict[str, str] = {}  # idempotency key -> run id
    unanswered: list[str] = []
    counts = {"accepted": 0, "refused": 0}
    keys = (f"k{n}" for n in itertools.count())

    async def one() -> Any:
        key = next(keys)
        reply = await _submit(address, key)
        if isinstance(reply, SubmitAccepted):
            acknowledged[key] = reply.run_id
            counts["accepted"] += 1
        elif reply is None:
            unanswered.append(key)
        else:
            assert isinstance(reply, Error) and reply.code == "unavailable", reply
            assert "temporary" in reply.message
            counts["refused"] += 1
        return reply

    async def load(stop: anyio.Event) -> None:
        while not stop.is_set():
            await one()

    async def until(name: str, more_than: int) -> None:
        with anyio.fail_after(30):
            while counts[name] <= more_than:
                await anyio.sleep(0.01)  # the loaders' answers move the counts

    try:
        await daemon.ready()
        with anyio.fail_after(20):
            while not any(STEP_ID in w.capabilities for w in (await _ask(address, Workers())).workers):
                await anyio.sleep(0.02)  # asked again: registering is the worker's move
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            for _ in range(submitters):
                tg.start_soon(load, stop)
            await until("accepted", 20)
            for _ in range(cycles):
                filler = disk / "filler"
                _fill(filler)
                await until("refused", counts["refused"] + 2)  # the WAL grows into what is left, a commit fails
                assert daemon.proc.poll() is None  # still up
                listing = await _ask(address, ListRuns(limit=5))
                assert isinstance(listing, RunList) and listing.runs
                some = next(iter(acknowledged.values()))
                assert isinstance(await _ask(address, Status(run_id=some)), RunStatus)
                filler.unlink()  # space returns: the daemon carries on by itself
                await until("accepted", counts["accepted"] + 5)
            stop.set()
        for key in unanswered:  # the clients that got no answer ask again with their key
            with anyio.fail_after(30):
                while not isinstance(reply := await _submit(address, key), SubmitAccepted):
                    assert isinstance(reply, Error) and reply.code == "unavailable", reply
                    await anyio.sleep(0.05)  # retryable: asked again
            acknowledged[key] = reply.run_id
        for run_id in acknowledged.values():
            done = await _ask(address, Status(run_id=run_id, wait=True), timeout_s=30)
            assert isinstance(done, RunStatus) and done.status == "completed", done

        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        runs = journal_runs(journal)
        lost = [r for r in acknowledged.values() if r not in runs]
        assert lost == [] and all(runs[r][0] == "completed" for r in acknowledged.values())
        assert isinstance(await _ask(address, Status(run_id=some)), RunStatus)
        log = (tmp_path / "d.log").read_text()
        assert "commit_failed" in log and "commit_recovered" in log
        print(f"full disk: {cycles} cycles, {len(acknowledged)} acknowledged runs, 0 lost, "
              f"{counts['refused']} submits answered unavailable, {len(unanswered)} acknowledged late")
        if figures is not None:
            figures.record("full_disk", cycles=cycles, acknowledged_runs=len(acknowledged), acknowledged_runs_lost=0,
                           answered_unavailable=counts["refused"], daemon_exited=0)
    finally:
        daemon.close()
        worker.close()


async def test_a_full_disk_is_survived_with_no_acknowledged_run_lost(tmp_path: Path, small_disk: Path, figures) -> None:
    await _full_disk_cycles(tmp_path, small_disk, cycles=1, submitters=4, figures=figures)


@pytest.mark.soak
async def test_full_disks_again_and_again_lose_no_acknowledged_run(tmp_path: Path, small_disk: Path, figures) -> None:
    await _full_disk_cycles(tmp_path, small_disk, cycles=10, submitters=8, figures=figures)
