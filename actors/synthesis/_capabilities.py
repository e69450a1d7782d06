"""The capabilities of seed 003's chat state machine, one per state that does work.

The state machine itself is the workflow manifest ``chat_fsm.yaml`` beside this file, run by
ontoflow's own engine: these capabilities do the work of its blocks and emit the events its
transitions route. Each logs the seed's structured event for its state (keys, counts and
paths, never values), on the worker's log; stdout stays for the answer.

Context keys (the ``pipelines.*`` ontology):
``pipelines.request`` (the request as a map: source, tables, format, destination, name),
``pipelines.discovery`` (the discovery summary), ``pipelines.document`` (the pipeline),
``pipelines.guard_errors`` (``[{path, message}]`` of the last guard: its first 50, then
``{path: "...", message, more}`` counting the rest), ``pipelines.yaml`` (the
rendered pipeline), ``pipelines.plan_steps`` (the compiled plan's step ids),
``pipelines.message`` (what the person reads when the machine stops short).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, ClassVar

import anyio
import msgspec
import structlog

from ontoflow.actors.capability import Capability, PermanentError, Result
from ontoflow.actors.synthesis._deterministic import SynthesisRequest, render_pipeline
from ontoflow.actors.synthesis._guard import component_catalog, component_ids, guard_pipeline
from ontoflow.actors.synthesis._synthesizers import DeterministicSynthesizer, LlmSynthesizer, Synthesizer
from ontoflow.actors.synthesis._discovery import DiscoverySummary, discover_sqlite
from ontoflow.actors.synthesis.errors import SynthesisError
from ontoflow.protocols import CapabilityMetadata, RetryPolicy, StepContext
from ontoflow.protocols.errors import Problem

__all__ = [
    "CHAT_CAPABILITIES",
    "AskForDetails",
    "CaptureIntent",
    "CompilePipeline",
    "DiscoverSource",
    "GuardPipeline",
    "HandOver",
    "RegeneratePipeline",
    "ReportProblem",
    "SynthesizePipeline",
]

log = structlog.get_logger()

REQUEST = "pipelines.request"
DISCOVERY = "pipelines.discovery"
DOCUMENT = "pipelines.document"
GUARD_ERRORS = "pipelines.guard_errors"
YAML = "pipelines.yaml"
PLAN_STEPS = "pipelines.plan_steps"
MESSAGE = "pipelines.message"
LAST_FAILURE = "ontoflow.last_failure"

_request_decoder = msgspec.json.Decoder(SynthesisRequest)
_ENV_PREFIX = "ONTOFLOW_CONNECTION_"


SYNTHESIZER = "pipelines.synthesizer"
#: What the person reads when the model answered nothing (seed 003: never a silent failure).
EMPTY_FALLBACK = ("The pipeline writer gave no answer, so no pipeline was made. Please try again; "
                  "the deterministic synthesiser (the default) always answers.")
_OPTIONAL = {SYNTHESIZER: {"type": "string", "enum": ["deterministic", "llm"], "default": "deterministic"}}


def _meta(cap_id: str, description: str, inputs: list[str], outputs: list[str], events: list[str]) -> CapabilityMetadata:
    properties: dict[str, Any] = {k: {"type": ["object", "array", "string"]} for k in inputs}
    if cap_id in ("pipelines.synthesize", "pipelines.regenerate"):
        properties.update(_OPTIONAL)
    if cap_id == "pipelines.guard":  # what was asked, when known: the guard checks the pipeline does it
        properties[REQUEST] = {"type": "object"}
    return CapabilityMetadata(
        id=cap_id,
        description=description,
        events=[*events, "failure"],
        input_schema={"type": "object", "properties": properties, "required": inputs},
        outputs=outputs,
        retry=RetryPolicy(max_retries=2),  # only transient errors are retried (a model endpoint's 429/5xx)
        idempotent=True,
        timeout_ms=60_000,
    )


#: The guard's paths a log line or the person's message names (the rest are counted): a pipeline
#: of 500 bad steps has thousands, and seed 003's hand-over message is a concise one.
_SHOWN_PATHS = 20
_SAID_PATHS = 5
#: A path is made of the pipeline's own keys: a model's 100,000-character key is no path to show whole.
_PATH_CHARS = 80


#: The guard's errors a run carries on (its context, the journal, the regeneration prompt): the
#: first ones, each cut short, and how many more. All of them went: a model's 4 MB answer of
#: 240,000 ``${...}`` settings was 23 MB of errors in the run's context and a 20 MB prompt.
_TOLD_ERRORS, _MESSAGE_CHARS = 50, 300


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most] + "..."


def _told(problems: list[Problem]) -> list[dict[str, str]]:
    """The guard's ``problems`` as the errors a run carries (see :data:`_TOLD_ERRORS`)."""
    errors = [{"path": _cut(p.path, _PATH_CHARS), "message": _cut(p.message, _MESSAGE_CHARS)}
              for p in problems[:_TOLD_ERRORS]]
    if len(problems) > _TOLD_ERRORS:
        more = len(problems) - _TOLD_ERRORS
        errors.append({"path": "...", "message": f"and {more} more errors like these", "more": more})
    return errors


