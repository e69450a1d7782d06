"""``ontoflow ask`` and ``ontoflow intents eval``: a composition root (it may import ``actors``).

    ontoflow ask "TEXT" [--session S] [--json] [--run] [--answer CHOICE ...] [--domains DIR ...] [--connections FILE]
                 [--intent-adapter [DOMAIN=]matcher|llm ...]
    ontoflow ask "TEXT" --connect ADDRESS [--session S] [--json] [--run] [--answer CHOICE ...]
    ontoflow intents eval FILE [--domains DIR ...] [--json] [--intent-adapter [DOMAIN=]matcher|llm ...]

``ask`` turns a sentence into a run: the intent adapter (the deterministic matcher, or the LLM
one chosen with ``--intent-adapter``, ``runtime.cli._adapter_option``) -> the confidence gate -> the
goal resolver -> the planner -> the plan, run on the embedded default (an orchestrator and
worker processes, as ``ontoflow plan run``) -> the answer. Embedded, the front half is the
daemon's edge in this process (its Intent and Planner actors, ``runtime.cli._embedded_turn``),
so a sentence takes one path with or without a daemon. Exit codes: 0 answered, 1 the run,
the domain or the model endpoint failed, 2 invalid (an unknown adapter, ``llm`` without
``ONTOFLOW_LLM_URL``, empty or oversized text, a bad session id, a domain that does not load,
an intent the catalogue refuses: nothing ran, nothing was remembered),
4 a clarification (a question back, with its candidates: nothing was guessed), 6 ``--timeout``
passed before the answer, 130 interrupted.

``--timeout SECONDS`` (default ``_asking.ASK_TIMEOUT_S``, or ``ask-timeout`` in the config file's
``[client]``) bounds the sentence's whole way to its answer, the person's time at the terminal
not counted (``_asking.Budget``): a model endpoint that answers slowly or a run that does not
end stops the command with exit 6. With ``--connect``, the daemon must answer a first request
within ``min(10 s, --timeout)`` (``_client.reach``), else exit 1 naming the address, as every
client verb: an address where nothing listens was waited on for ever.

A run that asks a question while it runs (which Nordea: Stockholm or Helsinki?) is suspended.
Embedded, it lives only as long as the command (``runtime.cli._asking``): on a terminal the
question is asked inline and the answer resumes the run; ``--answer CHOICE`` answers it in
advance (a candidate, its number, "the second"); otherwise the question is printed, exit code
4, with how to answer. Through a daemon (``--connect``) the run waits there: ``--answer``
answers it at once, a terminal asks inline, else ``ontoflow answer RUN CHOICE`` (or the
session's next ``ask``) answers it later.

Domains: every ``--domains DIR`` (a folder with a ``domain.yaml`` and its handlers); without
one, the folders listed in ``$ONTOFLOW_DOMAINS`` (separated by ``os.pathsep``), else every
domain folder under ``./configs/examples`` (so it works from a fresh clone's root).

``--run`` runs what the sentence makes too, as the words "and run it" would: the pipelines
domain answers the pipeline YAML (saved to the file the sentence names, "save the pipeline as
export.yaml") and, with ``--run``, also runs it and answers the run's result.

With ``--connect ADDRESS`` the sentence goes to a daemon as the client API's ``Ask`` (the
daemon's ``--domains`` answer it, its workers run the plan; ``--domains`` here is ignored) and
the session memory is the daemon's; without ``--session`` each ask is a session of its own.

Session memory (``--session S``) of the embedded ask lives in a journal,
``$XDG_STATE_HOME/ontoflow/sessions.sqlite`` (``~/.local/state/ontoflow`` by default; the
daemon's ``memory`` table, bounded as the daemon bounds it), readable by its owner only, and
written safely by several ``ask`` at once; without ``--session`` nothing is remembered.

``intents eval`` calls each adapter directly (``classify``, no actor, no memory): it evaluates
the adapter, not a conversation (``_intents_eval``). Where the domains come from: ``_domains``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import uuid
from typing import Any

import anyio
import msgspec

from ontoflow.actors.intent import RUN_FLAG, DomainLoadError
from ontoflow.actors.orchestrator import answer_text
from ontoflow.protocols.client import Ask, AskReply, Busy, Error, client_to_frames
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import EntryRequest, check_entry
from ontoflow.runtime.cli._adapter_option import adapter_option, ignored_with_connect
from ontoflow.runtime.cli._asking import (
    ASK_TIMEOUT_S,
    Budget,
    Refused,
    TimedOut,
    check_ask_timeout,
    embedded_hint,
    settle,
    suspended,
    timeout_option,
)
from ontoflow.runtime.cli._client import ANSWER_S, check_address, curve_client, open_client, reach, reply_code, request, unexpected
from ontoflow.runtime.cli._domains import DOMAINS_ENV, EXAMPLES, domain_paths, load_catalogue
from ontoflow.runtime.cli._embedded_turn import edge_adapters, embedded_edge, open_session_journal, run_steps
from ontoflow.runtime.cli._in_process import failure_text
from ontoflow.runtime.cli._intents_eval import cmd_eval
from ontoflow.runtime.cli._local import absolute_path, connections_option, read_connections
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_INVALID, EXIT_OK, EXIT_TIMEOUT, fail, first_error, logging_options, safe_text
from ontoflow.runtime.cli._signals import STOP, run_stoppable
from ontoflow.runtime.cli.errors import NoAnswerError
from ontoflow.runtime.embedded import TRANSPORTS
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError, KernelError, TransportError
from ontoflow.runtime.loop import run as run_async

__all__ = ["DOMAINS_ENV", "EXAMPLES", "EXIT_CLARIFICATION", "domain_paths", "load_catalogue", "register", "run_flag", "run_option"]

#: ``ask`` answered with a question (a clarification) instead of a result.
from ontoflow.runtime.cli._shared import EXIT_CLARIFICATION  # noqa: E402 - with its siblings above


def register(subparsers: Any) -> None:
    """Add ``ask`` and the ``intents`` command group to the ``ontoflow`` parser."""
    ask = subparsers.add_parser("ask", help="turn a sentence into a run and print the answer")
    ask.add_argument("text", help="what you want, in English or Portuguese")
    ask.add_argument("--session", default=None, metavar="S", help="remember this turn under session S (follow-ups)")
    ask.add_argument("--json", action="store_true", help="print one JSON object: status, explanation, result, intent")
    run_option(ask)
    ask.add_argument("--answer", action="append", default=[], metavar="CHOICE",
                     help="answer the run's question in advance (a candidate or its number; repeatable, in order)")
    ask.add_argument("--transport", choices=TRANSPORTS, default="ipc", help="how the orchestrator and workers talk (default ipc)")
    connections_option(ask)
    _domain_options(ask)
    connect_options(ask)
    timeout_option(ask, "seconds the whole ask may take: understanding, the run, its questions (the time you take "
                        f"to answer one not counted); exit 6 past it (default {ASK_TIMEOUT_S:g}, or [client] ask-timeout)")
    adapter_option(ask)
    logging_options(ask)
    # A conversation: the answer itself says what failed, so the run's warnings stay quiet.
    ask.set_defaults(handler=_cmd_ask, log_level="error")

    intents = subparsers.add_parser("intents", help="evaluate the intent adapter")
    sub = intents.add_subparsers(dest="intents_command", required=True)
    ev = sub.add_parser("eval", help="accuracy, per-goal precision and recall, the gate, on a labelled set")
    ev.add_argument("file", help="a YAML/JSON list of {text, domain, goal, entities}")
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
    _domain_options(ev)
    adapter_option(ev)
    logging_options(ev)
    ev.set_defaults(handler=cmd_eval)


def _domain_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--domains", action="append", default=[], metavar="DIR", help="a domain folder (repeatable)")


def run_option(parser: argparse.ArgumentParser) -> None:
    """``--run``: run what the sentence makes too (a goal with a boolean ``run`` entity)."""
    parser.add_argument("--run", action="store_true",
                        help="also run what the answer makes (the pipelines domain: run the pipeline it wrote and "
                             "answer the run's result; the same as saying 'and run it')")


def run_flag(on: bool) -> dict[str, Any]:
    """The ``EntryRequest.metadata`` of a turn with (or without) ``--run``."""
    return {RUN_FLAG: True} if on else {}


def connect_options(parser: argparse.ArgumentParser) -> None:
    """``--connect`` and its CURVE flags: ask a daemon instead of the embedded default."""
    parser.add_argument("--connect", default=None, metavar="ADDRESS", help="ask this daemon (its domains) instead of running embedded")
    parser.add_argument("--curve-secret", default=None, metavar="FILE", help="this client's NAME.key_secret")
    parser.add_argument("--curve-server-key", default=None, metavar="FILE", help="the daemon's NAME.key")


def domain_output(reply: AskReply) -> DomainOutput:
    """The ``DomainOutput`` an ``AskReply`` carries."""
    return DomainOutput(status=reply.status, result=reply.result, explanation=reply.explanation,  # type: ignore[arg-type]
                        confidence=reply.confidence, metadata=reply.metadata)


def reply_exit_code(reply: AskReply) -> int:
    """The exit code of a daemon's answer (a refused sentence is invalid input, as embedded)."""
    if reply.status == "failure" and reply.metadata.get("code") == "invalid":
        return EXIT_INVALID
    return _exit_code(domain_output(reply))


