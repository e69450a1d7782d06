"""Wire messages between the orchestrator and worker hosts: one tagged union.

Every message is a msgspec Struct tagged by ``op`` and encoded as a msgpack array (hot
messages stay small and fast). Evolution rules: a new field goes at the end with a default;
fields are never reordered or removed; a decoder ignores trailing fields it does not know.

Conversation (the Majordomo pattern of the ZeroMQ guide)::

    worker -> orchestrator   Ready          announce capabilities, slots and domains
    orchestrator -> worker   Welcome        heartbeat interval and liveness
    orchestrator -> worker   Invoke         run one step
    worker -> orchestrator   Outcome        the step's event, outputs, duration, retries
    both ways                Heartbeat      I am alive
    orchestrator -> worker   Cancel         stop a step; the worker answers Outcome(cancelled)
    both ways                Disconnect     goodbye, with the reason
    worker -> orchestrator   Observation    something a capability perceived
    both ways                Batch          several of the above to one peer, in one frame

A ``Batch`` exists for throughput: a busy orchestrator answers many Outcomes in one pass and
a busy worker finishes many steps in one loop turn; sending them as one ZeroMQ message pays the
per-message costs (a libzmq send, a wake-up of the receiver's I/O thread and event loop) once.
Receivers unpack it in order, so a batch means exactly what its messages sent one by one would.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata, check_metadata
from ontoflow.protocols.context import Segment, StepContext
from ontoflow.protocols.patterns import PatternBudget

__all__ = [
    "MAX_BATCH_MESSAGES",
    "MAX_HOST_CHARS",
    "MAX_HEARTBEAT_MS",
    "MAX_LIVENESS",
    "MIN_MAX_MESSAGE_BYTES",
    "PROTOCOL_VERSION",
    "STALL_BEAT_SUFFIX",
    "Batch",
    "Cancel",
    "Disconnect",
    "Heartbeat",
    "Invoke",
    "Message",
    "Observation",
    "Outcome",
    "Ready",
    "WireMessage",
    "Welcome",
    "observation_problem",
    "ready_problem",
    "worker_id_problem",
]

#: Bumped on any change a peer of the previous version could not decode or keep (2: ``Batch``;
#: 3: the session token, which a worker must present or its answers are ignored).
PROTOCOL_VERSION = 3

#: The smallest message size limit a worker may announce (``Ready.max_message_bytes``).
MIN_MAX_MESSAGE_BYTES = 1024

#: The longest worker id (a default one is HOST-PID-RANDOM, and a host name may be 253 long).
MAX_WORKER_ID_CHARS = 256

#: What ends the routing identity of a worker's second connection, kept by a thread of its own
#: to send its Heartbeats while a step blocks its event loop (``actors.worker._stall_beats``):
#: the worker's identity then this (``#`` is in no worker id). The daemon takes such a
#: Heartbeat as the worker's when it carries the worker's session token, and only then.
STALL_BEAT_SUFFIX = b"#beat"

#: The longest heartbeat interval and the most liveness intervals a daemon may run with and a
#: ``Welcome`` may announce (what ``ontoflow daemon --heartbeat-ms/--liveness`` accept): a
#: worker refuses a Welcome outside them, so an orchestrator refuses to be made with them.
MAX_HEARTBEAT_MS = 86_400_000
MAX_LIVENESS = 1000

#: The longest ``Ready.host`` (a DNS name is at most 253 characters).
MAX_HOST_CHARS = 255

#: The longest run id or step id of an attempt a Ready holds (run ids are at most 128
#: characters, node and block ids at most 128 each): the ids go back in the Cancels. Their
#: count is not bounded but by the message size: a worker lists every answer it sent in the
#: last liveness window, and at full speed that is a hundred thousand.
MAX_HELD_ID_CHARS = 1_024

#: The most capabilities and domain manifests one Ready may announce: each is checked, kept
#: in the catalogue and listed in the ``worker_ready`` log line.
MAX_READY_CAPABILITIES, MAX_READY_DOMAINS = 1_024, 256

_WORKER_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.:@-]{{0,{MAX_WORKER_ID_CHARS - 1}}}")


def worker_id_problem(worker_id: str) -> str | None:
    """Why ``worker_id`` cannot name a worker, or None when it can.

    A worker id is a word in every log line and listing about the worker: 1 to
    ``MAX_WORKER_ID_CHARS`` letters, digits and ``_ . : @ -``, starting with a letter or a
    digit. The text never quotes the id (it may be huge).
    """
    if _WORKER_ID.fullmatch(worker_id) is not None:
        return None
    return (f"worker_id must be 1 to {MAX_WORKER_ID_CHARS} letters, digits and '_.:@-', starting with a letter "
            f"or a digit (got {len(worker_id)} characters)")


def ready_problem(ready: Ready, protocol: int) -> str | None:
    """Why the orchestrator refuses ``ready`` (a worker announcing itself), or None.

    Its worker id (:func:`worker_id_problem`), its host (a name of at most
    :data:`MAX_HOST_CHARS` printable characters), its protocol version, its slots, its message
    size limit (0, or at least :data:`MIN_MAX_MESSAGE_BYTES`), the ids of the attempts it
    holds (at most :data:`MAX_HELD_ID_CHARS` characters), how
    many capabilities and domains it announces (:data:`MAX_READY_CAPABILITIES`,
    :data:`MAX_READY_DOMAINS`), and every capability it announces checked as a worker checks
    its own at load (:func:`~protocols.capability.check_metadata`): a peer that skips that check (any peer,
    without CURVE) cannot register an id such as ``../x y`` or a retry policy no step could
    follow. The text names the capability by its place in the Ready, never quoting a value.

    Args:
        ready: the announcement.
        protocol: the version this orchestrator speaks.
    """
    problem = worker_id_problem(ready.worker_id)
    if problem is not None:
        return problem
    if len(ready.host) > MAX_HOST_CHARS or not ready.host.isprintable():
        # Logged with every registration and listed to clients: a peer's 60 MB "host" would
        # be a 60 MB log line per Ready it sends.
        return (f"host must be at most {MAX_HOST_CHARS} printable characters, a host name "
                f"(got {len(ready.host)} characters)")
    if ready.protocol != protocol:
        return f"protocol version {ready.protocol} is not supported; this orchestrator speaks {protocol}"
    if ready.slots < 1:
        return "slots must be >= 1"
    if ready.max_message_bytes != 0 and ready.max_message_bytes < MIN_MAX_MESSAGE_BYTES:
        # Under it not even a Welcome and a small step's Invoke would fit: refused plainly.
        return f"max_message_bytes must be 0 (unknown) or at least {MIN_MAX_MESSAGE_BYTES}"
    problem = _counts_problem(ready)
    if problem is not None:
        return problem
    budget = PatternBudget()  # RE2's compiling, bounded for the whole Ready
    for i, meta in enumerate(ready.capabilities):
        try:
            found = check_metadata(meta, where=f"capabilities[{i}]", budget=budget)
        except Exception as exc:  # a shape the check does not expect (a list among ``required``): refused, not a crash
            return f"capabilities[{i}]: its metadata cannot be checked ({type(exc).__name__})"
        for problem in found:
            # Bounded: a problem's text may name a key of the peer's schema, of any length.
            return f"{problem.path}: {problem.message}"[:_MAX_REASON_CHARS]
    return None


def _counts_problem(ready: Ready) -> str | None:
    """Why the lists of ``ready`` are too long, or a held attempt's ids, or None."""
    for field, count, limit in (("capabilities", len(ready.capabilities), MAX_READY_CAPABILITIES),
                                ("domains", len(ready.domains), MAX_READY_DOMAINS)):
        if count > limit:
            return f"{field} must have at most {limit} entries (got {count})"
    for i, (run_id, step_id, _) in enumerate(ready.holding):
        if not (0 < len(run_id) <= MAX_HELD_ID_CHARS and 0 < len(step_id) <= MAX_HELD_ID_CHARS):
            return f"holding[{i}]: a run id and a step id must be 1 to {MAX_HELD_ID_CHARS} characters"
    return None


