"""The answers a worker host may have to give again: not reported twice, never lost.

An attempt is answered once by a host. An Outcome produced while no session is up waits here
(``keep``); an Outcome sent in a session is kept too (``sent``), for one liveness window plus
one interval (it may have gone down a link that was already dead), and from the moment the
orchestrator goes silent until the next Welcome (it may have died before recording it; once
restarted, it waits for this worker's answers). A new ``Ready`` lists every attempt held here
(``keys``); after the ``Welcome`` the held answers are sent once more (``take_all``).

Every answer carries the session token of the last Welcome, so the daemon knows this host is
the one it registered (the token is never logged).
"""

from __future__ import annotations

import time
from collections import deque

import msgspec

from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.codec import encode

__all__ = ["AnswerBook"]

_outcome_decoder = msgspec.msgpack.Decoder(Outcome)

StepKey = tuple[str, str, int]


class AnswerBook:
    """Answers held back or sent recently (see the module docstring).

    Attributes:
        token: the session token of the last Welcome (``""`` before the first).
    """

    __slots__ = ("_open", "_recent", "_token_tail", "_unsent", "token")

    def __init__(self) -> None:
        self._unsent: dict[StepKey, Outcome] = {}  # answered while no session was up
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

    def keep(self, outcome: Outcome) -> None:
        """Hold an answer produced while no session is up, for the next one."""
        self._unsent[_key(outcome)] = outcome

    def sent(self, outcome: Outcome) -> msgspec.Raw:
        """Encode an answer to send now, stamped with the token, and remember it.

        Returns:
            The encoded answer (``runtime.codec.pack`` carries it as it is).
        """
        encoded = encode(outcome)
        if self.token and not outcome.session:
            # ``session`` is the last field of an array-like Outcome: its empty string is the
            # body's last byte (0xa0), replaced by the token (a concatenation instead of a
            # second Outcome per step, which costs about 2 us).
            encoded = encoded[:-1] + self._token_tail
        body = msgspec.Raw(encoded)
        self._open.append(body)
        return body

    def take_all(self) -> tuple[list[msgspec.Raw], list[Outcome]]:
        """Everything held, to send once more in a new session: the answers sent before
        (re-stamped with the current token; they are remembered again by ``resent``) and
        those never sent (to go through ``sent``)."""
        self._close()
        recent = [self._stamped(body) for _, group in self._recent for body in group]
        unsent = list(self._unsent.values())
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
