"""The ``ontoflow`` parser and ``main``: one place where the verb groups are joined.

A verb group is a module with ``register(subparsers)``, which adds its sub-commands with
``set_defaults(handler=fn)``; ``fn(args) -> int`` returns the exit code and reports errors
with ``_shared.fail``. A sub-command that reads a section of the configuration file says
which with ``set_defaults(config_section="client")`` (or ``daemon``, ``worker``). Joining a
group is one line in :data:`COMMAND_GROUPS`.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import stat
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

from ontoflow.runtime.cli import _completion
from ontoflow.runtime.cli._client import LOOP
from ontoflow.runtime.cli._config import ask_defaults, edge_defaults, find_config, load_config, section_defaults
from ontoflow.runtime.cli._shared import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    StderrLog,
    fail,
    json_errors,
    set_json_errors,
)
from ontoflow.runtime.cli._signals import EXIT_TERMINATED, Terminated
from ontoflow.runtime.documents import open_to_write
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.logging import configure_logging
from ontoflow.runtime.loop import entry_options

__all__ = ["COMMAND_GROUPS", "build_parser", "main"]

#: The modules that add verbs, in the order ``ontoflow --help`` lists them.
COMMAND_GROUPS: tuple[str, ...] = (
    "ontoflow.runtime.cli._local",    # run, worker
    "ontoflow.runtime.cli._plans",    # plan run, pipeline check|compile|run
    "ontoflow.runtime.cli._daemon",   # daemon
    "ontoflow.runtime.cli._runs",     # submit, status, cancel, watch
    "ontoflow.runtime.cli._answer",   # answer
    "ontoflow.runtime.cli._queries",  # runs, show, workers
    "ontoflow.runtime.cli._keys",     # keys generate
    "ontoflow.runtime.cli._replay",   # replay
    "ontoflow.runtime.cli._intents",  # ask, intents eval
    "ontoflow.runtime.cli._chat",     # chat
    "ontoflow.runtime.cli._check",    # check, graph
)


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors reported like every other error (JSON with --json).

    Attributes:
        verbs: the top-level sub-commands by name (set by ``build_parser``).
    """

    verbs: dict[str, argparse.ArgumentParser] = {}

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops a write that fails: `--help > /dev/full` and `--version | true` exited
        # 0 with their answer lost. On stdout the failure goes to main, as every verb's does.
        if message and file is sys.stdout:
            file.write(message)
        else:
            super()._print_message(message, file)

    def error(self, message: str) -> NoReturn:
        if not json_errors():
            self.print_usage(sys.stderr)
        verb = self.prog.removeprefix("ontoflow").strip()  # "run", "keys generate"; "" at the top
        sys.exit(fail(f"{verb}: {message}" if verb else message, EXIT_INVALID, kind="usage"))


def _version() -> str:
    try:
        return version("ontoflow")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def build_parser() -> _Parser:
    """The whole ``ontoflow`` parser: every group of :data:`COMMAND_GROUPS`, and ``completion``."""
    parser = _Parser(prog="ontoflow", description="Deterministic capability orchestration.")
    parser.add_argument("--version", action="version", version=f"ontoflow {_version()}")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="a TOML configuration file (default: ./ontoflow.toml, else $XDG_CONFIG_HOME/ontoflow/config.toml)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_GROUPS:
        importlib.import_module(name).register(sub)
    _completion.register(sub, parser)
    parser.verbs = dict(sub.choices)
    return parser


