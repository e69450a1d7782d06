"""After a daemon restart: the attempts awaiting the workers they were sent to, and who may
reclaim them.

An attempt journaled as sent may have run, its worker holding the answer: it is "awaiting
worker W until T" (:class:`AwaitedSteps`, a liveness window plus W's first reconnect delay).
A restarted daemon knows W by its worker id alone, which any peer may announce (``ontoflow
workers`` lists them; with CURVE, any key of the worker role): the journal keeps, per worker id,
a digest of the session token W was last sent an attempt in, and the CURVE key it registered
with (:class:`SessionProofs`, written by ``Durability.dispatched`` and ``Durability.proved``).

What a registering Ready does to the attempts awaiting its worker id (:meth:`Reclaims.reclaim`):

- It presents the token (it proves the session): those it holds are in flight on it again, the
  others are lost (``interrupted``: retried when idempotent). It is welcomed with a FRESH token
  (so a stale Ready still carrying the old one, read late, is told apart from its own on a new
  connection: ``WorkerInfo.token_kind``), whose proof is journaled at once with the old one's
  (a second restart before anything new is sent to it, or before it read that Welcome, still
  finds it proved).
- It does not prove the session but holds none of them, under CURVE with the very key they were
  sent with (a restarted process with a fixed ``--worker-id``: its answers died with the old
  process): they are lost at once, not after the window. Such a peer may have them retried,
  never answered: the same a peer under a live worker's identity and key could do
  (``worker_session_replaced``). Without CURVE every peer's key is "": any local peer could
  claim it, so they are not given up at once (below).
- Anything else (it lists some of them without the proof: a forger; another CURVE key; no CURVE
  at all): it reclaims nothing, and they go on awaiting the real worker until the window ends
  (a liveness window plus a reconnect allowance: a few seconds by default), whatever such a
  peer says; the worker proving the session reclaims them when it comes, even after that peer
  registered under its identity: an unproved registration of the same key is replaced as any
  re-registration is, and one of ANOTHER CURVE key, which would otherwise refuse it as a
  takeover, is replaced too (:meth:`Reclaims.proves_awaited`, ``WorkerPool.ready``).
"""

from __future__ import annotations

import hashlib
import secrets
from collections import Counter
from collections.abc import Callable, Collection

import msgspec
import structlog

from ontoflow.actors.orchestrator._registry import InFlight, StepKey, WorkerInfo, WorkerRegistry
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.actors.orchestrator.engine import Dispatch, Fact, StepLost

__all__ = ["AwaitedSteps", "Proof", "Reclaims", "SessionProofs", "proof_row", "read_proof", "session_proof"]

log = structlog.get_logger()

_DIGEST = 16  # bytes of a token's digest


class AwaitedSteps:
    """Attempts recovered after a daemon restart, each awaiting the worker it was sent to (by
    worker id) until a deadline: that worker may hold its answer. Indexed by worker id too:
    right after a restart the journal's proof rows ask, one by one, whether a worker id holds
    some (``_proof_rows.py``), and each scanned every awaited attempt (rows x attempts)."""

    def __init__(self) -> None:
        self._steps: dict[StepKey, tuple[InFlight, str, int]] = {}
        self._by_worker: dict[str, dict[StepKey, None]] = {}  # in the order awaited

    def __len__(self) -> int:
        return len(self._steps)

    def add(self, step: InFlight, worker_id: str, until_ms: int) -> None:
        """Await ``step`` from ``worker_id`` until ``until_ms``."""
        key = (step.run_id, step.step_id, step.attempt)
        self.discard(key)
        self._steps[key] = (step, worker_id, until_ms)
        self._by_worker.setdefault(worker_id, {})[key] = None

    def discard(self, key: StepKey) -> None:
        """Stop awaiting an attempt (cancelled, or past its step deadline)."""
        found = self._steps.pop(key, None)
        if found is not None:
            keys = self._by_worker[found[1]]
            del keys[key]
            if not keys:
                del self._by_worker[found[1]]

    def of(self, worker_id: str) -> set[StepKey]:
        """The attempts awaiting ``worker_id`` (still awaited)."""
        return set(self._by_worker.get(worker_id, ()))

    def awaits(self, worker_id: str) -> bool:
        """Whether some attempt awaits ``worker_id`` (a lookup)."""
        return worker_id in self._by_worker

    def take(self, worker_id: str, held: Collection[StepKey]) -> tuple[list[InFlight], list[StepKey]]:
        """``worker_id`` registered again: ``(reclaimed, lost)``, the attempts it awaited that
        it holds and those it came back without; neither is awaited any more."""
        reclaimed, lost = [], []
        for key in self._by_worker.pop(worker_id, ()):
            step = self._steps.pop(key)[0]
            if key in held:
                reclaimed.append(step)
            else:
                lost.append(key)
        return reclaimed, lost

    def due(self, now_ms: int) -> list[StepKey]:
        """The attempts whose deadline has come (still awaited)."""
        return [k for k, (_, _, until) in self._steps.items() if until <= now_ms]


