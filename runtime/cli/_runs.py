"""The client verbs about one run: ``submit``, ``status``, ``cancel``, ``watch``.

A composition root (it may import ``actors``). Exit codes: 0 done (a waited run completed), 1
failed, cancelled, busy or no answer in time, 2 invalid input, 6 ``--timeout`` passed before
the run ended (the run goes on). A run's end prints as for ``ontoflow run``: its path and its
context, times in UTC. Waiting (``submit --wait``, ``status --wait``, ``watch``) survives a
daemon restart (see ``_client``); the run id is on stderr as soon as a submit is accepted, and
an interrupted wait says how to follow the run again.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import signal
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from ontoflow.protocols.client import (
    MAX_DEADLINE_MS,
    CancelRun,
    ClientMessage,
    RunStatus,
    Status,
    Submit,
    SubmitAccepted,
)
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.documents import decode_document, document_kind
from ontoflow.protocols.manifest import manifest_from_data
from ontoflow.runtime.cli._client import (
    ANSWER_S,
    WaitTimedOut,
    client_curve,
    client_options,
    follow,
    look_up_hint,
    open_client,
    reply_code,
    run_async,
    say,
    submit_once,
    unexpected,
)
from ontoflow.runtime.cli._one_shot import ask, converse, expect
from ontoflow.runtime.cli._shared import (
    EXIT_CLARIFICATION,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    ProgressLine,
    describe,
    fail,
    gather_inputs,
    input_options,
    print_line,
    print_result,
    safe_text,
    utc,
    write_json,
)
from ontoflow.runtime.cli.errors import NoAnswerError
from ontoflow.runtime.documents import document_format, read_document_bytes
from ontoflow.runtime.errors import ConfigError, TransportError

__all__ = ["register", "wait_for_run"]


def register(subparsers: Any) -> None:
    """Add ``submit``, ``status``, ``cancel`` and ``watch`` to the ``ontoflow`` parser."""
    s = subparsers.add_parser("submit", help="submit a run of a workflow, a plan or a pipeline to a daemon")
    s.add_argument("manifest", help="a workflow manifest, an execution plan or an OML pipeline (.json, .yaml or .toml): "
                   "oml_version -> pipeline, steps without nodes -> plan, else workflow")
    input_options(s)
    s.add_argument("--wait", action="store_true", help="wait for the run's end and print it (across daemon restarts)")
    s.add_argument("--deadline-ms", type=int, default=None, help="cancel the run past this budget")
    s.add_argument("--idempotency-key", default=None, metavar="K",
                   help="a repeated submit with K gets the same run (--wait makes one up when none is given)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--start", default=None, metavar="NODE", help="the node a workflow starts in (overrides its start)")
    _wait_options(s)
    s.set_defaults(handler=_cmd_submit)

    st = subparsers.add_parser("status", help="a run's status (and its result once it ended)")
    st.add_argument("run_id")
    st.add_argument("--wait", action="store_true")
    st.add_argument("--json", action="store_true")
    _wait_options(st)
    st.set_defaults(handler=_cmd_status)

    c = subparsers.add_parser("cancel", help="cancel a run")
    c.add_argument("run_id")
    c.add_argument("--reason", default="cancelled by request")
    c.add_argument("--json", action="store_true")
    client_options(c)
    c.set_defaults(handler=_cmd_cancel)

    wa = subparsers.add_parser("watch", help="a run's live progress until it ends")
    wa.add_argument("run_id")
    wa.add_argument("--json", action="store_true", help="one JSON object per line")
    _wait_options(wa)
    wa.set_defaults(handler=_cmd_watch)



def _wait_options(parser: argparse.ArgumentParser) -> None:
    client_options(parser)
    # Waiting verbs read --timeout as the budget of the whole wait (default: the run's end).
    for action in parser._actions:
        if action.dest == "timeout":
            action.help = ("seconds to wait for the run's end (with --wait, or watch; default: until it ends, exit 6 past it), "
                           f"else for an answer (default {ANSWER_S:g})")
    parser.set_defaults(timeout=None)


def _answer_s(args: argparse.Namespace) -> float:
    return ANSWER_S if args.timeout is None else args.timeout


def print_status(status: RunStatus, as_json: bool) -> int:
    """Print a run's status (its whole result once it ended); the exit code it means."""
    if status.status == "suspended":  # a question for a person: ``ontoflow answer``
        from ontoflow.runtime.cli._answer import print_questions

        write_json(status) if as_json else print_questions(status)
        return EXIT_CLARIFICATION
    if as_json:
        write_json(status)
    elif status.status in ("running", "cancelling"):
        print_line(f"run {status.run_id} {status.status}" + (f" (started {utc(status.started_ms)})" if status.started_ms else ""))
        for step_id, capability in status.running:  # where the run is now (seed 000's "current state")
            print_line(f"  in flight: {step_id} {capability}")
    else:
        print_result(status, as_json=False)
    return EXIT_OK if status.status in ("running", "cancelling", "completed") else EXIT_FAILED


