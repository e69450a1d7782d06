"""What ends a worker process's serving (``WorkerHost`` with ``drain_on_signals``): a stop
signal (SIGTERM, SIGINT, SIGHUP unless ignored: ``runtime.loop.stop_signals``)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import structlog

from ontoflow.runtime.loop import stop_signals

__all__ = ["StopRequests"]

log = structlog.get_logger()


class StopRequests:
    """Waits for the first request to stop a worker process, and absorbs the later ones.

    Args:
        worker_id: named in the log line (``worker_stopping``).
    """

    def __init__(self, worker_id: str) -> None:
        self._worker_id = worker_id
        self._signals: Any = None

    @contextmanager
    def listening(self) -> Iterator[None]:
        """Catch the stop signals while inside: open before anyone knows the host started, so
        none is missed; a second one while the host drains is absorbed, not fatal."""
        with anyio.open_signal_receiver(*stop_signals()) as self._signals:
            yield

    async def wait(self) -> None:
        """Return at the first stop request (inside ``listening``), logged ``worker_stopping``."""
        async for signum in self._signals:
            log.info("worker_stopping", worker_id=self._worker_id, signal=signal.Signals(signum).name)
            return
