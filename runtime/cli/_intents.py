"""``ontoflow ask`` and ``ontoflow intents eval``: a composition root (it may import ``actors``).

    ontoflow ask "TEXT" [--session S] [--json] [--run] [--answer CHOICE ...] [--domains DIR ...] [--connections FILE]
                 [--intent-adapter [DOMAIN=]matcher|llm ...]
    ontoflow ask "TEXT" --connect ADDRESS [--session S] [--json] [--run] [--answer CHOICE ...]
    ontoflow intents eval FILE [--domains DIR ...] [--json] [--intent-adapter [DOMAIN=]matcher|llm ...]

``ask`` turns a sentence into a run: the intent adapter (the deterministic matcher, or the LLM
one chosen with ``--intent-adapter``, ``runtime.cli._adapter_option``) -> the confidence gate -> the
goal resolver -> the planner -> the plan, run on the embedded default (an orchestrator and
worker processes, as ``ontoflow plan run``) -> the answer. Exit codes: 0 answered, 1 the run,
the domain or the model endpoint failed, 2 invalid (an unknown adapter, ``llm`` without
``ONTOFLOW_LLM_URL``, empty or oversized text, a bad session id, a domain that does not load,
an intent the catalogue refuses: nothing ran, nothing was remembered),
4 a clarification (a question back, with its candidates: nothing was guessed), 130 interrupted.

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

Session memory (``--session S``) of the embedded ask lives in ``$XDG_STATE_HOME/ontoflow/sessions.json``
(``~/.local/state/ontoflow`` by default), readable by its owner only; without ``--session``
nothing is remembered.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import msgspec

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.intent import (
    RUN_FLAG,
    Catalogue,
    DomainLoadError,
    EvalCase,
    IntentAdapterFailed,
    IntentRejected,
    answer_of,
    evaluate,
    find_domain_folders,
    read_domain,
    understand,
)
from ontoflow.actors.orchestrator import answer_text
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.actors.pipelines import using_connections
from ontoflow.protocols.client import Ask, AskReply
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import EntryRequest, SessionMemory, check_entry
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.cli._adapter_option import adapter_choice, adapter_option, embedded_adapter, ignored_with_connect
from ontoflow.runtime.cli._client import curve_client, open_client, reply_code, request, unexpected
from ontoflow.runtime.cli._local import absolute_path, connections_option, read_connections
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_INVALID, EXIT_OK, fail, first_error, logging_options
from ontoflow.runtime.cli._asking import Refused, embedded_hint, question_output, read_line, settle
from ontoflow.runtime.embedded import TRANSPORTS, Asked, open_local_cluster
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError, KernelError, TransportError
from ontoflow.runtime.loop import run as run_async

__all__ = ["EXIT_CLARIFICATION", "register", "run_flag", "run_option", "state_file"]

#: ``ask`` answered with a question (a clarification) instead of a result.
from ontoflow.runtime.cli._shared import EXIT_CLARIFICATION  # noqa: E402 - with its siblings above
DOMAINS_ENV = "ONTOFLOW_DOMAINS"
EXAMPLES = Path("configs") / "examples"
_memory_decoder = msgspec.json.Decoder(SessionMemory)


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
    ev.set_defaults(handler=_cmd_eval)


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
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return fail(str(exc))
    # Without --session nothing is remembered: a session of its own, as the embedded ask.
    session = args.session or f"cli-{uuid.uuid4().hex[:16]}"
    message = Ask(session_id=session, text=args.text, channel="cli", run=args.run)

    given, interactive = list(args.answer), sys.stdin.isatty() and not args.json

    async def go() -> Any:
        async with open_client(args.connect, curve=curve) as client:
            reply = await request(client, message, timeout_s=None)  # the answer comes when the run ends
            # A run suspended on a question: the session's next sentence answers it.
            while isinstance(reply, AskReply) and reply.status == "clarification" and reply.metadata.get("suspended"):
                if given:
                    text: str | None = given.pop(0)
                elif interactive:
                    _print_answer(domain_output(reply), as_json=False, extra={})
                    text = await anyio.to_thread.run_sync(read_line, "answer> ", abandon_on_cancel=True)
                else:
                    text = None
                if text is None:
                    break
                reply = await request(client, Ask(session_id=session, text=text, channel="cli"), timeout_s=None)
            return reply

    try:
        reply = run_async(go)
    except TransportError as exc:
        return fail(str(exc), EXIT_FAILED, kind="transport")
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
        print(f"(answer with: ontoflow answer {reply.run_id} ANSWER" + (f", or {again})" if again else ")"))
    return reply_exit_code(reply)


def domain_paths(args: argparse.Namespace) -> list[Path]:
    """The domain folders to load (see the module docstring for the order of sources)."""
    if args.domains:
        return [Path(d) for d in args.domains]
    env = os.environ.get(DOMAINS_ENV, "")
    if env.strip():
        return [Path(p) for p in env.split(os.pathsep) if p.strip()]
    return find_domain_folders(EXAMPLES)


def load_catalogue(paths: list[Path]) -> tuple[Catalogue, list[Any], list[str]]:
    """Read the domains and load their handlers: ``(catalogue, capability classes, specs)``.

    Raises:
        DomainLoadError: no domain found, or one that does not load.
        CapabilityLoadError: handlers that do not import.
        ManifestError: a domain naming a capability its handlers do not provide.
    """
    if not paths:
        raise DomainLoadError(f"no domains: give --domains DIR, set ${DOMAINS_ENV}, or run where {EXAMPLES} holds domain folders")
    sources = [read_domain(p) for p in paths]
    specs = [s.handlers for s in sources if s.handlers]
    classes = load_capabilities(specs) if specs else []
    catalogue = Catalogue([s.manifest for s in sources], {c.metadata.id: c.metadata for c in classes})
    return catalogue, classes, specs


def state_file() -> Path:
    """Where session memory is kept: ``$XDG_STATE_HOME/ontoflow/sessions.json``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ontoflow" / "sessions.json"