def _ask_remote(args: argparse.Namespace) -> int:
    try:
        check_address(args.connect)
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return fail(str(exc))
    budget = Budget(args.ask_timeout)
    # Without --session nothing is remembered: a session of its own, as the embedded ask.
    session = args.session or f"cli-{uuid.uuid4().hex[:16]}"
    message = Ask(session_id=session, text=args.text, channel="cli", run=args.run)
    client_to_frames(message)  # what no message can carry (bytes not UTF-8) is a usage error before any wait

    given, interactive = list(args.answer), sys.stdin.isatty() and not args.json

    async def go() -> Any:
        async with open_client(args.connect, curve=curve) as client:

            async def ask(text: str) -> Any:  # the answer comes when the run ends
                return await request(client, Ask(session_id=session, text=text, channel="cli"), timeout_s=None)

            await reach(client, min(ANSWER_S, args.ask_timeout))  # before the budget: its own error, exit 1
            with budget.running():
                reply = await request(client, message, timeout_s=None)
                # A run suspended on a question: the session's next sentence answers it.
                return await settle(ask, reply, given, interactive=interactive, show=_show_question,
                                    read=budget.paused())

    try:
        reply = run_async(go)
    except TransportError as exc:
        return fail(str(exc), EXIT_FAILED, kind="transport")
    except NoAnswerError as exc:
        return fail(str(exc), EXIT_FAILED, kind="no_answer")
    except TimedOut as exc:
        return fail(f"{exc} (the daemon may still run what it understood: `ontoflow runs` lists it)", EXIT_TIMEOUT)
    code = reply_code(reply)
    if code is not None:
        return code
    if not isinstance(reply, AskReply):
        return unexpected(reply, AskReply)
    if reply.status == "failure" and reply.metadata.get("code") == "invalid":
        return fail(f"invalid question: {reply.explanation}")
    _print_answer(domain_output(reply), as_json=args.json, extra={"intent": reply.intent, "run_id": reply.run_id})
    if reply.metadata.get("suspended") and reply.run_id and not args.json:
        # The run waits on the daemon: say how to answer it (the session's next ask does too).
        again = f"ontoflow ask --session {args.session} ANSWER" if args.session else None
        print(safe_text(f"(answer with: ontoflow answer {reply.run_id} ANSWER" + (f", or {again})" if again else ")")))
    return reply_exit_code(reply)