#: The longest word of an ``Observation`` (its capability, kind and id): each is a word in log
#: lines and the id is kept (per trigger) to recognise repeats, so a peer's megabyte id would
#: be a megabyte line and a megabyte key.
MAX_OBSERVATION_WORD_CHARS = 1024

#: What a word of an Observation may not hold: control characters (a newline or an ESC would
#: forge or drive a log line). Format characters (a ZWNJ in a Persian file name) are words.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def observation_problem(observation: Observation, capability: str) -> str | None:
    """Why ``observation``, perceived by the capability ``capability``, may not be sent or
    accepted, or None.

    ``capability``, ``kind`` and ``id`` are 1 to :data:`MAX_OBSERVATION_WORD_CHARS` characters
    without a control character (a watcher's id holds a file name of up to 255), and a
    capability reports only its own perceptions (``observation.capability`` is its id). The worker checks what a capability returns before sending it, and the
    orchestrator checks what arrives (a peer need not be our worker). The text never quotes a
    value.
    """
    for field in ("capability", "kind", "id"):
        word = getattr(observation, field)
        if not 0 < len(word) <= MAX_OBSERVATION_WORD_CHARS or _CONTROL.search(word) is not None:
            return (f"{field} must be 1 to {MAX_OBSERVATION_WORD_CHARS} characters, none a control character "
                    f"(got {len(word)} characters)")
    if observation.capability != capability:
        return "an observation must name the capability that perceived it"
    return None


#: The longest refusal a Ready gets (sent back in the Disconnect and logged).
_MAX_REASON_CHARS = 200


# gc=False (inherited by every message): frozen, and what a message holds is decoded data or
# values built before it (a capability's outputs, checked encodable): none can refer back to
# it, so it is never in a cycle and the collector need not track it (tests/protocols/test_untracked.py).
class Message(msgspec.Struct, tag_field="op", array_like=True, frozen=True, gc=False):
    """Base of every wire message."""


