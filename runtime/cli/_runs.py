"""The client verbs about one run: ``submit``, ``status``, ``cancel``, ``watch``.

A composition root (it may import ``actors``). Exit codes: 0 done (a waited run completed), 1
failed, cancelled, busy or no answer in time, 2 invalid input. A run's end prints as for
``ontoflow run``: its path and its context, times in UTC.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

import anyio

from ontoflow.protocols.client import (
    CancelRun,
    ClientMessage,
    RunProgress,
    RunStatus,
    Status,
    Submit,
    SubmitAccepted,
    Watch,
)
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import decode_document, manifest_from_data
from ontoflow.runtime.cli._client import (
    client_curve,
    client_options,
    converse,
    open_client,
    reply_code,
    request,
    unexpected,
)
from ontoflow.runtime.cli._local import gather_inputs, input_options
from ontoflow.runtime.cli._progress import ProgressLine, describe
from ontoflow.runtime.cli._shared import EXIT_CLARIFICATION, EXIT_FAILED, EXIT_OK, fail, print_result, utc, write_json
from ontoflow.runtime.cli.errors import NoAnswerError
from ontoflow.runtime.errors import ConfigError, TransportError
from ontoflow.runtime.loop import run as run_async

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``submit``, ``status``, ``cancel`` and ``watch`` to the ``ontoflow`` parser."""
    s = subparsers.add_parser("submit", help="submit a run of a workflow, a plan or a pipeline to a daemon")
    s.add_argument("manifest", help="a workflow manifest, an execution plan or an OML pipeline (.json, .yaml or .toml): "
                   "oml_version -> pipeline, steps without nodes -> plan, else workflow")
    input_options(s)
    s.add_argument("--wait", action="store_true", help="wait for the run's end and print it")
    s.add_argument("--deadline-ms", type=int, default=None, help="cancel the run past this budget")
    s.add_argument("--idempotency-key", default=None, metavar="K", help="a repeated submit with K gets the same run")
    s.add_argument("--json", action="store_true")
    s.add_argument("--start", default=None, metavar="NODE", help="the node a workflow starts in (overrides its start)")
    client_options(s)
    s.set_defaults(handler=_cmd_submit)

    st = subparsers.add_parser("status", help="a run's status (and its result once it ended)")
    st.add_argument("run_id")
    st.add_argument("--wait", action="store_true")
    st.add_argument("--json", action="store_true")
    client_options(st)
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
    client_options(wa)
    wa.set_defaults(handler=_cmd_watch)


def print_status(status: RunStatus, as_json: bool) -> int:
    """Print a run's status (its whole result once it ended); the exit code it means."""
    if status.status == "suspended":  # a question for a person: ``ontoflow answer``
        from ontoflow.runtime.cli._answer import print_questions

        write_json(status) if as_json else print_questions(status)
        return EXIT_CLARIFICATION
    if as_json:
        write_json(status)
    elif status.status in ("running", "cancelling"):
        print(f"run {status.run_id} {status.status}" + (f" (started {utc(status.started_ms)})" if status.started_ms else ""))
    else:
        print_result(status, as_json=False)
    return EXIT_OK if status.status in ("running", "cancelling", "completed") else EXIT_FAILED


def _cmd_submit(args: argparse.Namespace) -> int:
    from ontoflow.actors.orchestrator import document_kind

    path = Path(args.manifest)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return fail(str(ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(path))))
    try:
        document = decode_document(data, path.suffix or "json", source=str(path))
        if document_kind(document) == "workflow":
            if args.start is not None and isinstance(document, dict):
                document = {**document, "start": args.start}  # the daemon runs what it is sent
            manifest_from_data(document, source=str(path))  # refused here, before the daemon sees it
        # Plans and pipelines are checked by the daemon, against its workers' catalog; a
        # pipeline's @connections are resolved there too (never here, never in the journal).
        inputs = gather_inputs(args)
    except (ManifestError, ConfigError) as exc:
        return fail(str(exc))
    if args.deadline_ms is not None and args.deadline_ms < 1:
        return fail("--deadline-ms must be >= 1")

    submit = Submit(manifest=document, inputs=inputs, deadline_ms=args.deadline_ms, manifest_hash=hashlib.sha256(data).hexdigest(),
                    idempotency_key=args.idempotency_key, worktree=str(path.resolve().parent))
    if args.wait and ProgressLine().enabled:
        replies = _submit_and_watch(args, submit)
    else:
        messages: list[ClientMessage] = [submit]
        if args.wait:
            messages.append(Status(run_id="", wait=True))
        replies = converse(args, *messages, wait_last=args.wait)
    if isinstance(replies, int):
        return replies
    code = reply_code(replies[-1])
    if code is not None:
        return code
    if not args.wait:
        accepted = replies[0]
        if not isinstance(accepted, SubmitAccepted):
            return unexpected(accepted, SubmitAccepted)
        if args.json:
            write_json({"run_id": accepted.run_id})
        else:
            print(accepted.run_id)
        return EXIT_OK
    if not isinstance(replies[-1], RunStatus):
        return unexpected(replies[-1], RunStatus)
    return print_status(replies[-1], args.json)