def _apply_config(parser: _Parser, argv: Sequence[str]) -> None:
    """Make the config file's and the environment's settings the defaults of their verbs.

    Flags still win (argparse only uses a default when the flag is absent), so the order is
    flags > environment > file > built-in defaults.

    ``--config`` is read by ``parser`` itself, as the command reads it (``--conf FILE`` too:
    a pre-parser of its own took no abbreviation, so the file the command accepted went unread).

    Raises:
        ConfigError: when the file is missing (``--config``) or invalid.
    """
    config = load_config(find_config(getattr(parser.parse_args(argv), "config", None)))
    for verb in parser.verbs.values():
        section = verb.get_default("config_section")
        if section is not None:
            verb.set_defaults(**section_defaults(config, section))
        if verb.get_default("edge_adapters") is not None:  # a verb with --intent-adapter reads [edge]
            verb.set_defaults(**edge_defaults(config))
        if verb.get_default("ask_timeout") is not None:  # ask and chat: [client] ask-timeout
            verb.set_defaults(**ask_defaults(config))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ontoflow`` command line; returns the exit code.

    Exit codes and error output: see ``_shared``.
    """
    _open_standard_streams()
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing, so that a usage error is already reported in the right format.
    set_json_errors("--json" in args_list)
    try:
        try:
            code = _main(args_list)
        except SystemExit as done:  # --help, --version, a usage error: the answer is flushed too
            raise SystemExit(_flushed(done.code)) from None
        # Flushed here, where a failure is reported (at exit it was a traceback, or nothing).
        # Inline, not _flushed: a call would add this file to a run's path (bench.run_path).
        try:
            sys.stdout.flush()
        except OSError as exc:
            return _unwritten(exc)
        return code
    except KeyboardInterrupt as stopped:  # a Terminated (SIGTERM, ``_signals``) too: 143
        return EXIT_TERMINATED if isinstance(stopped, Terminated) else EXIT_INTERRUPTED
    except BrokenPipeError:
        return _stdout_closed()
    except BaseExceptionGroup as group:  # a task group wraps what its tasks raised
        if group.split(BrokenPipeError)[0] is not None:
            return _stdout_closed()
        if group.split(Terminated)[0] is not None:
            return EXIT_TERMINATED
        if group.split(KeyboardInterrupt)[0] is not None:
            return EXIT_INTERRUPTED
        raise
    except OSError as exc:  # an answer stdout would not take (a write that failed mid-way)
        if not _from_stdout(exc):
            raise
        return _unwritten(exc)


def _main(argv: list[str]) -> int:
    parser = build_parser()
    # Parsed twice: once to learn the verb and --config as argparse reads them (a usage error,
    # --help and --version end here, in the house's format), then with the file's defaults.
    args = parser.parse_args(argv)
    reads = getattr(args, "config_section", None) or getattr(args, "edge_adapters", None) is not None
    # A --config given to a verb no section serves (run, check, replay...) is read too: it was
    # ignored, so `--config missing.toml run` or a file with a typo ran as if all were well.
    named = getattr(args, "config", None) is not None and getattr(args, "command", None) != "completion"
    if reads or named:
        try:  # only a verb that reads the file fails on it (not --version, completion)
            _apply_config(parser, argv)
        except ConfigError as exc:
            return fail(str(exc))
        args = parser.parse_args(argv)
    set_json_errors(bool(getattr(args, "json", False)))
    try:
        held = _refuse_unread_pipe(getattr(args, "log_file", None))
        try:
            # A verb without ``common_options`` (a group that forgot them) logs warnings to stderr.
            configure_logging(level=getattr(args, "log_level", "warning"), file=getattr(args, "log_file", None),
                              stream=StderrLog())
        finally:
            if held is not None:  # closed once the log has its own writer: its reader saw no end
                os.close(held)
    except ConfigError as exc:
        return fail(str(exc))
    LOOP.update(entry_options())  # the process's loop and collector, chosen once
    # No flag takes an integer past 64 bits: a daemon given one (--heartbeat-ms) started, then
    # stopped serving at its first worker, as the Welcome carrying it failed to encode.
    culprit = _unsendable_argument(parser, args, ints_only=True)
    if culprit is not None:
        return fail(f"{culprit[0]}: {culprit[1]}")
    try:
        return args.handler(args)
    except (UnicodeEncodeError, OverflowError, BaseExceptionGroup) as exc:
        # A message to a daemon is encoded only as it leaves: an argument holding bytes that
        # are no UTF-8 (argv keeps them as surrogates) or an integer past 64 bits failed there,
        # with a traceback. Named as the usage error it is; anything else goes on up.
        culprit = _unsendable_argument(parser, args) if _from_encoding(exc) else None
        if culprit is None:
            raise
        return fail(f"{culprit[0]}: {culprit[1]}")


def _refuse_unread_pipe(log_file: str | None) -> int | None:
    """Refuse a ``--log-file`` that is a named pipe no program reads within the pipe wait
    (``ONTOFLOW_PIPE_WAIT_S``, 5 s by default): opening it to write waited for a reader for
    ever, before the verb began, printing nothing.

    Returns:
        A descriptor open on the file, for the caller to close once the log has opened its own
        (closed before, the pipe's reader would see its end); None when there is none.

    Raises:
        ConfigError: naming the file.
    """
    if not log_file:
        return None
    try:
        return open_to_write(log_file)
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # ONTOFLOW_PIPE_WAIT_S is no wait (os.open never says EINVAL here)
            raise ConfigError(f"--log-file {log_file}: {exc.strerror}") from None
        if exc.errno != errno.ENXIO:
            return None  # missing, a folder...: configure_logging names it
        if _is(log_file, stat.S_ISFIFO):  # no program read it within the wait: the text says so
            what = exc.strerror
        elif _is(log_file, stat.S_ISSOCK):
            what = "is a socket, not a file"
        else:  # a device with nothing behind it (/dev/tty without a terminal)
            what = f"cannot open it: {exc.strerror}"
        raise ConfigError(f"--log-file {log_file}: {what}") from None


def _is(path: str, kind: Callable[[int], bool]) -> bool:
    """Whether ``path`` is of ``kind`` (``stat.S_ISFIFO``...); False when it cannot be looked at."""
    try:
        return kind(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _from_encoding(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return exc.split((UnicodeEncodeError, OverflowError))[0] is not None
    return True


def _unsendable_argument(parser: argparse.ArgumentParser, args: argparse.Namespace, *,
                         ints_only: bool = False) -> tuple[str, str] | None:
    """The flag (or positional) of the first argument no message can carry, and why; None
    when every argument can be sent (``ints_only``: only integers are looked at)."""
    for dest, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            why = None
            if isinstance(item, str) and not ints_only:
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    why = "not valid UTF-8 text"
            elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**63:  # a C long
                why = "too large (past 64 bits)"
            if why is not None:
                return _flag_of(parser, dest) or dest, why
    return None


def _flag_of(parser: argparse.ArgumentParser, dest: str) -> str | None:
    """How the command line spells the argument stored in ``dest`` (searched through the verbs)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found = _flag_of(sub, dest)
                if found is not None:
                    return found
        elif action.dest == dest:
            return action.option_strings[-1] if action.option_strings else (action.metavar or dest.upper())
    return None


def _flushed(code: Any) -> Any:
    """Flush stdout: ``code`` when the answer was written, else the exit code of the failure."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        return _unwritten(exc)
    return code


def _unwritten(exc: OSError) -> int:
    """stdout did not take the answer: a closed pipe ends quietly (141), anything else (a full
    disk or /dev/full, an I/O error) is said (exit 1)."""
    if isinstance(exc, BrokenPipeError):
        return _stdout_closed()
    _stdout_closed()  # the interpreter's last flush would fail again
    return fail(f"cannot write the answer to stdout: {exc.strerror or exc}", EXIT_FAILED, kind="output")


#: What a write to stdout fails with besides EPIPE: a full disk or /dev/full, an I/O error, a
#: quota, a file past its size limit.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG})


def _from_stdout(exc: OSError) -> bool:
    """Whether ``exc`` is a failed write of the answer: a write error naming no file (an
    error opening or reading a file names it, and each verb reports those itself)."""
    return exc.errno in _WRITE_ERRNOS and exc.filename is None


def _open_standard_streams() -> None:
    """Point a standard descriptor the process started without (``ontoflow runs >&-``) at
    /dev/null. Left closed, the first socket took its number, and the event loop aborted the
    process (SIGABRT) as it closed a descriptor it thought was stdin, stdout or stderr; with
    stderr closed, errors were printed on stdout."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115 - the process's own


def _stdout_closed() -> int:
    """The reader of stdout went away (``ontoflow runs | head``): stop quietly.

    stdout is pointed at /dev/null so that the interpreter's last flush at exit does not
    raise again (the Python documentation's recipe for SIGPIPE).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE
