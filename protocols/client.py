"""Client API messages between ``ontoflow`` commands and a daemon: one tagged union.

A client (``ontoflow submit``, ``workers``, ``cancel``) connects a DEALER to the daemon's
ROUTER, the same address its workers use, and sends one request at a time; the daemon answers
each request with exactly one reply. Client messages travel as ``[CLIENT_HEADER, body]`` so
the daemon tells them from worker messages by their first frame. Evolution rules are those of
``protocols.messages``: new fields go at the end with a default.

Conversation::

    client -> daemon   Submit(manifest, inputs, deadline_ms,   start a run; a repeated
                              idempotency_key)                 idempotency_key gets the same run
    daemon -> client   SubmitAccepted(run_id, existing)        ... it started (committed to the
                                                               journal first), or it existed
    daemon -> client   Busy(runs_in_flight, limit)             ... refused: too many runs in flight
    client -> daemon   ListRuns(status, limit)                 the newest runs first
    daemon -> client   RunList(runs)                           one RunSummary each
    client -> daemon   Show(run_id)                            a run's whole trace
    daemon -> client   RunTrace(run_id, status, trace, events) every step, event, transition, timing
    client -> daemon   Watch(run_id)                           live progress
    daemon -> client   RunProgress(run_id, steps, running)     as steps end (zero or more), then
    daemon -> client   RunStatus                               once, when the run has ended
    client -> daemon   Status(run_id, wait)                    where is that run (wait: at its end)
    daemon -> client   RunStatus(run_id, status, error, ...)   running / completed / failed / cancelled
    client -> daemon   Workers()                               who is connected
    daemon -> client   WorkersInfo(workers)                    one WorkerRecord per live worker
    client -> daemon   CancelRun(run_id, reason)               stop a run
    daemon -> client   RunStatus                               its status after the request
    client -> daemon   Answer(run_id | token, choice)          answer a suspended run's question
    daemon -> client   RunStatus                               running again (or still suspended)
    client -> daemon   Ask(session_id, text, channel)          a sentence (seed 004's Entry)
    daemon -> client   AskReply(status, explanation, ...)      the answer once its plan ran, or a
                                                               clarification at once
    daemon -> client   Error(code, message)                    any request refused (no stack trace)

The replies a daemon has for one client at the end of a batch leave in one frame set (a client
pipelining ``Submit(wait=True)`` gets two per run; the socket's per-message cost was a good part
of a daemon's time): two or more as one :class:`Replies` body, read by :func:`replies_from_frames`.
A client with one request at a time (every verb but ``--watch``) still gets one reply per set.
A client pipelining requests may send those of one turn in one set too (``client_requests``).

Error codes: each ``Error`` reply's ``code`` is one of ``ERROR_CODES`` (``error_codes``).

Durability (a daemon started with ``--journal``): ``SubmitAccepted`` is sent only once the
submission is committed to the journal, so an acknowledged run survives any crash of the
daemon; a client that got no answer may resubmit with the same ``idempotency_key`` and gets
the one run, whether the first attempt was recorded or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client_limits import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_RUN_ID_CHARS,
    Inputs,
    ManifestHash,
    Reason,
    Worktree,
    run_id_problem,
)
from ontoflow.protocols.error_codes import ERROR_CODES, ErrorCode
from ontoflow.protocols.errors import ProtocolError, decode_failure
from ontoflow.protocols.records import Question, RunSummary, TraceRecord, WorkerRecord
from ontoflow.protocols.types import RunStatusName, StatusReply

__all__ = [
    "CLIENT_HEADER", "ERROR_CODES", "Answer", "Ask", "AskReply", "Busy", "CancelRun", "Catalog", "CatalogInfo",
    "ClientMessage", "ClientRequest", "DaemonRequest", "Error", "ErrorCode", "ListRuns", "MAX_DEADLINE_MS",
    "MAX_IDEMPOTENCY_KEY_CHARS", "MAX_RUN_ID_CHARS", "Question", "Refused", "Replies", "RunList", "RunProgress",
    "RunStatus", "RunSummary", "RunTrace", "Show", "Status", "Submit", "SubmitAccepted", "SubmitRequest", "TraceRecord",
    "Watch", "WorkerRecord", "Workers", "WorkersInfo", "client_from_frames", "client_to_frames", "replies_from_frames",
    "replies_to_frames", "request_from_frames", "run_id_problem"]

#: First frame of every client message (worker messages start with ``b"ontoflow"``).
CLIENT_HEADER = b"ontoflow-client"

#: The longest ``Submit.deadline_ms`` a daemon takes: ten years. A run's deadline is journaled
#: as ``now + deadline_ms`` in a 64-bit INTEGER, so an unbounded one could not be stored.
MAX_DEADLINE_MS = 10 * 365 * 86_400_000

class _ClientMessage(msgspec.Struct, tag_field="op", frozen=True, gc=False):
    """Base of every client message (maps, not arrays: these are rare and must evolve).
    ``gc=False``, inherited: frozen decoded data, never in a cycle (``test_untracked``)."""


class Submit(_ClientMessage, tag="submit", frozen=True, kw_only=True):
    """Start a run of ``manifest`` (the decoded document) with ``inputs`` in its context.

    ``deadline_ms`` bounds the whole run: past it the run is cancelled (its running step is
    sent Cancel). ``run_id`` lets a client choose the id (idempotent resubmission).
    """

    manifest: dict[str, Any]
    inputs: Inputs = {}  # bounded in keys and their length (``protocols.client_limits``), as the two below
    deadline_ms: int | None = None
    run_id: str | None = None
    manifest_hash: ManifestHash = ""
    #: A repeated submit with the same key returns the first one's run (``existing=True``).
    idempotency_key: str | None = None
    #: Also answer the run's ``RunStatus`` when it ends (after ``SubmitAccepted``), as a
    #: ``Status(wait=True)`` would: submit-and-wait in one request.
    wait: bool = False
    #: The manifest's folder on the submitting host: relative paths the manifest names (a
    #: model file, artifacts) resolve against it on workers that share that filesystem.
    worktree: Worktree = ""


class SubmitRequest(Submit, tag="submit", frozen=True, kw_only=True):
    """A ``Submit`` as the daemon reads it (``request_from_frames``): the same message, with
    ``manifest`` left encoded. A client that submits the same document again sends the same
    bytes, so the daemon finds its compiled workflow by them without decoding the document;
    it decodes it only the first time (and refuses it then if it is not a map)."""

    manifest: msgspec.Raw  # type: ignore[assignment]


class SubmitAccepted(_ClientMessage, tag="submit_accepted", frozen=True, kw_only=True):
    """The run started under ``run_id``; ``existing`` when an idempotency key found it."""

    run_id: str
    existing: bool = False


class Busy(_ClientMessage, tag="busy", frozen=True, kw_only=True):
    """A submit refused because ``limit`` runs are in flight; retry after ``retry_after_ms``."""

    runs_in_flight: int
    limit: int
    retry_after_ms: int = 1000


class ListRuns(_ClientMessage, tag="list_runs", frozen=True, kw_only=True):
    """Ask for the newest runs, only those with ``status`` when set, at most ``limit``."""

    status: str | None = None
    limit: int = 50


class RunList(_ClientMessage, tag="run_list", frozen=True, kw_only=True):
    """The runs a :class:`ListRuns` asked for, newest first."""

    runs: list[RunSummary] = []


class Show(_ClientMessage, tag="show", frozen=True, kw_only=True):
    """Ask for a run's whole trace."""

    run_id: str