def _print_answer(answer: DomainOutput, *, as_json: bool, extra: dict[str, Any]) -> None:
    if as_json:
        doc = {"status": answer.status, "explanation": answer.explanation, "result": answer.result,
               "confidence": answer.confidence, "metadata": answer.metadata, **extra}
        sys.stdout.write(msgspec.json.encode(doc).decode() + "\n")
        return
    text = answer_text(answer)  # the same words the daemon's HTTP entry answers
    if text:
        print(safe_text(text))  # a domain's words may carry a value from anywhere: no raw ESC


def _exit_code(answer: DomainOutput) -> int:
    return {"success": EXIT_OK, "clarification": EXIT_CLARIFICATION}.get(answer.status, EXIT_FAILED)


def _show_question(reply: AskReply) -> None:
    _print_answer(domain_output(reply), as_json=False, extra={})


def _cmd_ask(args: argparse.Namespace) -> int:
    try:
        check_ask_timeout(args)
    except ConfigError as exc:
        return fail(str(exc))
    if args.connect is not None:
        ignored_with_connect(args)
        return _ask_remote(args)
    request = EntryRequest(session_id=args.session or "cli", input_text=args.text, channel="cli",
                           metadata=run_flag(args.run))
    problems = check_entry(request)
    if problems:  # before anything starts: nothing ran, nothing was remembered
        return fail("invalid question: " + "; ".join(str(p) for p in problems))
    try:
        catalogue, classes, specs = load_catalogue(domain_paths(args))
        connections = read_connections(args.connections)
        adapters = edge_adapters(args, catalogue)
    except (DomainLoadError, CapabilityLoadError, ManifestError, ConfigError) as exc:
        return fail(str(exc))
    # Without --session nothing is remembered: a session of its own, as through a daemon.
    session = args.session or f"cli-{uuid.uuid4().hex[:16]}"
    journal = open_session_journal() if args.session else None
    given, interactive = list(args.answer), sys.stdin.isatty() and not args.json

    async def go() -> tuple[Any, list[dict[str, Any]] | None]:
        async with embedded_edge(catalogue, classes, specs, adapters=adapters, transport=args.transport,
                                 log_level=args.log_level, connections=connections,
                                 connections_file=absolute_path(args.connections), session_journal=journal) as cluster:
            edge = cluster.edge
            assert edge is not None  # composed with domains

            async def ask(text: str) -> Any:
                return await edge.ask(session, text, channel="cli", run=args.run)

            with budget.running():
                reply = await settle(ask, await ask(args.text), given, interactive=interactive, show=_show_question,
                                     strict=True, read=budget.paused())
            return reply, run_steps(cluster, getattr(reply, "run_id", None))

    budget = Budget(args.ask_timeout)
    try:
        ended = run_stoppable(go, loop=functools.partial(anyio.run, backend="asyncio"))  # SIGTERM too stops the cluster
    except (Refused, TimedOut, KernelError, BaseExceptionGroup) as exc:
        error = first_error(exc, (Refused, TimedOut, KernelError))
        if isinstance(error, TimedOut):  # embedded, the run ended with the command
            return fail(f"{error} (nothing goes on: an embedded run ends with the command)", EXIT_TIMEOUT)
        return fail(failure_text(error), EXIT_INVALID if isinstance(error, Refused) else EXIT_FAILED)
    if ended is None:
        return fail("interrupted (an embedded run ends with the command)", STOP.exit_code(), kind="interrupted")
    reply, steps = ended
    if isinstance(reply, Error):  # the edge's actors crashed while they held the sentence
        return fail(f"{reply.code}: {reply.message}", EXIT_FAILED)
    if isinstance(reply, Busy):
        return fail(f"busy: {reply.runs_in_flight} runs in flight", EXIT_FAILED)
    code = reply.metadata.get("code") if reply.status == "failure" else None
    if code == "invalid":  # refused before anything ran
        return fail(f"invalid question: {reply.explanation}")
    if code == "adapter_failed":  # the model endpoint down, 429/5xx after retries: nothing ran
        return fail(reply.explanation, EXIT_FAILED)
    extra: dict[str, Any] = {"intent": reply.intent}
    if reply.run_id is not None:
        extra["run_id"] = reply.run_id
    if steps is not None:
        extra["steps"] = steps
    if suspended(reply):  # nobody here answered: the run ends with this command
        extra["how_to_answer"] = embedded_hint()
    _print_answer(domain_output(reply), as_json=args.json, extra=extra)
    if suspended(reply) and not args.json:
        print(embedded_hint())
    return reply_exit_code(reply)
