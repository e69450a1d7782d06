"""``ontoflow chat``: a conversation in the terminal, one line in, the answer out.

    ontoflow chat [--session S] [--domains DIR ...] [--transport T] [--run] [--connections FILE]   embedded
                  [--intent-adapter [DOMAIN=]matcher|llm ...]
    ontoflow chat --connect ADDRESS [--session S] [--run]      a daemon's domains (its ``Ask``)

A composition root (it may import ``actors``). Every line is one turn of one session, so a
follow-up ("e da Vale?") resolves against the previous turn, and a clarification is answered
by the next line, also a run's question (a step's clarification suspends the run; the next line
resumes it). ``--run`` is ``ask --run`` for every line. Ctrl-D (end of input) ends the conversation with exit code 0; Ctrl-C with
130. Embedded, one local cluster (an orchestrator and its workers) serves the whole
conversation, and every line takes the daemon's path in this process: its edge (the Intent
and Planner actors, ``runtime.cli._embedded_turn``) understands it and answers. Without
``--session`` the conversation is a session of its own, remembered in the process only; with
one, its memory is the session journal ``ontoflow ask --session`` keeps, so a conversation
goes on where an ``ask`` (or an earlier ``chat``) of that session left off. A line the front
half refuses (too long, for one) is answered with why, and the conversation goes on; so is a
line the model endpoint (``--intent-adapter llm``) could not classify. An answer is shown as
``safe_text`` shows a message: its control characters escaped (a table name may hold
``\x1b[2J``), a line past ``MAX_LINE`` cut.

Each line's answer has ``--timeout`` seconds (``ask``'s budget, ``_asking.Budget``): past it,
the line is answered so, and the conversation goes on. With ``--connect``, every line first
makes sure the daemon answers (``_client.reach``, within ``min(10 s, --timeout)``) and goes on
a connection of its own (a late answer to a line given up on reaches no later line); a daemon
that does not answer ends the conversation with exit 1, naming the address.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ontoflow.actors.intent import DomainLoadError
from ontoflow.actors.orchestrator import answer_text
from ontoflow.protocols.client import Ask, AskReply, Busy, Error
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import SESSION_ID, SESSION_ID_RULE
from ontoflow.runtime.cli._adapter_option import adapter_option, ignored_with_connect
from ontoflow.runtime.cli._asking import Budget, TimedOut, check_ask_timeout, read_line, timeout_option
from ontoflow.runtime.cli._client import ANSWER_S, check_address, curve_client, open_client, reach, request
from ontoflow.runtime.cli._embedded_turn import edge_adapters, embedded_edge, open_session_journal
from ontoflow.runtime.cli._in_process import failure_text
from ontoflow.runtime.cli._intents import connect_options, domain_output, domain_paths, load_catalogue, run_option
from ontoflow.runtime.cli._local import absolute_path, connections_option, read_connections
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_OK, fail, first_error, logging_options, safe_text
from ontoflow.runtime.cli._signals import STOP, run_stoppable
from ontoflow.runtime.cli.errors import NoAnswerError
from ontoflow.runtime.embedded import TRANSPORTS
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError, KernelError, TransportError
from ontoflow.runtime.loop import run as run_async

__all__ = ["register"]

Turn = Callable[[str], Awaitable[DomainOutput]]


def register(subparsers: Any) -> None:
    """Add ``chat`` to the ``ontoflow`` parser."""
    chat = subparsers.add_parser("chat", help="talk to ontoflow in the terminal (one line, one answer; Ctrl-D ends)")
    chat.add_argument("--transport", choices=TRANSPORTS, default="ipc", help="embedded: how the orchestrator and workers talk")
    chat.add_argument("--domains", action="append", default=[], metavar="DIR", help="a domain folder (repeatable; embedded)")
    chat.add_argument("--session", default=None, metavar="S",
                      help="this conversation is session S (its memory kept, as ask --session); default: a new one")
    run_option(chat)
    connections_option(chat)
    connect_options(chat)
    timeout_option(chat, "seconds each line's answer may take (past it the line is answered so, and the conversation "
                         "goes on; default 600, or [client] ask-timeout)")
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
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are no UTF-8 (kept as surrogates): no message carries them
            print("ontoflow: that line is not valid UTF-8 text; say it again", file=sys.stderr, flush=True)
            continue
        answer = await turn(line)
        # An answer echoes what nobody here wrote (a database's table names, a daemon's words):
        # its control characters are shown escaped, never sent to the terminal raw.
        print(safe_text(answer_text(answer) or answer.status), flush=True)
        prompt = "answer> " if answer.status == "clarification" else "you> "


def _cmd_chat(args: argparse.Namespace) -> int:
    if args.session is not None and not SESSION_ID.match(args.session):
        return fail(f"--session: {SESSION_ID_RULE}")
    session = args.session or f"chat-{uuid.uuid4().hex[:16]}"
    try:
        check_ask_timeout(args)
    except ConfigError as exc:
        return fail(str(exc))
    try:
        if args.connect is not None:
            ignored_with_connect(args)
            return _chat_remote(args, session)
        return _chat_embedded(args, session)
    except (KernelError, TransportError, BaseExceptionGroup) as exc:
        return fail(failure_text(first_error(exc, (KernelError, TransportError))), EXIT_FAILED)


def _chat_remote(args: argparse.Namespace, session: str) -> int:
    try:
        check_address(args.connect)
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return fail(str(exc))

    async def turn(text: str) -> DomainOutput:
        async with open_client(args.connect, curve=curve) as client:  # a line's own: see the module docstring
            await reach(client, min(ANSWER_S, args.ask_timeout))
            return await _within(args.ask_timeout, request(
                client, Ask(session_id=session, text=text, channel="chat", run=args.run), timeout_s=None))

    try:
        run_async(converse, turn)
    except NoAnswerError as exc:
        return fail(str(exc), EXIT_FAILED, kind="no_answer")
    return EXIT_OK


async def _within(seconds: float, answer: Awaitable[Any]) -> DomainOutput:
    """The edge's answer to one line, or past ``seconds`` a failure saying so."""
    try:
        with Budget(seconds).running():
            return _said(await answer)
    except TimedOut as exc:
        return DomainOutput(status="failure", explanation=f"{exc}; say it again, or something else")