def _load_memory(path: Path) -> SessionMemory:
    try:
        return _memory_decoder.decode(path.read_bytes())
    except FileNotFoundError:
        return SessionMemory()
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        # A damaged memory file costs the follow-ups, never the question: start afresh.
        print(f"ontoflow: session memory {path} is unreadable; starting without it", file=sys.stderr)
        return SessionMemory()


def _save_memory(path: Path, memory: SessionMemory) -> None:
    """Write atomically (temporary file, then rename), readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".sessions.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(msgspec.json.encode(memory))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _print_answer(answer: DomainOutput, *, as_json: bool, extra: dict[str, Any]) -> None:
    if as_json:
        doc = {"status": answer.status, "explanation": answer.explanation, "result": answer.result,
               "confidence": answer.confidence, "metadata": answer.metadata, **extra}
        sys.stdout.write(msgspec.json.encode(doc).decode() + "\n")
        return
    text = answer_text(answer)  # the same words the daemon's HTTP entry answers
    if text:
        print(text)


def _exit_code(answer: DomainOutput) -> int:
    return {"success": EXIT_OK, "clarification": EXIT_CLARIFICATION}.get(answer.status, EXIT_FAILED)


def _cmd_ask(args: argparse.Namespace) -> int:
    if args.connect is not None:
        ignored_with_connect(args)
        return _ask_remote(args)
    request = EntryRequest(session_id=args.session or "cli", input_text=args.text, channel="cli",
                           metadata=run_flag(args.run))
    problems = check_entry(request)
    if problems:
        return fail("invalid question: " + "; ".join(str(p) for p in problems))
    try:
        catalogue, classes, specs = load_catalogue(domain_paths(args))
        connections = read_connections(args.connections)
        adapter = embedded_adapter(catalogue, adapter_choice(args))
    except (DomainLoadError, CapabilityLoadError, ManifestError, ConfigError) as exc:
        return fail(str(exc))
    store = state_file() if args.session else None
    memory = _load_memory(store) if store is not None else SessionMemory()

    async def think() -> Any:
        return await understand(request, catalogue=catalogue, adapter=adapter, memory=memory, now_ms=int(time.time() * 1000))

    try:
        understood = anyio.run(think, backend="asyncio")
    except IntentRejected as exc:
        return fail(str(exc))
    except IntentAdapterFailed as exc:  # the model endpoint down, 429/5xx after retries: nothing ran
        return fail(str(exc), EXIT_FAILED)
    intent = msgspec.to_builtins(understood.intent)
    if understood.clarification is not None or understood.planned is None:
        if store is not None and understood.memory is not memory:
            _save_memory(store, understood.memory)  # a question was asked: its answer comes next
        answer = understood.clarification or DomainOutput(status="failure", explanation="nothing to run")
        _print_answer(answer, as_json=args.json, extra={"intent": intent})
        return _exit_code(answer)
    planned = understood.planned
    try:
        compile_plan(planned.plan, catalogue.capabilities)  # checked before any process starts
    except ManifestError as exc:
        return fail(f"the plan for this question does not compile (a domain manifest bug): {exc}")

    interactive = sys.stdin.isatty() and not args.json

    async def go() -> Any:
        with using_connections(connections):  # inproc workers; worker processes read the file
            async with open_local_cluster(classes, specs, transport=args.transport, log_level=args.log_level,
                                          connections=absolute_path(args.connections)) as cluster:
                compiled = compile_plan(planned.plan, cluster.catalog, defaults=cluster.defaults, worktree=os.getcwd())
                outcome = await cluster.run_until_asked(compiled, {})  # type: ignore[arg-type]
                return await settle(cluster, outcome, list(args.answer), interactive=interactive,
                                    show=lambda out: _print_answer(out, as_json=False, extra={}))

    try:
        result = anyio.run(go, backend="asyncio")
    except (Refused, KernelError, BaseExceptionGroup) as exc:
        error = first_error(exc, (Refused, KernelError))
        return fail(str(error), EXIT_INVALID if isinstance(error, Refused) else EXIT_FAILED)
    if store is not None:
        _save_memory(store, understood.memory)
    plan_doc = [{"id": s.id, "capability": s.capability, "depends_on": s.depends_on} for s in planned.plan.steps]
    if isinstance(result, Asked):  # nobody here answered: the run ends with this command
        answer = question_output(result)
        _print_answer(answer, as_json=args.json,
                      extra={"intent": intent, "run_id": result.run_id, "plan": plan_doc, "how_to_answer": embedded_hint()})
        if not args.json:
            print(embedded_hint())
        return EXIT_CLARIFICATION
    answer = answer_of(result.status, result.error, result.context, planned.answer_steps)
    _print_answer(answer, as_json=args.json, extra={"intent": intent, "run_id": result.run_id, "plan": plan_doc})
    return _exit_code(answer)


def _cmd_eval(args: argparse.Namespace) -> int:
    try:
        catalogue, _, _ = load_catalogue(domain_paths(args))
        data = decode_document(Path(args.file).read_bytes(), Path(args.file).suffix or "yaml")
        cases = msgspec.convert(data, list[EvalCase])
    except OSError as exc:
        return fail(f"{args.file}: cannot read the file: {exc.strerror}")
    except msgspec.ValidationError as exc:
        return fail(f"{args.file}: not a labelled set: {exc}")
    except (DomainLoadError, CapabilityLoadError, ManifestError) as exc:
        return fail(str(exc))
    if not cases:
        return fail(f"{args.file}: the labelled set is empty")
    try:
        matcher = embedded_adapter(catalogue, adapter_choice(args))  # the matcher unless one was chosen
    except ConfigError as exc:
        return fail(str(exc))

    async def classify_all() -> list[Any]:
        # Through the adapter interface, as every adapter is evaluated; no memory.
        return [await matcher.classify(c.text) for c in cases]

    try:
        predictions = anyio.run(classify_all, backend="asyncio")
    except IntentAdapterFailed as exc:
        return fail(str(exc), EXIT_FAILED)
    thresholds = {d: m.confidence_threshold for d, m in catalogue.domains.items()}
    report = evaluate(cases, predictions, thresholds)
    if args.json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
        return EXIT_OK
    print(f"adapter: {' '.join(f'{d}={n}' for d, n in sorted(adapter_choice(args).items())) or 'matcher'}   "
          f"cases: {report.cases}")
    print(f"goal accuracy:     {report.goal_accuracy:.1%}")
    print(f"entity accuracy:   {report.entity_accuracy:.1%}   (goal right and every labelled entity right)")
    print(f"under the gate:    {report.under_gate} of {report.cases} (a clarification instead of an answer)")
    print(f"precision of what passed the gate: {report.accepted_precision:.1%}")
    print(f"threshold for 100% precision on this set: {report.threshold_for_full_precision:.4f} "
          f"(would keep {report.kept_at_that_threshold} right answers)")
    print(f"{'goal':<28} {'support':>7} {'precision':>9} {'recall':>7}")
    for g in report.per_goal:
        print(f"{g.goal:<28} {g.support:>7} {g.precision:>9.1%} {g.recall:>7.1%}")
    if report.mistakes:
        print("mistakes:")
        for m in report.mistakes:
            print(f"  {m['text']!r}: expected {m['expected']} {m['expected_entities']}, got {m['got']} {m['got_entities']} ({m['confidence']:.2f})")
    return EXIT_OK