def session_proof(token: str) -> bytes:
    """What the journal keeps of a worker's session token (its Welcome's): a digest, so the
    file holds no token a peer could present, only what one presented can be checked against."""
    return hashlib.sha256(token.encode()).digest()[:_DIGEST]


class Proof(msgspec.Struct, array_like=True, frozen=True):
    """A journaled proof: the digests of the tokens that prove the session (the newest first),
    and the CURVE key (z85; "" without CURVE) the worker registered with; ``None``: not
    journaled (a proof written before session 20: any key)."""

    digests: bytes
    key: str | None = None

    def proves(self, token: str) -> bool:
        """Whether ``token`` is one of the proof's tokens."""
        if not token:
            return False
        digest, digests = session_proof(token), self.digests
        return any(digests[i:i + _DIGEST] == digest for i in range(0, len(digests), _DIGEST))

    def same_key(self, key: str) -> bool:
        """Whether ``key`` is the one the worker registered with (any, when not journaled)."""
        return self.key is None or self.key == key


_proof_decoder = msgspec.msgpack.Decoder(Proof)


def proof_row(tokens: Collection[str], key: str) -> bytes:
    """A journal row proving any of ``tokens`` (the newest first) under CURVE ``key``."""
    return msgspec.msgpack.encode(Proof(b"".join(session_proof(t) for t in tokens if t), key))


def read_proof(body: bytes) -> Proof | None:
    """A journaled proof row; ``None`` when it does not decode (written by another version)."""
    if len(body) == _DIGEST:  # session 19's row: one digest, no key
        return Proof(body)
    try:
        return _proof_decoder.decode(body)
    except msgspec.DecodeError:
        return None


class SessionProofs:
    """After a daemon restart, the session each worker id's recovered attempts were sent to
    (see the module docstring)."""

    __slots__ = ("_by_worker",)

    def __init__(self) -> None:
        self._by_worker: dict[str, Proof] = {}

    def expect(self, worker_id: str, proof: Proof) -> None:
        """``worker_id``'s recovered attempts may be reclaimed only by a Ready proving ``proof``."""
        self._by_worker[worker_id] = proof

    def expected(self, worker_id: str) -> Proof | None:
        """The proof awaited from ``worker_id``, if any."""
        return self._by_worker.get(worker_id) if self._by_worker else None

    def proves(self, worker_id: str, token: str) -> bool:
        """Whether ``token`` is one ``worker_id``'s recovered attempts were sent in."""
        proof = self.expected(worker_id)
        return proof is not None and proof.proves(token)

    def spend(self, worker_id: str) -> None:
        """Nothing more is awaited from ``worker_id`` under its proof."""
        if self._by_worker:
            self._by_worker.pop(worker_id, None)


