"""The answers a worker host may have to give again, across sessions (``_session.py``): not
reported twice, never lost. An attempt is answered once by a host. An Outcome
produced while no session is up waits in the book (``keep``); an Outcome sent in a session is
kept too (``sent``), for one liveness window plus one interval (it may have gone down a link
that was already dead), and from the moment the orchestrator goes silent until the next
Welcome (it may have died before recording it; once restarted, it waits for this worker's
answers). A new ``Ready`` lists every attempt held in it (``keys``); after the ``Welcome``
the held answers are sent once more (``take_all``).

Every answer carries the session token of the last Welcome, so the daemon knows this host is
the one it registered (the token is never logged).
"""

from __future__ import annotations

import time
from collections import deque

import msgspec
import structlog

from ontoflow.actors.capability._reasons import REASON_INVALID_RESULT
from ontoflow.actors.capability._scrub import type_name
from ontoflow.protocols.events import FAILURE
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.codec import encode

__all__ = ["AnswerBook"]

log = structlog.get_logger()

_outcome_decoder = msgspec.msgpack.Decoder(Outcome)
# An Outcome's body as ``runtime.codec.encode`` makes it (a plain msgpack encoder), without
# that function's frame per answer.
_encode_plain = msgspec.msgpack.Encoder().encode


def _encode_outcome(outcome: Outcome | bytes) -> bytes:
    """An Outcome's body (one ``AnswerBook.seal`` encoded already is as it is). Never raises:
    the capability base checked the outputs encodable when the step answered, but they are the
    capability's own objects, which another of its threads may still change; an answer that no
    longer encodes is replaced by the step's failure (``invalid_result``), logged with the
    error's type only, rather than the error ending the runner, and with it the worker."""
    if type(outcome) is bytes:
        return outcome
    try:
        return _encode_plain(outcome)
    except Exception as exc:
        return _unencodable(outcome, exc)


def _unencodable(outcome: Outcome, exc: Exception) -> bytes:
    """The body of the failure that stands for ``outcome``, which raised ``exc`` when encoded."""
    log.error("outcome_unencodable", run_id=outcome.run_id, step_id=outcome.step_id, attempt=outcome.attempt,
              exc_type=type_name(exc))
    return _encode_plain(Outcome(run_id=outcome.run_id, step_id=outcome.step_id, attempt=outcome.attempt,
                                 event=FAILURE, reason=REASON_INVALID_RESULT, duration_ms=outcome.duration_ms,
                                 error=f"the step's outputs changed after it answered and no longer encode "
                                       f"({type_name(exc)})", session=outcome.session))


StepKey = tuple[str, str, int]