def _cmd_submit(args: argparse.Namespace) -> int:
    path = Path(args.manifest)
    try:
        data = read_document_bytes(path)
    except OSError as exc:
        return fail(str(ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(path))))
    try:
        document = decode_document(data, document_format(path, data), source=str(path))
        if document_kind(document) == "workflow":
            if args.start is not None and isinstance(document, dict):
                document = {**document, "start": args.start}  # the daemon runs what it is sent
            manifest_from_data(document, source=str(path))  # refused here, before the daemon sees it
        # Plans and pipelines are checked by the daemon, against its workers' catalog; a
        # pipeline's @connections are resolved there too (never here, never in the journal).
        inputs = gather_inputs(args)
    except (ManifestError, ConfigError) as exc:
        return fail(str(exc))
    if args.deadline_ms is not None and not 1 <= args.deadline_ms <= MAX_DEADLINE_MS:
        return fail(f"--deadline-ms must be between 1 and {MAX_DEADLINE_MS} (ten years)")

    key = args.idempotency_key
    if args.wait and key is None:
        key = f"auto-{uuid.uuid4().hex}"
        say(f"no --idempotency-key given: using {key}, so that the submit can be re-sent safely if the daemon restarts")
    submit = Submit(manifest=document, inputs=inputs, deadline_ms=args.deadline_ms, manifest_hash=hashlib.sha256(data).hexdigest(),
                    idempotency_key=key, worktree=str(path.resolve().parent))
    if args.wait:
        reply = _wait(args, submit=submit, progress=ProgressLine().enabled)
        if isinstance(reply, int):
            return reply
        reply = expect(reply, RunStatus)
        return reply if isinstance(reply, int) else print_status(reply, args.json)
    args.timeout = _answer_s(args)
    replies = converse(args, submit)
    if isinstance(replies, int):
        return replies
    code = reply_code(replies[-1])
    if code is not None:
        return code
    accepted = replies[0]
    if not isinstance(accepted, SubmitAccepted):
        return unexpected(accepted, SubmitAccepted)
    if args.json:
        write_json({"run_id": accepted.run_id})
    else:
        print_line(accepted.run_id)  # the daemon's words: no raw ESC on the terminal
    return EXIT_OK


def _wait(
    args: argparse.Namespace,
    *,
    submit: Submit | None = None,
    run_id: str = "",
    watch: bool = False,
    on_steps: Callable[[list[dict[str, Any]]], None] | None = None,
    progress: bool = False,
    on_running: Callable[[list[tuple[str, str]]], None] | None = None,
) -> ClientMessage | int:
    """Submit (when ``submit`` is given) and wait for the run's end, resuming across daemon
    restarts (``_client``); returns the last reply or an exit code (reported)."""
    try:
        curve = client_curve(args)
    except ConfigError as exc:
        return fail(str(exc))
    known = {"run_id": run_id}

    async def go() -> ClientMessage:
        deadline = math.inf if args.timeout is None else anyio.current_time() + args.timeout
        answer_s = min(ANSWER_S, args.timeout) if args.timeout is not None else ANSWER_S
        async with open_client(args.connect, curve=curve) as client:
            answered = False
            if submit is not None:
                accepted = await submit_once(client, submit, deadline=deadline, answer_timeout_s=answer_s)
                if not isinstance(accepted, SubmitAccepted):
                    return accepted
                known["run_id"] = accepted.run_id
                say(f"run {accepted.run_id} accepted" + (" (the run already submitted with that key)" if accepted.existing else "")
                    + "; waiting for its end")
                answered = True
            rid = known["run_id"]
            if not progress:
                return await follow(client, rid, watch=watch, on_steps=on_steps, deadline=deadline,
                                    answer_timeout_s=answer_s, answered=answered, on_running=on_running)
            return await _follow_drawn(client, rid, deadline, answer_s, answered)

    # Ctrl-C raises at once: asyncio's own SIGINT handling cancels the main task instead, and a
    # cancel scope inside the wait (a request's timeout) could swallow that cancellation, so the
    # wait went on until the run ended.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler) if _main_thread() else None
    if previous is not None:
        signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        return run_async(go)
    except WaitTimedOut:
        rid = known["run_id"]
        what = f"run {rid}" if rid else "the submit"
        hint = f"; {look_up_hint(rid)}" if rid else ""
        return fail(f"--timeout {args.timeout:g} s passed before {what} ended{hint}", EXIT_TIMEOUT, kind="timeout")
    except (NoAnswerError, TransportError) as exc:
        return fail(str(exc), EXIT_FAILED, kind="no_answer" if isinstance(exc, NoAnswerError) else "transport")
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt) or (
            isinstance(exc, BaseExceptionGroup) and exc.split(KeyboardInterrupt)[0] is not None)
        if not interrupted:
            raise
        rid = known["run_id"]
        # An error (one JSON object with --json): the wait ended without the run's end.
        return fail("interrupted" + (f"; {look_up_hint(rid)}" if rid else " before the submit was acknowledged"
                                     + (f"; `ontoflow submit --idempotency-key {submit.idempotency_key} ...` again finds the run if it was"
                                        if submit is not None and submit.idempotency_key else "")), EXIT_INTERRUPTED)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


