"""A run's progress on stderr while it is long: the step in progress and the steps done.

Shown only when stderr is a terminal (nothing at all otherwise: a log file or a pipe gets no
control characters), only once the run has lasted ``delay_s`` (a short run does not flicker),
and erased when the run ends, so the answer on stdout reads as without it. Re-exported by
``_shared``, where the verbs find it.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO

import anyio

__all__ = ["DELAY_S", "ProgressLine", "describe"]

#: How long a run goes before its progress is shown.
DELAY_S = 0.5


class ProgressLine:
    """One live line on a terminal (rich's spinner), updated with :meth:`show`.

    Args:
        stream: where to draw; ``sys.stderr`` by default.
        delay_s: nothing is drawn before this much time has passed since the line was made.
    """

    def __init__(self, stream: TextIO | None = None, *, delay_s: float = DELAY_S) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self._stream, "isatty", lambda: False)())
        self._delay_s = delay_s
        self._since = time.monotonic()
        self._status: Any = None
        self.text = ""

    def show(self, text: str) -> None:
        """Draw ``text`` as the line (a no-op when not a terminal or still within the delay)."""
        self.text = text
        if not self.enabled:
            return
        elapsed = time.monotonic() - self._since
        if self._status is None:
            if elapsed < self._delay_s:
                return
            from rich.console import Console  # only on a terminal: rich costs its import time

            self._status = Console(file=self._stream, highlight=False).status("")
            self._status.start()
        from rich.markup import escape

        self._status.update(f"{escape(text)}  [dim]{elapsed:.1f} s[/dim]")

    async def keep_drawn(self, every_s: float = 0.1) -> None:
        """Redraw the last text every ``every_s`` (the clock moves while nothing else does);
        runs until cancelled."""
        while True:
            await anyio.sleep(every_s)  # a display refresh, not a synchronisation
            self.show(self.text)

    def close(self) -> None:
        """Erase the line (the run ended); safe to call twice."""
        if self._status is not None:
            self._status.stop()
            self._status = None

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def describe(done: int, running: list[tuple[str, str]]) -> str:
    """The line's text: the steps in progress (step id and capability) and how many are done."""
    plural = "" if done == 1 else "s"
    if not running:
        return f"{done} step{plural} done"
    if len(running) == 1:
        step_id, capability = running[0]
        return f"running {step_id} {capability} · {done} step{plural} done"
    return f"running {len(running)} steps ({', '.join(s for s, _ in running[:4])}{', ...' if len(running) > 4 else ''}) · {done} step{plural} done"
