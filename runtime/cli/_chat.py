"""``ontoflow chat``: a conversation in the terminal, one line in, the answer out.

    ontoflow chat [--domains DIR ...] [--transport T]         embedded (as ``ontoflow ask``)
    ontoflow chat --connect ADDRESS                            a daemon's domains (its ``Ask``)

A composition root (it may import ``actors``). Every line is one turn of one session, so a
follow-up ("e da Vale?") resolves against the previous turn, and a clarification is answered
by the next line. Ctrl-D (end of input) ends the conversation with exit code 0; Ctrl-C with
130. Embedded, one local cluster (an orchestrator and its workers) serves the whole
conversation and the session memory lives in the process only; a run that asks a question
(which Nordea?) waits, and the next line answers it ("NDA-FI.HE", "2", "a segunda"). A line the
front half refuses (too long, for one) is answered with why, and the conversation goes on.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ontoflow.actors.intent import DomainLoadError, IntentRejected, Matcher, answer_of, understand
from ontoflow.actors.orchestrator import AnswerRefused, RunResult, answer_text
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.protocols.client import Ask, AskReply, Busy, Error
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import EntryRequest, SessionMemory
from ontoflow.runtime.cli._client import curve_client, open_client, request
from ontoflow.runtime.cli._intents import connect_options, domain_output, domain_paths, load_catalogue
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_OK, fail, first_error, logging_options
from ontoflow.runtime.cli._asking import answer_asked, question_output, read_line
from ontoflow.runtime.embedded import TRANSPORTS, Asked, open_local_cluster
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError, KernelError, TransportError
from ontoflow.runtime.loop import run as run_async

__all__ = ["register"]

Turn = Callable[[str], Awaitable[DomainOutput]]


def register(subparsers: Any) -> None:
    """Add ``chat`` to the ``ontoflow`` parser."""
    chat = subparsers.add_parser("chat", help="talk to ontoflow in the terminal (one line, one answer; Ctrl-D ends)")
    chat.add_argument("--transport", choices=TRANSPORTS, default="ipc", help="embedded: how the orchestrator and workers talk")
    chat.add_argument("--domains", action="append", default=[], metavar="DIR", help="a domain folder (repeatable; embedded)")
    connect_options(chat)
    logging_options(chat)
    chat.set_defaults(handler=_cmd_chat, log_level="error")


async def converse(turn: Turn) -> None:
    """Read lines until end of input, answer each with ``turn``; a clarification's answer is
    simply the next line (the same session)."""
    prompt = "you> "
    while True:
        line = await anyio.to_thread.run_sync(read_line, prompt, abandon_on_cancel=True)
        if line is None:
            if sys.stdin.isatty():
                print()
            return
        if not line.strip():
            continue
        answer = await turn(line)
        print(answer_text(answer) or answer.status, flush=True)
        prompt = "answer> " if answer.status == "clarification" else "you> "


def _cmd_chat(args: argparse.Namespace) -> int:
    session = f"chat-{uuid.uuid4().hex[:16]}"
    try:
        if args.connect is not None:
            return _chat_remote(args, session)
        return _chat_embedded(args, session)
    except (KernelError, TransportError, BaseExceptionGroup) as exc:
        return fail(str(first_error(exc, (KernelError, TransportError))), EXIT_FAILED)


def _chat_remote(args: argparse.Namespace, session: str) -> int:
    try:
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return fail(str(exc))

    async def go() -> None:
        async with open_client(args.connect, curve=curve) as client:

            async def turn(text: str) -> DomainOutput:
                reply = await request(client, Ask(session_id=session, text=text, channel="chat"), timeout_s=None)
                if isinstance(reply, AskReply):
                    return domain_output(reply)
                if isinstance(reply, Busy):
                    return DomainOutput(status="failure", explanation=f"busy: {reply.runs_in_flight} runs in flight; retry later")
                if isinstance(reply, Error):
                    return DomainOutput(status="failure", explanation=f"{reply.code}: {reply.message}")
                return DomainOutput(status="failure", explanation=f"the daemon answered {type(reply).__name__} (a version mismatch?)")

            await converse(turn)

    run_async(go)
    return EXIT_OK


def _chat_embedded(args: argparse.Namespace, session: str) -> int:
    try:
        catalogue, classes, specs = load_catalogue(domain_paths(args))
    except (DomainLoadError, CapabilityLoadError, ManifestError) as exc:
        return fail(str(exc))
    adapter = Matcher(catalogue)
    memory = SessionMemory()
    asking: list[tuple[Asked, tuple[str, ...]]] = []  # the run waiting on the next line, if any

    async def go() -> None:
        async with open_local_cluster(classes, specs, transport=args.transport, log_level=args.log_level) as cluster:

            def finish(outcome: RunResult | Asked, answer_steps: tuple[str, ...]) -> DomainOutput:
                if isinstance(outcome, Asked):
                    asking.append((outcome, answer_steps))
                    return question_output(outcome)
                return answer_of(outcome.status, outcome.error, outcome.context, answer_steps)

            async def turn(text: str) -> DomainOutput:
                nonlocal memory
                if asking:  # the run asked a question: this line answers it
                    asked, steps = asking.pop()
                    try:
                        return finish(await answer_asked(cluster, asked, text), steps)
                    except AnswerRefused as exc:
                        asking.append((asked, steps))
                        return question_output(asked, f"{exc}. ")
                entry = EntryRequest(session_id=session, input_text=text, channel="chat")
                try:
                    understood = await understand(entry, catalogue=catalogue, adapter=adapter, memory=memory,
                                                  now_ms=int(time.time() * 1000))
                except IntentRejected as exc:
                    return DomainOutput(status="failure", explanation=f"invalid question: {exc}")
                memory = understood.memory
                if understood.clarification is not None or understood.planned is None:
                    return understood.clarification or DomainOutput(status="failure", explanation="nothing to run")
                planned = understood.planned
                try:
                    compiled = compile_plan(planned.plan, cluster.catalog, defaults=cluster.defaults, worktree=os.getcwd())
                except ManifestError as exc:
                    return DomainOutput(status="failure", explanation=f"the plan for this question does not compile: {exc}")
                return finish(await cluster.run_until_asked(compiled, {}), planned.answer_steps)

            await converse(turn)

    run_async(go)
    return EXIT_OK
