"""Logging setup for entry points: structlog, one JSON object per line.

Library code never calls this: it logs through ``structlog.get_logger()``. The CLI, the
daemon, ``bench/`` and test fixtures call ``configure_logging`` once at start.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from typing import TextIO, cast

import structlog

from ontoflow.runtime.errors import ConfigError

__all__ = ["configure_logging", "log_file"]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

# The file opened by the last call, closed when logging is reconfigured or at exit.
_open_file: TextIO | None = None
# Its path, for child processes that log to the same file (``log_file``).
_open_path: str | None = None


def log_file() -> str | None:
    """The absolute path of the file this process logs to; None when it logs to a stream.

    A process that starts others (the embedded cluster's workers) passes it on, so that one
    ``--log-file`` holds the log lines of them all.
    """
    return _open_path


def configure_logging(
    *,
    level: str = "info",
    json: bool = True,
    stream: TextIO | None = None,
    file: str | os.PathLike[str] | None = None,
) -> None:
    """Configure structlog for the whole process.

    Events carry the context bound with ``structlog.contextvars`` (merged first), the level
    and an ISO-8601 UTC timestamp; they are rendered as one JSON object per line, or for a
    human when ``json`` is False.

    Args:
        level: the lowest level written: debug, info, warning, error or critical.
        json: JSON lines when True; a console rendering otherwise.
        stream: where to write when no ``file`` is given; ``sys.stderr`` (looked up at call
            time) by default, because stdout carries the command's own answer.
        file: a path to append to (created if missing, line-buffered); wins over ``stream``.

    Raises:
        ConfigError: when ``level`` is unknown or ``file`` cannot be opened.
    """
    global _open_file, _open_path
    numeric = _LEVELS.get(level.lower()) if isinstance(level, str) else None
    if numeric is None:
        raise ConfigError(f"log level must be one of {', '.join(_LEVELS)}")
    if file is not None:
        try:
            target = cast(TextIO, _DroppingFile(open(file, "a", encoding="utf-8", buffering=1)))  # noqa: SIM115
        except OSError as exc:
            where = os.fspath(file)
            raise ConfigError(f"cannot open the log file {where!s}: {exc.strerror}") from None
    else:
        # Dropping too: a capability that closed fd 2 made every later log call raise (a worker's
        # next failing step was answered ``internal``, its error lost).
        target = cast(TextIO, _DroppingFile(stream if stream is not None else sys.stderr, stream=True))
    _close_open_file()
    if file is not None:
        _open_file = target
        _open_path = os.path.abspath(file)

    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    if json:
        processors += [
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ]
    else:
        colors = hasattr(target, "isatty") and target.isatty()
        # A traceback shows no local variables: a frame may hold a parameter value or a
        # decoded message, and none may reach a log line (rich's default shows them).
        processors.append(structlog.dev.ConsoleRenderer(colors=colors, exception_formatter=structlog.dev.plain_traceback))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=target),
        cache_logger_on_first_use=True,
    )


class _DroppingFile:
    """A log file whose failed writes (a full disk, a file removed under a FUSE mount) drop the
    line instead of raising into whatever was logging: a run must not fail because its log
    cannot be written. The first failure is said once on stderr, without the line."""

    def __init__(self, file: TextIO, *, stream: bool = False) -> None:
        self._file = file
        self._stream = stream  # stderr itself, or a stream: nowhere else to say it
        self.dropped = 0

    def write(self, text: str) -> int:
        """Write ``text``; 0 when the file refused it (counted in ``dropped``)."""
        try:
            return self._file.write(text)
        except OSError as exc:
            self._drop(exc)
            return 0

    def flush(self) -> None:
        """Flush what is buffered; a refusal is counted as a dropped line."""
        try:
            self._file.flush()
        except OSError as exc:
            self._drop(exc)

    def close(self) -> None:
        """Close the file; what it still held and cannot write is dropped."""
        try:
            self._file.close()
        except OSError as exc:
            self._drop(exc)

    def isatty(self) -> bool:
        """Whether the file is a terminal (the console renderer's colours ask)."""
        return self._file.isatty()

    def _drop(self, exc: OSError) -> None:
        self.dropped += 1
        if self.dropped == 1 and not self._stream:
            try:
                print(f"ontoflow: the log file {self._file.name} cannot be written ({exc.strerror}); "
                      "its log lines are dropped", file=sys.stderr)
            except (OSError, AttributeError):  # stderr closed, or None
                pass


def _close_open_file() -> None:
    global _open_file, _open_path
    if _open_file is not None:
        _open_file.close()
        _open_file = None
        _open_path = None


atexit.register(_close_open_file)