def _said(reply: Any) -> DomainOutput:
    """The edge's reply (a daemon's or the embedded one's) as the answer a person reads."""
    if isinstance(reply, AskReply):
        return domain_output(reply)
    if isinstance(reply, Busy):
        return DomainOutput(status="failure", explanation=f"busy: {reply.runs_in_flight} runs in flight; retry later")
    if isinstance(reply, Error):
        return DomainOutput(status="failure", explanation=f"{reply.code}: {reply.message}")
    return DomainOutput(status="failure", explanation=f"the daemon answered {type(reply).__name__} (a version mismatch?)")


def _chat_embedded(args: argparse.Namespace, session: str) -> int:
    try:
        catalogue, classes, specs = load_catalogue(domain_paths(args))
        connections = read_connections(args.connections)
        adapters = edge_adapters(args, catalogue)
    except (DomainLoadError, CapabilityLoadError, ManifestError, ConfigError) as exc:
        return fail(str(exc))
    journal = open_session_journal() if args.session else None

    async def go() -> int:
        async with embedded_edge(catalogue, classes, specs, adapters=adapters, transport=args.transport,
                                 log_level=args.log_level, connections=connections,
                                 connections_file=absolute_path(args.connections), session_journal=journal) as cluster:
            edge = cluster.edge
            assert edge is not None  # composed with domains

            async def turn(text: str) -> DomainOutput:
                return await _within(args.ask_timeout, edge.ask(session, text, channel="chat", run=args.run))

            await converse(turn)
            return EXIT_OK

    ended = run_stoppable(go)  # SIGTERM too stops the local cluster (its worker processes)
    return STOP.exit_code() if ended is None else ended