class Reclaims:
    """The recovered attempts and what registering Readys do to them (see the module docstring).

    Args:
        registry: the live workers (a reclaimed attempt is in flight on its worker again).
        runs: the run table (a lost attempt's fact goes to a live run).
        deliver: applies a fact to a live run.
        awaiting: the attempts awaiting their workers (``Liveness``'s, which gives them up).
        stop_clock: stops an attempt's step deadline.
        refused: the pool's counts of refused messages (``reclaim`` counted there).

    Attributes:
        proofs: who may reclaim (``SessionProofs``).
        record_proof: called as ``record_proof(worker_id, token, previous, key, now)`` when a
            worker proving its session is welcomed with a fresh token (the journal's
            ``Durability.proved``); ``None``: not recorded.
    """

    def __init__(self, *, registry: WorkerRegistry, runs: RunTable, deliver: Callable[[Run, Fact], None],
                 awaiting: AwaitedSteps, stop_clock: Callable[[StepKey], None], refused: Counter[str]) -> None:
        self._registry = registry
        self._runs = runs
        self._deliver = deliver
        self._awaiting = awaiting
        self._stop_clock = stop_clock
        self._refused = refused
        self.proofs = SessionProofs()
        self.record_proof: Callable[[str, str, str, str, int], None] | None = None

    def expect(self, dispatch: Dispatch, worker_id: str, proof: bytes | None) -> None:
        """``dispatch``'s attempt awaits ``worker_id``, proved by the journaled row ``proof``
        (one that does not decode proves no token: no peer reclaims the attempt, which is
        ``interrupted`` when the window ends or a peer holding none of them registers)."""
        if proof is not None:
            read = read_proof(proof)
            if read is None:
                log.warning("session_proof_unreadable", worker_id=worker_id)
                read = Proof(b"")
            self.proofs.expect(worker_id, read)

    def session_for(self, worker_id: str, token: str, key: str, now: int) -> str:
        """The token a new registration of ``worker_id`` presenting ``token`` under ``key`` is
        welcomed with: always a fresh one; when ``token`` proves the session, its proof (the
        fresh token's and ``token``'s) is recorded at once."""
        fresh = secrets.token_hex(16)
        if self.record_proof is not None and self.proofs.proves(worker_id, token):
            self.record_proof(worker_id, fresh, token, key, now)
        return fresh

    def reclaim(self, info: WorkerInfo, held: set[StepKey], token: str, now: int) -> list[InFlight]:
        """``info`` registered afresh presenting ``token`` and holding ``held``: the attempts
        awaiting its worker id that are now in flight on it (assigned to it); those lost are
        delivered as ``interrupted`` (see the module docstring)."""
        if not self._awaiting:
            return []
        worker_id = info.worker_id
        proof = self.proofs.expected(worker_id)
        if proof is not None and not proof.proves(token):
            awaited = self._awaiting.of(worker_id)
            if not awaited:
                return []
            # Only a peer authenticated under the very key they were sent with (CURVE: a key is
            # a secret) may have them given up at once; without CURVE every key is "", so any
            # local peer could: they await the real worker until the window ends.
            if held & awaited or not (info.key and proof.key == info.key):
                self._refused["reclaim"] += 1
                log.warning("worker_reclaim_refused", worker_id=worker_id,
                            reason="not the session its steps were sent to" if held & awaited
                            else "another key" if info.key else "no CURVE key to tell its worker by")
                return []
            held = set()  # it holds none of them: they are lost (retried), never answered by it
        self.proofs.spend(worker_id)
        reclaimed, lost = self._awaiting.take(worker_id, held)
        for step in reclaimed:
            self._registry.assign(info, step)
        if reclaimed:
            log.info("steps_reclaimed", worker_id=worker_id, count=len(reclaimed))
        self.lost(lost, now)
        return reclaimed

    def proves_awaited(self, worker_id: str, token: str) -> bool:
        """Whether ``token`` proves the session of attempts still awaiting ``worker_id`` (such a
        Ready replaces a registration of its identity under another key: ``WorkerPool.ready``)."""
        return bool(self._awaiting) and self._awaiting.awaits(worker_id) and self.proofs.proves(worker_id, token)

    def holds(self, worker_id: str) -> bool:
        """Whether ``worker_id`` holds journaled attempts: some in flight on the worker
        registered under it (a worker's identity is its id), or some awaiting it after a
        restart (its journaled proof is kept for them: ``_proof_rows.py``)."""
        info = self._registry.get(worker_id.encode())
        if info is not None and info.worker_id == worker_id and info.in_flight:
            return True
        return bool(self._awaiting) and self._awaiting.awaits(worker_id)

    def lost(self, keys: list[StepKey], now: int) -> None:
        """Deliver awaited attempts as ``interrupted`` (their worker came back without them, or
        not in their window)."""
        for run_id, step_id, attempt in keys:
            self._stop_clock((run_id, step_id, attempt))
            run = self._runs.live(run_id)
            if run is not None:
                log.warning("step_interrupted", run_id=run_id, step_id=step_id, attempt=attempt)
                self._deliver(run, StepLost(step_id=step_id, attempt=attempt, reason="interrupted", now_ms=now))