class AnswerBook:
    """Answers held back or sent recently (see the module docstring).

    Attributes:
        token: the session token of the last Welcome (``""`` before the first).
    """

    __slots__ = ("_open", "_recent", "_token_tail", "_unsent", "token")

    def __init__(self) -> None:
        # Answered while no session was up, encoded at once as ``sent`` does: an Outcome holds the
        # capability's own objects, which it may change after answering (a list it keeps adding
        # to); what goes out is what the step answered, and within the size it was checked at.
        self._unsent: dict[StepKey, msgspec.Raw] = {}
        # Sent, maybe down a dead link: kept encoded, because at full speed a liveness window
        # holds a hundred thousand answers and bytes cost the garbage collector nothing. They
        # are kept in groups stamped with the time the group was closed (every answer of it
        # was sent before), not one entry and one clock read per answer: ``_open`` is the
        # group being filled, closed by the next ``prune`` (a Tick) or ``take_all``.
        self._recent: deque[tuple[float, list[msgspec.Raw]]] = deque()
        self._open: list[msgspec.Raw] = []
        self.token = ""
        self._token_tail = b""  # the token as a msgpack string, stamped onto encoded Outcomes

    def set_token(self, token: str) -> None:
        """Stamp ``token`` on every answer from now on."""
        self.token = token
        self._token_tail = msgspec.msgpack.encode(token)

    def seal(self, outcome: Outcome) -> Outcome | bytes:
        """An answer that will be handed over later (``_answer_groups``: the steps a runner runs
        back to back are answered together), encoded now, so what leaves is what the step
        answered: its outputs are the capability's own objects, which a later step may change
        (a list it keeps adding to). Before, they were encoded after the later steps ran: one
        answer carried their data, and one they made unencodable ended the worker process.
        ``keep``, ``sent`` and ``sent_many`` take it in place of the Outcome."""
        if outcome.session:  # stamped by its maker: sent as it is (``sent``)
            return outcome
        try:
            return _encode_plain(outcome)
        except Exception as exc:
            return _unencodable(outcome, exc)

    def keep(self, outcome: Outcome | bytes) -> None:
        """Hold an answer produced while no session is up, for the next one (encoded now)."""
        body = _encode_outcome(outcome)
        self._unsent[_key(_outcome_decoder.decode(body) if type(outcome) is bytes else outcome)] = msgspec.Raw(body)

    def sent(self, outcome: Outcome | bytes) -> msgspec.Raw:
        """Encode an answer to send now, stamped with the token, and remember it.

        Returns:
            The encoded answer (``runtime.codec.pack`` carries it as it is).
        """
        sealed = type(outcome) is bytes  # has no session: stamped
        try:  # inline, not ``_encode_outcome``: the path of every answer
            encoded = outcome if sealed else _encode_plain(outcome)
        except Exception as exc:
            encoded = _unencodable(outcome, exc)
        if self.token and (sealed or not outcome.session):
            # ``session`` is the last field of an array-like Outcome: its empty string is the
            # body's last byte (0xa0), replaced by the token (a concatenation instead of a
            # second Outcome per step, which costs about 2 us).
            encoded = encoded[:-1] + self._token_tail
        body = msgspec.Raw(encoded)
        self._open.append(body)
        return body

    def sent_many(self, outcomes: list[Outcome | bytes]) -> list[msgspec.Raw]:
        """``sent`` for each of ``outcomes``, in one call; returns the encoded answers in order."""
        tail = self._token_tail if self.token else None
        if tail is not None:  # usually every one is sealed (a runner's group): stamped in one pass
            bodies = [msgspec.Raw(body[:-1] + tail) for body in outcomes if type(body) is bytes]
            if len(bodies) == len(outcomes):
                self._open.extend(bodies)
                return bodies
        bodies = []
        for outcome in outcomes:
            sealed = type(outcome) is bytes
            try:  # as in ``sent``
                encoded = outcome if sealed else _encode_plain(outcome)
            except Exception as exc:
                encoded = _unencodable(outcome, exc)
            if tail is not None and (sealed or not outcome.session):
                encoded = encoded[:-1] + tail  # as in ``sent``
            bodies.append(msgspec.Raw(encoded))
        self._open.extend(bodies)
        return bodies

    def take_all(self) -> tuple[list[msgspec.Raw], list[msgspec.Raw]]:
        """Everything held, to send (once more) in a new session, stamped with the current
        token: the answers sent before and those never sent; each is remembered again by
        ``resent`` as it goes."""
        self._close()
        recent = [self._stamped(body) for _, group in self._recent for body in group]
        unsent = [self._stamped(body) for body in self._unsent.values()]
        self._recent.clear()
        self._unsent.clear()
        return recent, unsent

    def resent(self, body: msgspec.Raw) -> None:
        """Remember an answer sent once more (this orchestrator may die before recording it)."""
        self._open.append(body)

    def prune(self, horizon: float) -> None:
        """Forget the answers sent before ``horizon`` (``time.monotonic()`` seconds)."""
        self._close()
        recent = self._recent
        while recent and recent[0][0] < horizon:
            recent.popleft()

    def keys(self) -> list[StepKey]:
        """The attempts whose answer is held here (for a new Ready's ``holding``)."""
        sent = [_key(_outcome_decoder.decode(body)) for _, group in self._recent for body in group]
        return list(self._unsent) + sent + [_key(_outcome_decoder.decode(body)) for body in self._open]

    def statistics(self) -> dict[str, int]:
        """Answers never sent (``outbox``) and sent recently (``recent``)."""
        recent = sum(len(group) for _, group in self._recent) + len(self._open)
        return {"outbox": len(self._unsent), "recent": recent}

    def _close(self) -> None:
        """Stamp the open group with "now" (each of its answers was sent before) and keep it."""
        if self._open:
            self._recent.append((time.monotonic(), self._open))
            self._open = []

    def _stamped(self, body: msgspec.Raw) -> msgspec.Raw:
        """An answer sent in an earlier session, with the current session's token."""
        outcome = _outcome_decoder.decode(body)
        if outcome.session == self.token:
            return body
        return msgspec.Raw(encode(msgspec.structs.replace(outcome, session=self.token)))


def _key(outcome: Outcome) -> StepKey:
    return (outcome.run_id, outcome.step_id, outcome.attempt)