class RunTrace(_ClientMessage, tag="run_trace", frozen=True, kw_only=True):
    """A run's trace: ``trace`` has one dict per ended step (block, capability, event, action
    taken, attempt, timing); ``events`` every journaled fact in order (``at_ms``, ``kind``:
    ``run_submitted``, ``dispatched``, ``step_finished``, ``step_lost``...); ``context`` the
    run's context now."""

    run_id: str
    status: RunStatusName
    error: str | None = None
    started_ms: int = 0
    ended_ms: int = 0
    context: dict[str, Any] = {}
    trace: list[TraceRecord] = []
    events: list[dict[str, Any]] = []


class Watch(_ClientMessage, tag="watch", frozen=True, kw_only=True):
    """Follow a run: :class:`RunProgress` as its steps end, then its final :class:`RunStatus`."""

    run_id: str


class RunProgress(_ClientMessage, tag="run_progress", frozen=True, kw_only=True):
    """Steps of a watched run that just ended (trace dicts), and its steps in flight then as
    (step id, capability), in step-id order."""

    run_id: str
    steps: list[TraceRecord] = []
    running: list[tuple[str, str]] = []


class Answer(_ClientMessage, tag="answer", frozen=True, kw_only=True):
    """Answer a suspended run's question and resume it (see the module docstring).

    Give ``run_id`` (enough when the run asks one question) or ``token`` (a question's own).
    ``choice`` must be one of the question's candidates (or a value of a candidate that is a
    map, a ticker for ``{"symbol": ...}``) when it lists some.
    """

    choice: Any
    run_id: str | None = None
    token: str | None = None


