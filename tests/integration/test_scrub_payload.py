"""Defect 12 of issue 13: an exception quoting a value the capability got through its payload
is redacted before it reaches the trace, ``ontoflow.last_failure`` and the journal (real daemon,
real worker process, the journal file's bytes read back)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import RunStatus, RunTrace, Show, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import REPO, Daemon, _env
from tests.integration.scrub_capabilities import LEAK_ID, manifest

pytestmark = pytest.mark.anyio

CAPS = Path(__file__).with_name("scrub_capabilities.py")
TOKEN = "payload-token-Zq81-not-an-input"
DSN = "postgres://db.internal/ledger-Wk27"


async def test_a_payload_value_quoted_by_an_exception_is_redacted_everywhere(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    daemon = Daemon(address, journal, tmp_path / "d.log", "--capabilities", str(CAPS))
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--capabilities", str(CAPS),
         "--no-builtins", "--log-file", str(tmp_path / "w.log")],
        cwd=REPO, env=_env(tmp_path / "w.audit"), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        await daemon.ready()
        async with open_client(address) as client:
            inputs = {"t.label": "one", "t.token": TOKEN, "t.conf": {"dsn": DSN}}
            accepted = await request(client, Submit(manifest=manifest(), inputs=inputs))
            assert isinstance(accepted, SubmitAccepted)
            ended = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=60)
            assert isinstance(ended, RunStatus) and ended.status == "failed"
            shown = await request(client, Show(run_id=accepted.run_id))
            assert isinstance(shown, RunTrace)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        daemon.terminate()

    # The step failed for the reason the capability gave, and it still reads as one.
    (step,) = [r for r in shown.trace if r["capability"] == LEAK_ID]
    error = step["error"]
    assert error is not None and "RuntimeError: step <redacted> could not use" in error  # t.label is an input
    for seen in (error, str(shown.context["ontoflow.last_failure"]), str(ended.context["ontoflow.last_failure"])):
        assert f"<<{TOKEN}>>" not in seen and f"<<{DSN}>>" not in seen
        assert "<<<redacted>>>" in seen
    # The journal holds the run's inputs (so the values themselves), never the quoted forms.
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("j.sqlite*"))
    assert TOKEN.encode() in stored  # the journal was read: the input is in it
    assert f"<<{TOKEN}>>".encode() not in stored and f"<<{DSN}>>".encode() not in stored
    assert b"<<<redacted>>>" in stored