def _submit_and_watch(args: argparse.Namespace, submit: Submit) -> list[ClientMessage] | int:
    """Submit, then follow the run with ``Watch`` and draw its progress on stderr (a terminal)."""
    try:
        curve = client_curve(args)
    except ConfigError as exc:
        return fail(str(exc))

    async def go() -> list[ClientMessage]:
        async with open_client(args.connect, curve=curve) as client:
            accepted = await request(client, submit, timeout_s=args.timeout)
            if not isinstance(accepted, SubmitAccepted):
                return [accepted]
            done = 0
            with ProgressLine() as line:
                line.show(describe(done, []))
                async with anyio.create_task_group() as tg:
                    tg.start_soon(line.keep_drawn)
                    reply = await request(client, Watch(run_id=accepted.run_id), timeout_s=None)
                    while isinstance(reply, RunProgress):
                        done += len(reply.steps)
                        last = reply.steps[-1] if reply.steps else None
                        text = describe(done, [])
                        if last is not None:
                            text += f" · last {last.get('step_id', '')} {last.get('capability', '')} {last.get('event', '')}"
                        line.show(text)
                        reply = (await client.recv_batch(1))[0]
                    tg.cancel_scope.cancel()
            return [accepted, reply]

    try:
        return run_async(go)
    except (NoAnswerError, TransportError) as exc:
        return fail(str(exc), EXIT_FAILED, kind="no_answer" if isinstance(exc, NoAnswerError) else "transport")


def _cmd_status(args: argparse.Namespace) -> int:
    replies = converse(args, Status(run_id=args.run_id, wait=args.wait), wait_last=args.wait)
    if isinstance(replies, int):
        return replies
    code = reply_code(replies[-1])
    if code is not None:
        return code
    if not isinstance(replies[-1], RunStatus):
        return unexpected(replies[-1], RunStatus)
    return print_status(replies[-1], args.json)


def _cmd_cancel(args: argparse.Namespace) -> int:
    replies = converse(args, CancelRun(run_id=args.run_id, reason=args.reason))
    if isinstance(replies, int):
        return replies
    code = reply_code(replies[-1])
    if code is not None:
        return code
    if not isinstance(replies[-1], RunStatus):
        return unexpected(replies[-1], RunStatus)
    print_status(replies[-1], args.json)
    return EXIT_OK


def _cmd_watch(args: argparse.Namespace) -> int:
    try:
        curve = client_curve(args)
    except ConfigError as exc:
        return fail(str(exc))

    async def go() -> ClientMessage:
        async with open_client(args.connect, curve=curve) as client:
            reply = await request(client, Watch(run_id=args.run_id), timeout_s=args.timeout)
            while isinstance(reply, RunProgress):
                for step in reply.steps:
                    if args.json:
                        write_json(step)
                    else:
                        print(f"  {step.get('step_id', ''):>4}  {step.get('capability', ''):<32} {step.get('event', ''):<10}"
                              f" attempt {step.get('attempt', '')}")
                sys.stdout.flush()
                reply = (await client.recv_batch(1))[0]
            return reply

    try:
        reply = run_async(go)
    except (NoAnswerError, TransportError) as exc:
        return fail(str(exc), EXIT_FAILED, kind="no_answer" if isinstance(exc, NoAnswerError) else "transport")
    code = reply_code(reply)
    if code is not None:
        return code
    if not isinstance(reply, RunStatus):
        return unexpected(reply, RunStatus)
    if args.json:
        write_json({"run_id": reply.run_id, "status": reply.status, "error": reply.error})
    else:
        print(f"run {reply.run_id} {reply.status}")
    return EXIT_OK if reply.status == "completed" else EXIT_FAILED