class Status(_ClientMessage, tag="status", frozen=True, kw_only=True):
    """Ask for a run's status; with ``wait`` the reply comes when the run ends."""

    run_id: str
    wait: bool = False


class RunStatus(_ClientMessage, tag="run_status", frozen=True, kw_only=True):
    """A run's status: ``running``, ``suspended``, ``completed``, ``failed``, ``cancelled`` or
    ``expired``.

    ``context`` and ``trace`` (one dict per step) are filled once the run has ended;
    ``questions`` lists what a suspended run asks (see :class:`Question`); ``running``, while
    the run goes on, its steps in flight as (step id, capability), in step-id order (seed 000:
    the current state is always known), as :class:`RunProgress` gives them to a watcher.
    """

    run_id: str
    status: StatusReply
    error: str | None = None
    context: dict[str, Any] = {}
    trace: list[TraceRecord] = []
    started_ms: int = 0
    ended_ms: int = 0
    questions: list[Question] = []
    running: list[tuple[str, str]] = []


class Workers(_ClientMessage, tag="workers", frozen=True):
    """Ask who is connected."""


class WorkersInfo(_ClientMessage, tag="workers_info", frozen=True, kw_only=True):
    """The live workers, what they offer and their load."""

    workers: list[WorkerRecord] = []


class Catalog(_ClientMessage, tag="catalog", frozen=True):
    """Ask for the metadata of every capability the daemon knows (``ontoflow check --connect``)."""


class CatalogInfo(_ClientMessage, tag="catalog_info", frozen=True, kw_only=True):
    """The capabilities a submitted document is compiled and checked against."""

    capabilities: list[CapabilityMetadata] = []


class CancelRun(_ClientMessage, tag="cancel_run", frozen=True, kw_only=True):
    """Cancel a run: its running step gets Cancel, the run ends ``cancelled``."""

    run_id: str
    reason: Reason = "cancelled by request"  # at most ``MAX_REASON_CHARS``: it becomes the run's error


class Error(_ClientMessage, tag="error", frozen=True, kw_only=True):
    """A request was refused: ``code`` one of :data:`ERROR_CODES`, ``message`` why (no stack trace)."""

    code: str
    message: str


class Refused(Error, tag="error", frozen=True, kw_only=True):
    """An ``Error`` put in the place of a batch's request that did not decode (``client_requests``),
    answered as itself; one a client sends is not (its own text, up to 64 MiB, came back)."""


class Ask(_ClientMessage, tag="ask", frozen=True, kw_only=True):
    """A sentence for the daemon's domains (seed 004's Entry): understood, planned and run.

    ``session_id`` names the conversation (its memory: a follow-up such as "e da Vale?"
    resolves against the session's previous turn); ``channel`` says where it came from
    (``api``, ``cli``, ``chat``, ``http``), for logs. ``run``: the channel's run flag
    (``ask --run``): a goal that declares a boolean entity ``run`` (the pipelines domain: run
    the pipeline it wrote, and answer the run's result) gets it true.
    """

    session_id: str
    text: str
    channel: str = "api"
    run: bool = False


