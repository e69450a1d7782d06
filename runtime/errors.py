"""Errors of the runtime kernel.

The hierarchy::

    KernelError
    ├── ActorDeadError               an actor is stopped; a tell/ask cannot be delivered
    ├── ChildProcessCrashed          a supervised OS process exited non-zero or by a signal
    │   └── ChildCannotStart         ... having said it cannot start: not restarted
    ├── RestartIntensityExceeded     a supervisor's children crashed too often; it gives up
    ├── TransportError               a socket could not be bound, connected or configured
    ├── ConfigError                  a command-line or config value is invalid
    ├── AnswerBodyError              an HTTP answer's body cannot be read within its bound
    │   ├── AnswerTooLargeError      it is (or says it is) larger than the bound
    │   └── AnswerEncodingError      its content-encoding is not read, or it is not what it says
    ├── StartupError                 local workers did not register in time
    └── CapabilityLoadError          a capability module or file could not be loaded

Beside them, ``Interrupted`` (a ``KeyboardInterrupt``): a person's stop signal raised where the
code stood, which the capability base lets through.

anyio's own resource errors (``ClosedResourceError``, ``BrokenResourceError``,
``WouldBlock``, ``EndOfStream``) are reused as they are.
"""

from __future__ import annotations

__all__ = [
    "ActorDeadError",
    "AnswerBodyError",
    "AnswerEncodingError",
    "AnswerTooLargeError",
    "CapabilityLoadError",
    "ChildCannotStart",
    "ChildProcessCrashed",
    "ConfigError",
    "Interrupted",
    "KernelError",
    "RestartIntensityExceeded",
    "StartupError",
    "TransportError",
]


class Interrupted(KeyboardInterrupt):
    """Raised by a stop signal's handler where the code stood: a second Ctrl-C while code blocks
    the event loop (the first one's cancellation could not run). Unlike a ``KeyboardInterrupt``
    raised by a capability's own code, which fails its step, it is let through by the
    capability base and the worker host, so a person pressing Ctrl-C twice gets out."""


class KernelError(Exception):
    """Raised by the runtime kernel; the root of this package's errors."""


class ActorDeadError(KernelError):
    """Raised when a message is sent to, or a reply awaited from, an actor that has stopped."""


class ChildProcessCrashed(KernelError):
    """Raised when a supervised OS process exits with a non-zero code or is killed by a signal.

    Attributes:
        name: the child's name in its supervisor.
        returncode: the exit code; negative when a signal ended the process (``-signum``).
    """

    def __init__(self, name: str, returncode: int) -> None:
        super().__init__(f"child process {name!r} exited with code {returncode}")
        self.name = name
        self.returncode = returncode

    def __reduce__(self) -> tuple[type[ChildProcessCrashed], tuple[str, int]]:
        # Custom __init__ arguments need this to survive pickling (e.g. across processes).
        return (type(self), (self.name, self.returncode))


class ChildCannotStart(ChildProcessCrashed):
    """Raised when a supervised OS process exits non-zero having written why it cannot start
    (``runtime.actor.report_cannot_start``: a capability's constructor raised): a restart
    would fail the same way, so its supervisor does not restart it but stops and raises this.
    The message is the child's own (a worker scrubs it; it names the capability).

    Attributes:
        reason: what the child wrote, as written.
    """

    def __init__(self, name: str, returncode: int, reason: str) -> None:
        super().__init__(name, returncode)
        self.args = (reason,)
        self.reason = reason

    def __reduce__(self) -> tuple[type[ChildCannotStart], tuple[str, int, str]]:  # type: ignore[override]
        return (type(self), (self.name, self.returncode, self.reason))


class RestartIntensityExceeded(KernelError):
    """Raised when a supervisor's children crashed more than its intensity allows."""


class TransportError(KernelError):
    """Raised when a socket cannot be bound, connected or configured (the address is named)."""


class StartupError(KernelError):
    """Raised when the local workers of the embedded cluster do not register in time."""


class ConfigError(KernelError):
    """Raised when a command-line option or a configuration value is invalid."""


class CapabilityLoadError(KernelError):
    """Raised when a capability module or ``.py`` file cannot be imported or holds none."""


class AnswerBodyError(KernelError):
    """An HTTP answer's body could not be read within its bound (``runtime.http_body``); the
    message names a size or an encoding, never the content."""


class AnswerTooLargeError(AnswerBodyError):
    """The body is larger than the bound: ``declared`` is the size its ``content-length``
    announced (None when it was counted while read)."""

    def __init__(self, message: str, declared: int | None = None) -> None:
        super().__init__(message)
        self.declared = declared


class AnswerEncodingError(AnswerBodyError):
    """The body's ``content-encoding`` is not one that is read, or the body is not what it says."""
