"""From a sentence to intents (seed 004): the entry request, the adapter's answer, session memory.

``EntryRequest`` is what every channel (CLI, chat, HTTP) turns its input into;
``IntentOutput`` is an intent adapter's answer (a goal and human-friendly entities, never a
technical id); ``ExecutionIntent`` is the goal resolver's (a capability and its parameters).
``SessionMemory`` is the planner's memory of earlier turns, a value passed in and returned.

:func:`fold` is the one text normalisation (case and accents) the matcher and the entity
validator share, so that "Cotação" and "cotacao" are the same words to both.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any

import msgspec

from ontoflow.protocols.errors import Problem

__all__ = [
    "INTENT_CONFIDENCE_PARAM",
    "INTENT_INPUTS",
    "INTENT_PARAMS",
    "INTENT_QUERY_PARAM",
    "MAX_INPUT_CHARS",
    "SESSION_ID",
    "SESSION_ID_RULE",
    "Alternative",
    "EntryRequest",
    "ExecutionIntent",
    "IntentOutput",
    "SessionMemory",
    "Turn",
    "check_entry",
    "decode_intent_output",
    "fold",
]

#: The longest sentence an entry accepts (characters): a question, not a document.
MAX_INPUT_CHARS = 2000
#: What a session id may look like: it names a memory slot and appears in file keys. ``\Z``,
#: not ``$``, which would also take an id ending in a newline.
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}\Z")
#: What a refusal of a session id says of it (never the id itself).
SESSION_ID_RULE = "must be 1-64 characters: letters, digits and _ . : @ - (starting with a letter or digit)"

Confidence = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class EntryRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One user message from any channel.

    Attributes:
        session_id: the conversation it belongs to (see :data:`SESSION_ID`).
        input_text: the words as typed.
        channel: where it came from (``cli``, ``chat``, ``http``).
        metadata: channel-specific extras; the deterministic layers read only ``run`` (the
            channel's run flag, ``ask --run``: it sets a goal's boolean entity ``run``).
    """

    session_id: str
    input_text: str
    channel: str = "cli"
    metadata: dict[str, Any] = {}


class Alternative(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A goal the adapter also considered, with its confidence (for a clarification)."""

    domain: str
    goal: str
    confidence: Confidence


class IntentOutput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An intent adapter's answer (seed 004).

    Attributes:
        primary_domain: the domain id; empty when nothing matched.
        goal: the goal id within the domain; empty when nothing matched.
        entities: entity name -> value, human-friendly (``symbol_text: "Nordea"``); enum
            entities carry one of the declared values exactly.
        confidence: 0..1, how sure the adapter is of ``goal``.
        original_query: the sentence as the user wrote it.
        alternatives: the next-best goals, best first (may be empty).
    """

    primary_domain: str
    goal: str
    confidence: Confidence
    entities: dict[str, Any] = {}
    original_query: str = ""
    alternatives: list[Alternative] = []


class ExecutionIntent(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A resolved intent: one capability to run with its parameters (seed 004).

    Attributes:
        domain: the domain id.
        capability: the capability id, chosen deterministically by the goal resolver.
        parameters: input key -> value (entities under their ``param`` keys).
        confidence: carried from the intent.
        original_query: carried from the intent.
    """

    domain: str
    capability: str
    parameters: dict[str, Any] = {}
    confidence: Confidence = 1.0
    original_query: str = ""


#: The reserved step parameters that carry an ``ExecutionIntent``'s ``confidence`` and
#: ``original_query`` to the step that serves it. The planner sets them on a step only when
#: its capability declares them as inputs (an HTTP domain bridge does, and strips them from
#: the parameters it posts): a domain handler opts in by declaring them. The sentence is the
#: user's words: like every parameter value, it never reaches a log line.
INTENT_CONFIDENCE_PARAM = "ontoflow.intent.confidence"
INTENT_QUERY_PARAM = "ontoflow.intent.original_query"
INTENT_PARAMS = (INTENT_CONFIDENCE_PARAM, INTENT_QUERY_PARAM)
#: The JSON Schema of each reserved step parameter, as a capability declares them (optional):
#: an HTTP domain bridge's capabilities do, and so does the placeholder of a domain's capability
#: whose worker has not announced it yet (``actors.orchestrator.placeholder_metadata``).
INTENT_INPUTS: dict[str, dict[str, Any]] = {INTENT_CONFIDENCE_PARAM: {"type": "number", "minimum": 0, "maximum": 1},
                                            INTENT_QUERY_PARAM: {"type": "string"}}


class Turn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One remembered turn of a session.

    Attributes:
        domain: the domain it resolved to.
        goal: the goal it resolved to.
        entities: its entities (defaults included).
        at_ms: when it was taken (the caller's clock).
        said: the user's words its ``*_text`` entities came from (this sentence and the
            earlier ones it carried entities from), so a carried value still passes the
            "the user's own words" rule.
        pending: entities the turn asked the user for (a clarification); the next message
            is read as the answer.
    """

    domain: str
    goal: str
    entities: dict[str, Any] = {}
    at_ms: int = 0
    said: str = ""
    pending: list[str] = []


class SessionMemory(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Earlier turns per session, newest last; bounded by the functions that update it."""

    sessions: dict[str, list[Turn]] = {}


#: How many characters' foldings are kept (about 3 MB). Every character met was kept: a client
#: sending all of Unicode, 2,000 characters a sentence (556 requests), left 1.1 million entries,
#: 211 MB, in the daemon for good. Past the bound a character is worked out each time it comes.
_FOLD_KEPT = 16_384


class _FoldTable(dict[int, str]):
    """``str.translate`` table that works out (and keeps, up to :data:`_FOLD_KEPT`) the folding
    of each character it meets."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        base = unicodedata.normalize("NFKD", ch)
        kept = next((c for c in base if not unicodedata.combining(c)), ch)
        low = kept.lower()
        folded = low[0] if low else ch
        if len(self) < _FOLD_KEPT:
            self[code] = folded
        return folded


_FOLD = _FoldTable()


def fold(text: str) -> str:
    """Lower-case ``text`` and strip its accents, one output character per input character.

    Keeping the length lets a matcher find a span in the folded text and cut the user's own
    words out of the original at the same offsets.
    """
    if text.isascii():
        return text.lower()
    return text.translate(_FOLD)


def check_entry(request: EntryRequest) -> list[Problem]:
    """Return the problems of ``request`` (empty when it may go on). Never echoes the text."""
    problems: list[Problem] = []
    if not SESSION_ID.match(request.session_id):
        problems.append(
            Problem(
                path="session_id",
                message=SESSION_ID_RULE,
            )
        )
    text = request.input_text
    if not text.strip():
        problems.append(Problem(path="input_text", message="is empty"))
    elif len(text) > MAX_INPUT_CHARS:
        problems.append(Problem(path="input_text", message=f"has {len(text)} characters; the most is {MAX_INPUT_CHARS}"))
    return problems


_intent_decoder = msgspec.json.Decoder(IntentOutput)


def decode_intent_output(data: bytes | str) -> IntentOutput:
    """Decode an adapter's JSON answer strictly (unknown fields, wrong types: an error).

    Raises:
        msgspec.ValidationError: naming the field and the expected type.
        msgspec.DecodeError: when ``data`` is not JSON.
    """
    return _intent_decoder.decode(data)