class AskReply(_ClientMessage, tag="ask_reply", frozen=True, kw_only=True):
    """The answer to an :class:`Ask`: a ``DomainOutput``'s fields, and where it came from.

    ``status`` is ``success``, ``failure`` or ``clarification`` (a question back: the
    session's next ``Ask`` answers it). ``run_id`` is the run the plan ran as (None for a
    clarification asked before anything ran, or a sentence refused); ``intent`` what the
    intent adapter understood (domain, goal, entities, confidence), empty when refused.
    """

    status: str
    explanation: str = ""
    result: dict[str, Any] = {}
    confidence: float = 0.0
    metadata: dict[str, Any] = {}
    run_id: str | None = None
    intent: dict[str, Any] = {}


ClientRequest = Submit | Status | Workers | CancelRun | ListRuns | Show | Watch | Catalog | Answer | Ask
ClientMessage = (
    Submit | SubmitAccepted | Status | RunStatus | Workers | WorkersInfo | CancelRun | Error | Busy | ListRuns
    | RunList | Show | RunTrace | Watch | RunProgress | Catalog | CatalogInfo | Answer | Ask | AskReply
)

#: What a daemon decodes: every client message, a Submit's document left encoded
#: (``SubmitRequest``); a reply sent as a request is answered ``invalid_request``.
DaemonRequest = (SubmitRequest | SubmitAccepted | Status | RunStatus | Workers | WorkersInfo | CancelRun | Error | Busy
                 | ListRuns | RunList | Show | RunTrace | Watch | RunProgress | Catalog | CatalogInfo | Answer | Ask | AskReply)


class Replies(msgspec.Struct, tag_field="op", tag="replies", frozen=True):
    """Replies to one client, in the order they were decided (never nested, never empty)."""

    messages: list[ClientMessage]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ClientMessage)
_request_decoder = msgspec.msgpack.Decoder(DaemonRequest)
_replies_decoder = msgspec.msgpack.Decoder(ClientMessage | Replies)


def client_to_frames(message: ClientMessage) -> list[bytes]:
    """Return the frames of a client message (without a routing identity)."""
    return [CLIENT_HEADER, _encoder.encode(message)]


def client_from_frames(frames: Sequence[bytes | memoryview]) -> ClientMessage:
    """Decode frames produced by ``client_to_frames`` (identity already removed).

    Raises:
        ProtocolError: for a wrong frame count, a foreign header or an invalid body (the
            reason names the field, never the bytes).
    """
    return _from_frames(frames, _decoder)


def request_from_frames(frames: Sequence[bytes | memoryview]) -> DaemonRequest:
    """Decode a request as a daemon reads it: as ``client_from_frames``, but a ``Submit``
    arrives as a ``SubmitRequest`` (its document still encoded) and replies are refused.

    Raises:
        ProtocolError: as ``client_from_frames``.
    """
    return _from_frames(frames, _request_decoder)


def replies_to_frames(messages: Sequence[ClientMessage]) -> list[bytes]:
    """The frames carrying ``messages`` to one client (without a routing identity): one
    message as ``client_to_frames`` makes it, several as one :class:`Replies` body.

    Raises:
        ValueError: when ``messages`` is empty.
    """
    if not messages:
        raise ValueError("no reply to frame")
    return [CLIENT_HEADER, _encoder.encode(messages[0] if len(messages) == 1 else Replies(messages=list(messages)))]


def replies_from_frames(frames: Sequence[bytes | memoryview]) -> list[ClientMessage]:
    """The replies in frames a daemon sent (identity already removed), in order: one for a
    single reply, each of a :class:`Replies` otherwise.

    Raises:
        ProtocolError: as ``client_from_frames``, and for an empty ``Replies``.
    """
    decoded = _from_frames(frames, _replies_decoder)
    if type(decoded) is not Replies:
        return [decoded]
    if not decoded.messages:
        raise ProtocolError("an empty replies body", reason="replies")
    return decoded.messages


def _from_frames(frames: Sequence[bytes | memoryview], decoder: msgspec.msgpack.Decoder) -> Any:
    if len(frames) != 2:
        raise ProtocolError(f"expected 2 frames, got {len(frames)}", reason="frames")
    if bytes(frames[0]) != CLIENT_HEADER:
        raise ProtocolError("unknown header frame", reason="header")
    try:
        return decoder.decode(frames[1])
    except Exception as exc:  # untrusted bytes: total, as ``runtime.codec.decode``
        raise decode_failure(exc, "client message") from None
