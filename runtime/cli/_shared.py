"""What every verb of the ``ontoflow`` command shares: exit codes, errors, output.

One copy of each rule (STYLE 29): a verb reports an error with :func:`fail`, prints a JSON
answer with :func:`write_json`, a run's end with :func:`print_result`, a time with
:func:`utc`, a long run's progress with :class:`ProgressLine`; a verb that takes inputs reads
them with :func:`input_options` and :func:`gather_inputs` (``--input`` pairs by
:func:`parse_inputs`, ``--input-file`` by :func:`read_input_file`).

A run's progress goes to stderr while it is long: the step in progress and the steps done.
Shown only when stderr is a terminal (nothing at all otherwise: a log file or a pipe gets no
control characters), only once the run has lasted ``delay_s`` (a short run does not flicker),
and erased when the run ends, so the answer on stdout reads as without it.

Exit codes:

    0    done (a run completed, a query answered)
    1    a run failed or was cancelled; the daemon is busy, did not answer in time, or cannot
         write its journal for now (``unavailable``: temporary, retry later)
    2    invalid input: a manifest, an input, a capability, a flag, a config file (nothing ran)
    3    the daemon's journal is corrupt or from a newer version (it never resets a journal)
    7    not found: no run of that id (on the daemon, or in the journal ``replay`` and
         ``graph --run`` read); the JSON error's code is ``unknown_run``
    78   ``worker``: a capability cannot start for good (its constructor raised, or its
         ``initialize()`` raised an error that is not transient): a restart fails the same way
         (BSD sysexits' EX_CONFIG; systemd: ``RestartPreventExitStatus=78``)
    130  interrupted (Ctrl-C)
    141  stdout was closed early (``ontoflow runs | head``), as for a process killed by SIGPIPE

Errors go to stderr: ``ontoflow: MESSAGE`` in text mode; with ``--json``, one JSON object
``{"error": {"code": CODE, "message": MESSAGE}}`` on one line. The exit code is the same in
both modes. stdout carries only the command's answer. A note (the command goes on) is
``ontoflow: MESSAGE`` too, or with ``--json`` one ``{"note": MESSAGE}`` line, so that every line
of stderr is JSON then (as the log lines are). A message echoes what the user typed or a
daemon sent: control characters in it are shown escaped (``\\x1b``) and a line longer than
:data:`MAX_LINE` is cut, so that an error can neither drive the terminal nor flood it.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TextIO

import anyio
import msgspec

from ontoflow.protocols.json_text import json_text
from ontoflow.runtime.cli._inputs import gather_inputs, parse_inputs
from ontoflow.runtime.cli._options import (
    BUILTIN_CAPABILITIES,
    KEY,
    capability_specs,
    common_options,
    first_error,
    input_options,
    logging_options,
    read_input_file,
)

__all__ = [
    "BUILTIN_CAPABILITIES",
    "DELAY_S",
    "EXIT_BROKEN_PIPE",
    "EXIT_CANNOT_START",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_JOURNAL",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "ProgressLine",
    "StderrLog",
    "capability_specs",
    "common_options",
    "describe",
    "error_code",
    "fail",
    "first_error",
    "gather_inputs",
    "input_options",
    "json_errors",
    "logging_options",
    "note",
    "parse_inputs",
    "print_line",
    "print_result",
    "read_input_file",
    "safe_text",
    "set_json_errors",
    "utc",
    "write_json",
]

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_JOURNAL = 0, 1, 2, 3
#: ``ask``: the answer is a question back; ``daemon``: another process holds the journal.
EXIT_CLARIFICATION, EXIT_JOURNAL_LOCKED = 4, 5
#: ``submit --wait``, ``status --wait``, ``watch``: ``--timeout`` passed (the run goes on).
EXIT_TIMEOUT = 6
#: No run of that id, whatever the verb (it was 1, 2 for ``replay``, 3 for ``graph``; 1 also
#: means "the run failed", which a script polling ``status`` must tell from "no such run").
EXIT_NOT_FOUND = 7
#: ``worker``: a capability cannot start for good, so a supervisor must not restart it (it
#: exited 1 as a crash does, and systemd's Restart=on-failure started it again forever).
EXIT_CANNOT_START = 78
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141

# The ``code`` of a JSON error when the verb gives none: named after the exit code.
_CODES = {EXIT_FAILED: "failed", EXIT_INVALID: "invalid", EXIT_JOURNAL: "journal", EXIT_INTERRUPTED: "interrupted",
          EXIT_CLARIFICATION: "clarification", EXIT_JOURNAL_LOCKED: "journal_locked", EXIT_TIMEOUT: "timeout",
          EXIT_NOT_FOUND: "unknown_run", EXIT_CANNOT_START: "cannot_start"}


class _ErrorFormat:
    json = False  # how fail prints: set once by ``main`` from the parsed ``--json``


def set_json_errors(on: bool) -> None:
    """Print errors as one JSON object (``--json``) or as ``ontoflow: MESSAGE`` lines."""
    _ErrorFormat.json = on


def json_errors() -> bool:
    """Whether errors are printed as JSON (``--json`` was given)."""
    return _ErrorFormat.json


def error_code(exit_code: int) -> str:
    """The JSON error ``code`` a verb that names none reports for ``exit_code``."""
    return _CODES.get(exit_code, "error")


def fail(message: str, code: int = EXIT_INVALID, *, kind: str | None = None) -> int:
    """Report an error on stderr and return the exit code to return from the verb.

    Args:
        message: what went wrong and where (never a secret, never a parameter's value);
            shown through :func:`safe_text`.
        code: the exit code (see the module docstring).
        kind: the JSON error's ``code``, e.g. a daemon's ``invalid_manifest``; by default
            named after the exit code (``invalid``, ``failed``...).

    Returns:
        ``code``.
    """
    text = safe_text(message)
    if _ErrorFormat.json:
        _write_err(msgspec.json.encode({"error": {"code": kind or error_code(code), "message": text}}).decode())
    else:
        _write_err(f"ontoflow: {text}")
    return code


def note(message: str) -> None:
    """A note for the user on stderr (not an error: the command goes on); one JSON line
    ``{"note": MESSAGE}`` with ``--json``."""
    text = safe_text(message)
    _write_err(msgspec.json.encode({"note": text}).decode() if _ErrorFormat.json else f"ontoflow: {text}")


def _write_err(line: str) -> None:
    # None when the process started with fd 2 closed: print(file=None) wrote errors on stdout.
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except OSError:
        # stderr is a pipe its reader closed (or a full disk): the message cannot be said, but
        # the error's own exit code still can. A BrokenPipeError let through ended the command
        # as a closed stdout does (141), whatever the error was.
        _stderr_to_devnull()


class StderrLog:
    """stderr as the log's stream: a line stderr will not take (its reader closed the pipe, a
    full disk) is dropped and stderr pointed at /dev/null, instead of raising into whatever
    was logging (a run then ended 141, as if stdout had been closed). ``sys.stderr`` is looked
    up at each write."""

    def write(self, text: str) -> int:
        """Write ``text`` on stderr; 0 when it was dropped."""
        try:
            return sys.stderr.write(text)
        except OSError:
            _stderr_to_devnull()
            return 0

    def flush(self) -> None:
        """Flush stderr; what it cannot take is dropped."""
        try:
            sys.stderr.flush()
        except OSError:
            _stderr_to_devnull()

    def isatty(self) -> bool:
        """Whether stderr is a terminal (the console renderer's colours ask)."""
        return sys.stderr.isatty()


def _stderr_to_devnull() -> None:
    """Point fd 2 at /dev/null: what is left in stderr's buffer, the log lines still to come
    and the interpreter's last flush go nowhere instead of failing again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stderr.fileno())
    except (OSError, ValueError):  # a stderr with no descriptor (replaced in-process): nothing to point
        pass
    finally:
        os.close(devnull)


#: The longest line of a message shown whole: a 100,000-character argument echoed in an
#: error filled the terminal with it.
MAX_LINE = 1_000

# C0 controls but newline and tab, DEL, C1 controls, the bidi overrides and isolates (the text
# shown is not the text written; the joiners and marks of real scripts are kept), and the
# surrogates argv keeps for bytes not UTF-8 (no UTF-8 stream nor JSON takes them).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(found: re.Match[str]) -> str:
    code = ord(found[0])
    if 0xDC80 <= code <= 0xDCFF:  # a byte argv could not decode, kept as a surrogate
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """``text`` fit to show on a terminal: control characters escaped (``\\x1b``; newlines
    and tabs kept), and each line cut at :data:`MAX_LINE` characters, saying how long it was."""
    text = _UNSAFE.sub(_escaped, text)
    if len(text) <= MAX_LINE:
        return text
    return "\n".join(line if len(line) <= MAX_LINE else f"{line[:MAX_LINE]}... ({len(line):,} characters)"
                     for line in text.split("\n"))


def write_json(value: Any) -> None:
    """Print ``value`` as one JSON line on stdout (Structs as maps; JSON escapes controls; a map
    key JSON cannot hold, such as a capability's ``None``, as its JSON text)."""
    sys.stdout.write(json_text(value) + "\n")


def utc(ms: int | None) -> str:
    """A Unix time in milliseconds as ISO 8601 UTC (``2026-11-23T01:02:03.456Z``); ``-`` for none."""
    if not ms:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (ValueError, OverflowError, OSError):  # past year 9999 or before 1 (a damaged journal row)
        return f"{ms} ms"


def _get(entry: Any, name: str, default: Any = None) -> Any:
    # Trace entries are Structs in-process and maps once they crossed the wire.
    if isinstance(entry, Mapping):
        return entry.get(name, default)
    return getattr(entry, name, default)


def trace_record(entry: Any) -> dict[str, Any]:
    """One step of a trace as the JSON of ``ontoflow run`` shows it."""
    return {
        "step_id": _get(entry, "step_id", ""),
        "node": _get(entry, "node", ""),
        "block": _get(entry, "block", ""),
        "capability": _get(entry, "capability", ""),
        "event": _get(entry, "event", ""),
        "action": _get(entry, "action"),
        "attempt": _get(entry, "attempt", 1),
        "duration_ms": round(_get(entry, "duration_ms", 0.0) or 0.0, 3),
        "retries": _get(entry, "retries", 0),
        "reason": _get(entry, "reason"),
        "error": _get(entry, "error"),
        "prerequisite_of": _get(entry, "prerequisite_of"),
    }


def print_result(result: Any, *, as_json: bool) -> None:
    """Print a run's end: a ``RunResult`` (in-process) or a ``RunStatus`` / ``RunTrace`` (a daemon's).

    Text mode: the status and times, the error, the path (one line per step) and the context.
    JSON mode: one object with ``run_id``, ``status``, ``error``, ``context``, ``trace``.
    Text from the run (its id, errors, names) goes through :func:`print_line`.
    """
    trace = [trace_record(e) for e in result.trace]
    context: dict[str, Any] = result.context
    if as_json:
        write_json({"run_id": result.run_id, "status": result.status, "error": result.error, "context": context, "trace": trace})
        return
    started, ended = result.started_ms, result.ended_ms
    took = f" in {ended - started} ms" if started and ended else ""
    print_line(f"run {result.run_id} {result.status}{took}")
    print(f"started {utc(started)}  ended {utc(ended)}")
    if result.error:  # continuation lines indented: an error's text comes from a capability
        print_line("error: " + result.error.replace("\n", "\n       "))
    print("path:")
    for t in trace:
        where = f"{t['node']}.{t['block']}" if t["node"] else str(t["block"] or t["capability"])
        if t["prerequisite_of"]:  # its capability, not its block's; no route: the block's step comes next
            where += f" (prerequisite {t['capability']})"
        action = t["action"] or ("-" if t["prerequisite_of"] else "end")
        extra = f", {t['retries']} retries" if t["retries"] else ""
        print_line(f"  {t['step_id']:>4}  {where:<32} {t['event']:<12} -> {action:<18} {t['duration_ms']:8.2f} ms{extra}")
        if t["error"]:  # every line of it under its step: a newline in it forged a line of the path
            print_line("        " + t["error"].replace("\n", "\n        "))
    print("context:")
    for key in sorted(context):
        text = json_text(context[key])
        if len(text) > 100:
            text = text[:97] + "..."
        print_line(f"  {key} = {text}")


def print_line(line: str) -> None:
    """Print a line of an answer on stdout through :func:`safe_text`: what a run, a daemon or
    a worker (its id, its host name) wrote there could otherwise drive the reader's terminal."""
    print(safe_text(line))


# -- a run's progress on stderr (see the module docstring) --------------------------------------

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
