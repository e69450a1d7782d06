"""Fixtures shared by the whole suite: anyio on asyncio, structlog captured per test, and the
figures tests measure for the README."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
import structlog


@pytest.fixture
def anyio_backend() -> str:
    """pyzmq's async sockets are asyncio sockets: run anyio on the asyncio backend only."""
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def _no_settings_of_the_caller(tmp_path_factory: pytest.TempPathFactory):
    """The suite reads no setting of whoever runs it, in this process or in the commands it
    starts: no ``ONTOFLOW_*`` variable (``ONTOFLOW_FIGURES``, the suite's own, is kept), and
    empty configuration and state folders instead of the user's (a ``ONTOFLOW_CONNECT`` or a
    ``~/.config/ontoflow/config.toml`` changed what a test's ``ontoflow`` did, and session memory
    under ``~/.local/state`` was shared by every run of the suite)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("ONTOFLOW_") and n != "ONTOFLOW_FIGURES"]:
            patch.delenv(name)
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
        yield


@pytest.fixture(autouse=True)
def _reset_structlog():
    """Each test starts with structlog's defaults, so capture_logs() sees every event."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


class Figures:
    """The figures tests measure for the README (soak counts, RSS), gathered over a session.

    A test records ``figures.record(name, key=value, ...)``; the session's terminal summary
    lists them, and writes them as JSON to the file ``$ONTOFLOW_FIGURES`` names (``make soak``
    sets it), so a README table is copied from what the tests measured, not typed.
    """

    def __init__(self) -> None:
        self.recorded: dict[str, dict] = {}

    def record(self, name: str, **values: object) -> None:
        """Keep ``values`` under ``name`` (a later record of the same name adds to it)."""
        self.recorded.setdefault(name, {}).update(values)


_FIGURES = Figures()


@pytest.fixture
def figures() -> Figures:
    """The session's figure recorder (see ``Figures``)."""
    return _FIGURES


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001 (pytest's hook signature)
    """List the figures recorded and write them where ``$ONTOFLOW_FIGURES`` says."""
    if not _FIGURES.recorded:
        return
    terminalreporter.section("figures")
    for name, values in sorted(_FIGURES.recorded.items()):
        terminalreporter.write_line(f"{name}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
    target = os.environ.get("ONTOFLOW_FIGURES")
    if target:
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "exit_status": int(exitstatus),
               "figures": _FIGURES.recorded}
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        terminalreporter.write_line(f"figures written to {path}")