def _guard_errors(inputs: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The guard's errors a step was given (the summary of those left out included), and how
    many errors the guard found in all."""
    errors = [e for e in inputs[GUARD_ERRORS] if isinstance(e, dict)]
    left_out = sum(e["more"] - 1 for e in errors if isinstance(e.get("more"), int) and e["more"] > 0)
    return errors, len(errors) + left_out


def _path(path: Any) -> str:
    text = str(path or "(document)")
    return text if len(text) <= _PATH_CHARS else text[:_PATH_CHARS] + "..."


def _logged(paths: list[Any]) -> list[str]:
    return [_path(p) for p in paths[:_SHOWN_PATHS]]


def _some_paths(paths: list[str], total: int) -> str:
    """The first paths (each cut short), and how many more of ``total`` there are."""
    shown = ", ".join(_path(p) for p in paths[:_SAID_PATHS])
    said = min(len(paths), _SAID_PATHS)
    return shown + (f" and {total - said} more" if total > said else "")


def _request(inputs: dict[str, Any]) -> SynthesisRequest:
    try:
        return msgspec.convert(inputs[REQUEST], SynthesisRequest)
    except msgspec.ValidationError as exc:
        raise PermanentError(f"{REQUEST}: {exc}") from None


class _Unconfigured(ValueError):
    """A ``@name`` source whose connection is configured nowhere."""


def _database_of(source: str) -> str:
    """The file a source names: the path itself, or the value of a ``@name`` connection,
    resolved here, at run time on the worker (``ONTOFLOW_CONNECTION_<NAME>``, else the
    worker's connections file): a path, a ``sqlite:///path`` URL, or a map with ``database``
    or ``path``. The value stays in this function: messages name ``@name`` only."""
    if not source.startswith("@"):
        return source
    from ontoflow.actors.pipelines import ConnectionResolutionError, lookup_connection

    from ontoflow.protocols.oml import MAX_CONNECTION_NAME_CHARS, connection_name_too_long

    name = source[1:]
    if len(name) > MAX_CONNECTION_NAME_CHARS:  # refused by its length, never echoed (nor its variable's name)
        raise _Unconfigured(connection_name_too_long(len(name)))
    try:
        value = lookup_connection(name)
    except ConnectionResolutionError:
        variable = _ENV_PREFIX + name.upper().replace("-", "_")
        raise _Unconfigured(f"connection {source} is not configured: add it to the worker's connections file "
                            f"(--connections) or set {variable}") from None
    if isinstance(value, dict):
        value = value.get("database") or value.get("path") or ""
    return str(value).removeprefix("sqlite:///").removeprefix("sqlite://")


def _destination_problem(destination: str) -> str | None:
    """Why the files cannot go into ``destination`` (the folder itself, or the nearest of its
    parents that exists, is a file), read on this worker as the writers will; None when they can."""
    if len(destination.encode(errors="replace")) > 4096:  # no file system opens it; its parents cost n² to list
        return f"cannot write into the folder given: it is {len(destination):,} characters, a path is at most 4,096 bytes"
    path = Path(destination or ".").expanduser()
    try:
        for folder in (path, *path.parents):
            if folder.exists():
                return None if folder.is_dir() else f"cannot write into the folder {destination}: {folder} is a file, not a folder"
    except (OSError, ValueError):  # a NUL, a name too long: no folder either
        return f"cannot write into the folder {destination}: it is not a usable folder name"
    return None


def _synthesizer(kind: str) -> Synthesizer:
    """The synthesiser a step asks for: the deterministic one, or the model configured by the
    worker's environment (``ONTOFLOW_LLM_URL``, ``ONTOFLOW_LLM_MODEL``, the key's variable)."""
    if kind != "llm":
        return DeterministicSynthesizer()
    from ontoflow.actors.llm import LlmClient, llm_config_from_env

    catalog = component_catalog()
    return LlmSynthesizer(LlmClient(llm_config_from_env()), {cid: catalog[cid] for cid in component_ids(catalog)})


class CaptureIntent(Capability):
    """INTENT_CAPTURED: check the request's entities; a usable one goes on to discovery."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.capture_intent", "Check an export request's entities (source, tables, format, destination).",
        [REQUEST], [REQUEST], ["success", "incomplete"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        request = _request(inputs)
        if not request.source.strip():
            log.info("intent_incomplete", missing=["source"])
            return Result(event="incomplete", outputs={})
        log.info("intent_captured", source_kind="connection" if request.source.startswith("@") else "path",
                 tables=None if request.tables is None else len(request.tables), format=request.format)
        return Result(outputs={REQUEST: msgspec.to_builtins(request)})


class DiscoverSource(Capability):
    """DISCOVERY: summarise the SQLite source the request names (tables, columns, row counts)."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.discover", "Inspect the SQLite database a request names.", [REQUEST], [DISCOVERY, MESSAGE],
        ["success", "not_found"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        request = _request(inputs)
        try:
            # In a thread: SQLite waits (seconds) on another program's lock, and the worker's
            # loop (its heartbeats, its other steps) must go on meanwhile.
            summary = await anyio.to_thread.run_sync(
                functools.partial(discover_sqlite, _database_of(request.source), source=request.source))
        except (SynthesisError, _Unconfigured) as exc:
            # An output, not an error text: the base scrubs errors of every input value, and
            # the person must read which source is missing (their own words, never a secret).
            log.info("discovery_failed", source_kind="connection" if request.source.startswith("@") else "path",
                     reason="unconfigured" if isinstance(exc, _Unconfigured) else "not_found")
            return Result(event="not_found", outputs={MESSAGE: str(exc)})
        log.info("discovery_done", tables=len(summary.tables), rows=sum(t.rows for t in summary.tables))
        return Result(outputs={DISCOVERY: msgspec.to_builtins(summary)})


class SynthesizePipeline(Capability):
    """OML_SYNTHESIS: write the pipeline from the request and the discovery summary."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.synthesize", "Write an OML v0.1.0 pipeline from a request and a discovery summary.",
        [REQUEST, DISCOVERY], [DOCUMENT, MESSAGE], ["success", "cannot_synthesize", "empty"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        request = _request(inputs)
        discovery = msgspec.convert(inputs[DISCOVERY], DiscoverySummary)
        log.info("oml_synthesis_start", synthesizer=inputs[SYNTHESIZER], tables=len(discovery.tables))
        blocked = _destination_problem(request.destination)
        if blocked is not None:  # no writer could create its files there: say so now, not when it runs
            return Result(event="cannot_synthesize", outputs={MESSAGE: blocked})
        try:
            answer = await _synthesizer(inputs[SYNTHESIZER]).generate(request, discovery)
        except SynthesisError as exc:  # a table discovery did not find, a format no writer has
            return Result(event="cannot_synthesize", outputs={MESSAGE: str(exc)})
        if answer.empty:
            return Result(event="empty", outputs={MESSAGE: EMPTY_FALLBACK})
        steps = answer.document.get("steps") if isinstance(answer.document, dict) else None
        log.info("oml_synthesis_complete", steps=len(steps) if isinstance(steps, list) else None)
        return Result(outputs={DOCUMENT: answer.document})


class GuardPipeline(Capability):
    """VALIDATE_OML: the schema guard, what compile would refuse, and whether the pipeline does
    what was asked (``_guard``); ``pass`` or ``fail`` with every error's path."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.guard", "Check a pipeline against the OML v0.1.0 contract and the request.", [DOCUMENT],
        [GUARD_ERRORS], ["pass", "fail"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        request = _request(inputs) if REQUEST in inputs else None
        # In a thread: a model's 4 MB answer takes the guard seconds (a text is decoded again to
        # say where it stops; long texts are scanned for secrets), and the loop must go on.
        problems = await anyio.to_thread.run_sync(guard_pipeline, inputs[DOCUMENT], request)
        errors = _told(problems)
        if problems:
            log.info("schema_guard_fail", errors=len(problems), paths=_logged([p.path for p in problems]))
            return Result(event="fail", outputs={GUARD_ERRORS: errors})
        log.info("schema_guard_pass")
        return Result(event="pass", outputs={GUARD_ERRORS: []})


class RegeneratePipeline(Capability):
    """REGENERATE_ONCE: one guided regeneration naming each guard error (the deterministic
    synthesiser writes the pipeline again from the request and the discovery)."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.regenerate", "Write the pipeline again, once, guided by the guard's errors.",
        [REQUEST, DISCOVERY, GUARD_ERRORS, DOCUMENT], [DOCUMENT, MESSAGE], ["success", "cannot_synthesize", "empty"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        errors, total = _guard_errors(inputs)
        log.info("regeneration_attempt", errors=total, paths=_logged([e.get("path") for e in errors if "more" not in e]))
        problems = [Problem(path=str(e.get("path", "")), message=str(e.get("message", ""))) for e in errors]
        try:
            answer = await _synthesizer(inputs[SYNTHESIZER]).regenerate(
                _request(inputs), msgspec.convert(inputs[DISCOVERY], DiscoverySummary), inputs[DOCUMENT], problems)
        except SynthesisError as exc:
            return Result(event="cannot_synthesize", outputs={MESSAGE: str(exc)})
        if answer.empty:
            return Result(event="empty", outputs={MESSAGE: EMPTY_FALLBACK})
        steps = answer.document.get("steps") if isinstance(answer.document, dict) else None
        log.info("oml_synthesis_complete", steps=len(steps) if isinstance(steps, list) else None, regenerated=True)
        return Result(outputs={DOCUMENT: answer.document})


class CompilePipeline(Capability):
    """COMPILE: compile the guarded pipeline into an execution plan; answer its YAML."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.compile", "Compile a guarded pipeline into an execution plan.", [DOCUMENT], [YAML, PLAN_STEPS],
        ["success"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        from ontoflow.actors.pipelines import compile_pipeline
        from ontoflow.protocols.errors import ManifestError
        from ontoflow.protocols.oml import pipeline_from_data

        document = inputs[DOCUMENT]
        log.info("compile_start", steps=len(document.get("steps", [])))
        catalog = component_catalog()
        try:
            plan = compile_pipeline(pipeline_from_data(document, components=component_ids(catalog),
                                                       source="synthesised pipeline"),
                                    catalog)
        except ManifestError as exc:
            raise PermanentError(str(exc)) from None
        log.info("compile_complete", plan_steps=len(plan.steps))
        return Result(outputs={YAML: render_pipeline(document), PLAN_STEPS: [s.id for s in plan.steps]})


class HandOver(Capability):
    """The concise human-in-the-loop message after a second invalid pipeline (never a third
    generation): the question the domain's handler asks a person through the runtime's
    clarification (its run suspends until the answer)."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.hand_over", "Tell the person the pipeline could not be made valid, and why.", [GUARD_ERRORS],
        [MESSAGE], ["needs_human"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        errors, total = _guard_errors(inputs)
        paths = _some_paths([e.get("path") for e in errors if "more" not in e], total)
        log.info("hitl_handover", errors=total)
        message = (f"I could not write a valid pipeline for this request (still wrong after one correction: {paths}). "
                   "Answer with a hint for the pipeline writer (the tables, the format), 'builtin' to let the "
                   "built-in synthesiser write it, or 'cancel'.")
        return Result(event="needs_human", outputs={MESSAGE: message})


class AskForDetails(Capability):
    """The open question, asked only before discovery: the request names no source."""

    metadata: ClassVar[CapabilityMetadata] = _meta(
        "pipelines.ask_for_details", "Ask which database to export from.", [REQUEST], [MESSAGE], ["needs_details"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        message = "Which SQLite database should I export from? Give its path (./shop.db) or a connection (@name)."
        log.info("details_requested", missing=["source"])
        return Result(event="needs_details", outputs={MESSAGE: message})


class ReportProblem(Capability):
    """The request cannot be met as asked: the message already says what is missing."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="pipelines.report_problem",
        description="Answer why the request cannot be met.",
        events=["reported", "failure"],
        input_schema={"type": "object", "properties": {MESSAGE: {"type": "string"}, LAST_FAILURE: {"type": "object"}}},
        outputs=[MESSAGE],
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        message = inputs.get(MESSAGE)
        if not message:  # a step failed (a model endpoint down, say): its recorded error says why
            failure = inputs.get(LAST_FAILURE) or {}
            message = f"The pipeline could not be made: {failure.get('error') or 'a step failed'}."
        log.info("request_not_met", failed_block=(inputs.get(LAST_FAILURE) or {}).get("block"))
        return Result(event="reported", outputs={MESSAGE: message})


#: The capabilities of the chat state machine, in the order of its states.
CHAT_CAPABILITIES: list[type[Capability]] = [
    CaptureIntent, AskForDetails, DiscoverSource, SynthesizePipeline, GuardPipeline, RegeneratePipeline, CompilePipeline, HandOver,
    ReportProblem,
]
