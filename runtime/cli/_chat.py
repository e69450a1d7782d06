"""``ontoflow chat``: a conversation in the terminal, one line in, the answer out.

    ontoflow chat [--domains DIR ...] [--transport T] [--run] [--connections FILE]   embedded (as ``ontoflow ask``)
                  [--intent-adapter [DOMAIN=]matcher|llm ...]
    ontoflow chat --connect ADDRESS [--run]                    a daemon's domains (its ``Ask``)

A composition root (it may import ``actors``). Every line is one turn of one session, so a
follow-up ("e da Vale?") resolves against the previous turn, and a clarification is answered
by the next line, also a run's question (a step's clarification suspends the run; the next line
resumes it). ``--run`` is ``ask --run`` for every line. Ctrl-D (end of input) ends the conversation with exit code 0; Ctrl-C with
130. Embedded, one local cluster (an orchestrator and its workers) serves the whole
conversation and the session memory lives in the process only. A line the front half refuses
(too long, for one) is answered with why, and the conversation goes on; so is a line the
model endpoint (``--intent-adapter llm``) could not classify.
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

from ontoflow.actors.intent import DomainLoadError, IntentAdapterFailed, IntentRejected, answer_of, choose, understand
from ontoflow.actors.orchestrator import answer_text
from ontoflow.actors.orchestrator._run_table import AnswerRefused
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.actors.pipelines import using_connections
from ontoflow.protocols.client import Ask, AskReply, Busy, Error
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import EntryRequest, SessionMemory
from ontoflow.runtime.cli._adapter_option import adapter_choice, adapter_option, embedded_adapter, ignored_with_connect
from ontoflow.runtime.cli._client import curve_client, open_client, request
from ontoflow.runtime.cli._intents import connect_options, domain_output, domain_paths, load_catalogue, run_flag, run_option
from ontoflow.runtime.cli._asking import read_line
from ontoflow.runtime.cli._embedded_turn import question_output, run_until_question, wait_until_question
from ontoflow.runtime.cli._local import absolute_path, connections_option, read_connections
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_OK, fail, first_error, logging_options
from ontoflow.runtime.embedded import TRANSPORTS, open_local_cluster
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError, KernelError, TransportError
from ontoflow.runtime.loop import run as run_async

__all__ = ["register"]

Turn = Callable[[str], Awaitable[DomainOutput]]


def register(subparsers: Any) -> None:
    """Add ``chat`` to the ``ontoflow`` parser."""
    chat = subparsers.add_parser("chat", help="talk to ontoflow in the terminal (one line, one answer; Ctrl-D ends)")
    chat.add_argument("--transport", choices=TRANSPORTS, default="ipc", help="embedded: how the orchestrator and workers talk")
    chat.add_argument("--domains", action="append", default=[], metavar="DIR", help="a domain folder (repeatable; embedded)")
    run_option(chat)
    connections_option(chat)
    connect_options(chat)
    adapter_option(chat)
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
            ignored_with_connect(args)
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
                reply = await request(client, Ask(session_id=session, text=text, channel="chat", run=args.run),
                                      timeout_s=None)
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
        connections = read_connections(args.connections)
        adapter = embedded_adapter(catalogue, adapter_choice(args))
    except (DomainLoadError, CapabilityLoadError, ManifestError, ConfigError) as exc:
        return fail(str(exc))
    memory = SessionMemory()
    waiting: str | None = None  # the run suspended on a question: the next line answers it
    answer_steps: tuple[str, ...] = ()

    async def go() -> None:
        with using_connections(connections):  # inproc workers; worker processes read the file
            async with open_local_cluster(classes, specs, transport=args.transport, log_level=args.log_level,
                                          connections=absolute_path(args.connections)) as cluster:

                def ended(outcome: Any) -> DomainOutput:
                    nonlocal waiting
                    if isinstance(outcome, str):  # it asks a person: the next line is the answer
                        waiting = outcome
                        return question_output(cluster, outcome)
                    waiting = None
                    return answer_of(outcome.status, outcome.error, outcome.context, answer_steps)

                async def answered(text: str, run_id: str) -> DomainOutput | None:
                    try:
                        # A candidate named loosely ("2", "a segunda", "nda-fi.he") is sent exactly.
                        questions = cluster.orchestrator.questions(run_id)
                        chosen = next((c for q in questions if (c := choose(text, q.candidates)) is not None), None)
                        cluster.orchestrator.resume(text.strip() if chosen is None else chosen, run_id=run_id)
                    except AnswerRefused as exc:
                        if exc.code != "invalid_answer":
                            return None  # that run no longer asks: the line is a new question
                        return question_output(cluster, run_id, f"{exc} ")
                    return ended(await wait_until_question(cluster, run_id))

                async def turn(text: str) -> DomainOutput:
                    nonlocal memory, answer_steps, waiting
                    if waiting is not None:
                        reply = await answered(text, waiting)
                        if reply is not None:
                            return reply
                        waiting = None
                    entry = EntryRequest(session_id=session, input_text=text, channel="chat",
                                         metadata=run_flag(args.run))
                    try:
                        understood = await understand(entry, catalogue=catalogue, adapter=adapter, memory=memory,
                                                      now_ms=int(time.time() * 1000))
                    except IntentRejected as exc:
                        return DomainOutput(status="failure", explanation=f"invalid question: {exc}")
                    except IntentAdapterFailed as exc:
                        return DomainOutput(status="failure", explanation=str(exc))
                    memory = understood.memory
                    if understood.clarification is not None or understood.planned is None:
                        return understood.clarification or DomainOutput(status="failure", explanation="nothing to run")
                    planned = understood.planned
                    try:
                        compiled = compile_plan(planned.plan, cluster.catalog, defaults=cluster.defaults,
                                                worktree=os.getcwd())
                    except ManifestError as exc:
                        return DomainOutput(status="failure", explanation=f"the plan for this question does not compile: {exc}")
                    answer_steps = planned.answer_steps
                    return ended(await run_until_question(cluster, compiled, {}))

                await converse(turn)

    run_async(go)
    return EXIT_OK