async def _follow_drawn(client: Any, run_id: str, deadline: float, answer_s: float, answered: bool) -> ClientMessage:
    """``follow`` with ``Watch``, drawing the progress on stderr (a terminal)."""
    done = 0
    with ProgressLine() as line:
        line.show(describe(done, []))

        def count(steps: list[dict[str, Any]]) -> None:
            nonlocal done
            done += len(steps)

        def draw(running: list[tuple[str, str]]) -> None:  # the steps in progress, as `run` shows them
            # The daemon's names, escaped: rich strips only BEL, BS, VT, FF and CR, so an ESC in
            # a capability's name drove the terminal (its title set, its screen cleared).
            line.show(safe_text(describe(done, running)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(line.keep_drawn)
            reply = await follow(client, run_id, watch=True, on_steps=count, deadline=deadline,
                                 answer_timeout_s=answer_s, answered=answered, on_running=draw)
            tg.cancel_scope.cancel()
    return reply


def wait_for_run(args: argparse.Namespace, run_id: str) -> ClientMessage | int:
    """Wait for ``run_id``'s end (or its next question) as ``status --wait`` does, asking again
    across a daemon's restart; returns the last reply, or the exit code already reported."""
    return _wait(args, run_id=run_id)


def _cmd_status(args: argparse.Namespace) -> int:
    if args.wait:
        reply: Any = _wait(args, run_id=args.run_id)
        if isinstance(reply, int):
            return reply
    else:
        args.timeout = _answer_s(args)
        replies = converse(args, Status(run_id=args.run_id))
        if isinstance(replies, int):
            return replies
        reply = replies[-1]
    reply = expect(reply, RunStatus)
    return reply if isinstance(reply, int) else print_status(reply, args.json)


def _cmd_cancel(args: argparse.Namespace) -> int:
    reply = ask(args, CancelRun(run_id=args.run_id, reason=args.reason), RunStatus)
    if isinstance(reply, int):
        return reply
    print_status(reply, args.json)
    if reply.status not in ("cancelled", "cancelling"):  # it ended before: said, or it reads as cancelled
        say(f"run {args.run_id} had already ended {reply.status}: nothing was cancelled")
    return EXIT_OK


def _cmd_watch(args: argparse.Namespace) -> int:
    def show(steps: list[dict[str, Any]]) -> None:
        for step in steps:
            if args.json:
                write_json(step)
            else:
                print_line(f"  {step.get('step_id', ''):>4}  {step.get('capability', ''):<32} {step.get('event', ''):<10}"
                           f" attempt {step.get('attempt', '')}")
        sys.stdout.flush()

    shown: set[tuple[str, str]] = set()

    def started(running: list[tuple[str, str]]) -> None:  # where the run is (seed 000), each step once
        fresh = [(step_id, capability) for step_id, capability in running if (step_id, capability) not in shown]
        shown.update(fresh)
        for step_id, capability in [] if args.json else fresh:
            print_line(f"  {step_id:>4}  {capability:<32} running")
        sys.stdout.flush()

    reply = _wait(args, run_id=args.run_id, watch=True, on_steps=show, on_running=started)
    if isinstance(reply, int):
        return reply
    reply = expect(reply, RunStatus)
    if isinstance(reply, int):
        return reply
    if args.json:
        write_json({"run_id": reply.run_id, "status": reply.status, "error": reply.error})
    else:
        print_line(f"run {reply.run_id} {reply.status}")
    return EXIT_OK if reply.status == "completed" else EXIT_FAILED