class Ready(Message, tag="ready", frozen=True, kw_only=True):
    """A worker host announces itself and what it offers."""

    protocol: int
    worker_id: str
    host: str = ""
    pid: int = 0
    capabilities: list[CapabilityMetadata] = []
    slots: int = 1
    #: Step attempts ``(run_id, step_id, attempt)`` this host still runs or has answered
    #: while cut off, when it registers again after a reconnect. The orchestrator keeps those
    #: it still awaits on this worker and sends Cancel for the others (re-dispatched or ended).
    holding: list[tuple[str, str, int]] = []
    #: The session token of this worker's last Welcome, when it registers again on a new
    #: socket: proof that it is the worker that registered this identity ("" the first time).
    session: str = ""
    #: The domain manifests (seed 004) this worker serves, as plain maps: the orchestrator
    #: validates each one on its own, so a bad manifest is refused without refusing the worker
    #: (an older orchestrator ignores this trailing field; no protocol bump is needed).
    domains: list[dict[str, Any]] = []
    #: The largest message this worker's socket accepts (its ``--max-message-bytes``): a
    #: bigger one would make libzmq drop the whole connection, so the orchestrator never sends
    #: one (an Invoke over it ends its step ``failure``, ``invoke_too_large``). 0: unknown (an
    #: older worker, which does not send this trailing field; no protocol bump is needed).
    max_message_bytes: int = 0


class Welcome(Message, tag="welcome", frozen=True, kw_only=True):
    """The orchestrator accepts a worker and announces the heartbeat it expects and its message size limit."""

    worker_id: str
    heartbeat_ms: int
    liveness: int
    #: A token the daemon draws for this registration. The worker puts it in every Outcome,
    #: Heartbeat and Observation it sends, and in its next Ready: messages without it are
    #: not from the session the daemon registered, and are ignored.
    session: str = ""
    #: The largest message the daemon's socket accepts (its ``--max-message-bytes``): a
    #: bigger one would make libzmq drop this worker's whole connection, so the worker bounds
    #: its answers and cuts its batches under it. 0: unknown (an older daemon, which does not
    #: send this trailing field; an older worker ignores it; no protocol bump is needed).
    max_message_bytes: int = 0


class Invoke(Message, tag="invoke", frozen=True):
    """Run one attempt of one step.

    ``deadline_ms`` is the time the step may still take from receipt (relative, so clocks of
    different hosts need not agree); ``None`` for no limit. Not keyword-only: the daemon makes
    one per step, positionally (msgspec matches keywords one by one).
    """

    run_id: str
    step_id: str
    attempt: int
    capability: str
    inputs: dict[str, Any] = {}
    context: StepContext = StepContext()
    deadline_ms: int | None = None


class Outcome(Message, tag="outcome", frozen=True, kw_only=True):
    """The result of one attempt: never an exception, always an event."""

    run_id: str
    step_id: str
    attempt: int
    event: str
    outputs: dict[str, Any] = {}
    error: str | None = None
    reason: str | None = None
    duration_ms: float = 0.0
    retries: int = 0
    segments: list[Segment] = []
    #: The session token of the Welcome (see ``Welcome.session``).
    session: str = ""


class Heartbeat(Message, tag="heartbeat", frozen=True):
    """Liveness: sent both ways every interval (a worker's carries its session token)."""

    session: str = ""


class Cancel(Message, tag="cancel", frozen=True, kw_only=True):
    """Stop a running step; the worker cancels its task and reports ``cancelled``."""

    run_id: str
    step_id: str
    attempt: int = 0


class Disconnect(Message, tag="disconnect", frozen=True, kw_only=True):
    """Goodbye, with the reason (a wrong protocol version, a shutdown)."""

    reason: str
    #: A worker's goodbye carries its session token (see ``Welcome.session``).
    session: str = ""


class Observation(Message, tag="observation", frozen=True, kw_only=True):
    """Something a capability perceived (seed 001); ``id`` makes repeats recognisable."""

    capability: str
    kind: str
    id: str
    data: dict[str, Any] = {}
    #: The session token of the Welcome (see ``Welcome.session``).
    session: str = ""


WireMessage = Ready | Welcome | Invoke | Outcome | Heartbeat | Cancel | Disconnect | Observation


#: The most messages one ``Batch`` carries (as ``protocols.client_requests.MAX_REQUESTS`` bounds a
#: client's): a receiver handles one body in one turn, so a peer's batch of a million Heartbeats
#: would hold its loop (and every other peer's heartbeats); a bigger one does not decode and is
#: dropped as any malformed body is (counted, reason ``invalid``). ``runtime.codec.pack`` never
#: makes one.
MAX_BATCH_MESSAGES = 512


class Batch(Message, tag="batch", frozen=True):
    """Several messages for one peer in one frame, applied in order (never nested), at most
    :data:`MAX_BATCH_MESSAGES`."""

    messages: Annotated[list[WireMessage], msgspec.Meta(max_length=MAX_BATCH_MESSAGES)]
