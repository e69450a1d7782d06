"""A supervised process that says it cannot start (``report_cannot_start``) is not restarted:
its supervisor stops at once and raises ``ChildCannotStart`` with the child's words. A plain
crash is still restarted. Real ``python -c`` children."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.actor import Supervisor, process_child
from ontoflow.runtime.actor._process import CANNOT_START_ENV
from ontoflow.runtime.errors import ChildCannotStart, RestartIntensityExceeded

pytestmark = pytest.mark.anyio

SAYS = ("from ontoflow.runtime.actor import report_cannot_start; import os, sys; "
        f"assert report_cannot_start('capability x could not be made'); assert {CANNOT_START_ENV!r} not in os.environ; "
        "sys.exit(1)")


async def test_a_child_that_cannot_start_is_not_restarted_and_its_reason_is_raised() -> None:
    sup = Supervisor([process_child("w", [sys.executable, "-c", SAYS])], max_restarts=3, within_s=60.0)
    with capture_logs() as logs, anyio.fail_after(30), pytest.raises(ChildCannotStart) as raised:
        await sup.run()
    assert str(raised.value) == "capability x could not be made" and raised.value.returncode == 1
    assert sup.statistics().restarts == {"w": 0}
    assert [e["event"] for e in logs if e["event"] in ("process_started", "process_crashed")] == ["process_started"]


async def test_a_plain_crash_is_still_restarted() -> None:
    sup = Supervisor([process_child("c", [sys.executable, "-c", "raise SystemExit(1)"])], max_restarts=1, within_s=60.0)
    with anyio.fail_after(30), pytest.raises(RestartIntensityExceeded):
        await sup.run()
    assert sup.statistics().restarts == {"c": 1}


def test_without_a_supervising_parent_nothing_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from ontoflow.runtime.actor import report_cannot_start

    monkeypatch.delenv(CANNOT_START_ENV, raising=False)
    assert report_cannot_start("x") is False
    assert os.environ.get(CANNOT_START_ENV) is None
