"""Durability: the orchestrator's journal, its group commit, and recovery by replay.

What one socket batch (or one tick, or one event-loop turn of local calls) causes is recorded
in one journal batch: a submission, each fact before it is applied, each Invoke before it
leaves (``dispatched``), each run's end. :meth:`Durability.commit` writes it in one transaction;
it is the commit gate of the orchestrator's outbox (``runtime.actor.Outbox``), so nothing is
sent before what caused it is committed: a submit is acknowledged after its fact, an Invoke
leaves after its ``dispatched`` record, an outcome and the transition it causes are one append.

Recovery replays each unfinished run's facts through the same pure engine, then carries on: a
step whose attempt was recorded as dispatched may have run, and its worker may hold its answer,
so it awaits that worker for one liveness window (``WorkerPool.await_worker``): the worker
re-registers holding it and its answer is applied; only when the worker does not come back, or
comes back without it, is it lost with the reason ``interrupted`` (the engine re-dispatches it
as a new attempt when the capability is idempotent, otherwise ends it with ``failure``). A step
never dispatched is simply dispatched.

The catalogue (every capability a worker offered, ``WorkerRegistry.known``) is journaled as it
changes (:meth:`Durability.capabilities_seen`) and read back at start (:meth:`Durability.catalogue`),
so a restarted daemon accepts submits before its workers are back. The domain manifests workers
announce are journaled in the same table under ids no capability can have (``domain:ID``,
:data:`DOMAIN_ENTRY_PREFIX`), so a restarted daemon answers sentences for them at once.
Plans and pipelines recover the same way: their state (a live DAG sorter) is never snapshotted,
it is rebuilt by replaying the facts through the plan engine, and every attempt it holds in
flight (``RunEngine.in_flight``) is handled as above, in step-id order. A pipeline is compiled
again with its connections resolved anew from the daemon's configuration.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgspec
import structlog

from ontoflow.actors.orchestrator._proof_rows import ProofRows
from ontoflow.actors.orchestrator._reclaim import proof_row
from ontoflow.actors.orchestrator._run_table import Run
from ontoflow.actors.orchestrator._source import compile_source
from ontoflow.actors.orchestrator.engine import Dispatch, Fact, StepLost
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime.actor import where
from ontoflow.runtime.journal import GROUP_KIND, CommitBatch, FactRow, Journal, JournalBatchError, JournalCorruptError, JournalError, RunRow

__all__ = ["DOMAIN_ENTRY_PREFIX", "Durability", "RecoveryReport"]

log = structlog.get_logger()

_fact_encoder = msgspec.msgpack.Encoder()
_fact_decoder = msgspec.msgpack.Decoder(Fact)
_record_decoder = msgspec.msgpack.Decoder(tuple[str, int, str, str])
_metadata_decoder = msgspec.msgpack.Decoder(CapabilityMetadata)

#: The catalogue-table prefix of a journaled domain manifest (a colon is never in a capability id).
DOMAIN_ENTRY_PREFIX = "domain:"

#: The journal's memory scope of the session proofs (worker id -> digests of the session token
#: it was last sent an attempt in, and the CURVE key it registered with: ``_reclaim.Proof``),
#: how many are kept (the most recently written), and for how long (a daemon down longer than
#: that recovers without them).
PROOF_SCOPE, MAX_PROOFS, PROOF_KEPT_MS = "worker_session", 16_384, 365 * 86_400_000

MAX_KNOWN_SOURCES = 65_536  #: sources remembered as written; past it forgotten (a body offered again)


class RecoveryReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a start from a journal found and did."""

    runs: int = 0
    facts: int = 0
    redispatched: int = 0
    interrupted: int = 0
    awaiting: int = 0
    unrecoverable: int = 0
    seconds: float = 0.0


class Durability:
    """The journal side of an orchestrator (see the module docstring).

    Args:
        journal: the open journal; ``None``: nothing is recorded and ``commit`` does nothing.
        connections: connection name -> value, for recompiling journaled pipelines.

    Attributes:
        on_unwritable: called with the ``JournalBatchError`` of a batch that can never be
            written (the orchestrator's ``fail``: it stops, and its ``run`` raises the error).
    """

    def __init__(self, journal: Journal | None, connections: Mapping[str, Any] | None = None) -> None:
        self.journal = journal
        self.connections: dict[str, Any] = dict(connections or {})
        self._batch = CommitBatch()
        self._sources: set[str] = set()
        self.on_unwritable: Callable[[Exception], None] | None = None
        self._proved: dict[str, str] = {}  # worker id -> the session whose proof was last recorded
        #: The worker ids whose proof the journal holds, and which goes to make room (``_proof_rows.py``).
        self.proof_rows = ProofRows(MAX_PROOFS)

    # -- recording ---------------------------------------------------------------------------

    def exists(self, run_id: str) -> bool:
        """Whether the journal holds a run ``run_id``."""
        return self.journal is not None and self.journal.run(run_id) is not None

    def submitted(self, row: RunRow, source: tuple[str, bytes]) -> None:
        """Record a submission and, the first time it is seen, its pinned source."""
        source_hash, body = source
        if source_hash not in self._sources:
            self._batch.sources[source_hash] = body
            if len(self._sources) >= MAX_KNOWN_SOURCES:
                self._sources.clear()
            self._sources.add(source_hash)
        self._batch.runs.append(row)

    def prune_sources(self) -> bool:
        """Delete the journal's sources no run pins any more, after a prune, and forget them as
        written (a document submitted again writes its body again: before, its new run pinned a
        source that was gone, lost at the next start); returns whether it did (not while runs
        wait for a commit: their sources may be only on disk; the next prune does it).

        Raises:
            runtime.journal.JournalError: when SQLite refuses the delete.
        """
        if self.journal is None or self._batch.runs:
            return False
        self._sources.clear()
        self.journal.prune_sources()
        return True

    def fact(self, run_id: str, fact: Fact) -> None:
        """Record ``fact`` of ``run_id`` (before it is applied: its consequences follow it)."""
        self._batch.facts.append((run_id, "fact", fact.now_ms, _fact_encoder.encode(fact)))  # CommitBatch.fact, inlined

    def dispatched(self, run: Run, d: Dispatch, worker_id: str, now: int, session: str = "", key: str = "") -> None:
        """Record an Invoke before it leaves: after a crash, an attempt with this record may
        have run; one without it surely did not. The first Invoke to a worker in a new
        ``session`` also records that session's proof (``PROOF_SCOPE``, with the worker's CURVE
        ``key``): after a restart, only a Ready presenting that token reclaims the worker's attempts."""
        record = _fact_encoder.encode((d.step_id, d.attempt, d.capability, worker_id))
        self._batch.facts.append((d.run_id, "dispatched", now, record))
        if session and self._proved.get(worker_id) != session:  # once per worker and session: a dict lookup a step
            self.proved(worker_id, session, "", key, now)

    def keep_proofs_of(self, holds: Callable[[str], bool]) -> None:
        """Keep the proofs of the workers ``holds`` says hold journaled attempts, when a proof
        must go to make room (``_proof_rows.py``; the worker pool's ``Reclaims.holds``)."""
        self.proof_rows.holds = holds

    def proved(self, worker_id: str, session: str, previous: str, key: str, now: int) -> None:
        """Record that ``worker_id``'s attempts are reclaimed by a Ready presenting ``session``
        (or ``previous``, when given: a worker proving its session is welcomed with a fresh
        token, and may not have read that Welcome when the daemon restarts again) under CURVE
        ``key`` (``_reclaim.Proof``; committed with the batch, before the Welcome leaves)."""
        if len(self._proved) >= MAX_PROOFS:
            self._proved.clear()  # only ever costs a proof written again
        self._proved[worker_id] = session
        victim = self.proof_rows.written(worker_id)
        if victim is not None:  # chosen here, not by the journal's bound (the oldest written)
            self._proved.pop(victim, None)
            self.keep(PROOF_SCOPE, victim, None, 0, now_ms=now, most=MAX_PROOFS)
        self.keep(PROOF_SCOPE, worker_id, proof_row((session, previous), key), now + PROOF_KEPT_MS, now_ms=now,
                  most=MAX_PROOFS)

    def capabilities_forgotten(self, ids: list[str]) -> None:
        """Record that catalogue entries were dropped (to make room in a full catalogue): a
        later start does not know them."""
        for cap in ids:
            self._batch.capabilities[cap] = None

    def ended(self, run_id: str, status: str, ended_ms: int) -> None:
        """Record a run's end (in the same transaction as the fact that ended it)."""
        self._batch.end(run_id, status, ended_ms)

    def capabilities_seen(self, metadata: list[CapabilityMetadata], now: int) -> None:
        """Record catalogue entries (what a worker offers as it registers, or what the daemon
        was told of): a later start knows them before any worker is back."""
        for meta in metadata:
            self._batch.capabilities[meta.id] = (_fact_encoder.encode(meta), now)

    def keep(self, scope: str, key: str, body: bytes | None, until_ms: int, *, now_ms: int, most: int) -> None:
        """Record a memory row (``body`` None: forget ``key``) and bound its scope: rows kept
        until before ``now_ms`` go, and only the ``most`` kept longest stay (the edge's
        sessions and conversations, committed with the next batch). Nothing without a journal."""
        if self.journal is None:
            return
        self._batch.memory[(scope, key)] = None if body is None else (body, until_ms)
        self._batch.memory_bounds[scope] = (now_ms, most)

    def memory(self, scope: str, now_ms: int) -> list[tuple[str, bytes, int]]:
        """The journaled memory rows of ``scope`` still kept at ``now_ms`` (oldest first)."""
        return [] if self.journal is None else self.journal.memory(scope, now_ms)

    def catalogue(self) -> list[CapabilityMetadata]:
        """The journaled catalogue; an entry that no longer decodes (written by another
        version) is skipped and logged, and comes back when a worker offers it again."""
        if self.journal is None:
            return []
        found = []
        for cap_id, body in self.journal.capabilities().items():
            if cap_id.startswith(DOMAIN_ENTRY_PREFIX):
                continue
            try:
                found.append(_metadata_decoder.decode(body))
            except msgspec.DecodeError:
                log.warning("catalogue_entry_unreadable", capability=cap_id)
        return found

    def domains_seen(self, manifests: Mapping[str, bytes], now: int) -> None:
        """Record announced domain manifests (domain id -> its encoded manifest)."""
        for domain, body in manifests.items():
            self._batch.capabilities[DOMAIN_ENTRY_PREFIX + domain] = (body, now)

    def journaled_domains(self) -> dict[str, bytes]:
        """The journaled domain manifests: domain id -> encoded manifest (opaque here)."""
        if self.journal is None:
            return {}
        n = len(DOMAIN_ENTRY_PREFIX)
        return {k[n:]: body for k, body in self.journal.capabilities().items() if k.startswith(DOMAIN_ENTRY_PREFIX)}

    def commit(self) -> None:
        """Commit what was recorded since the last commit (the outbox's commit gate).

        A batch whose commit fails (a full disk) is kept whole (the journal rolled it back)
        and what is recorded afterwards joins it, after it: the next call commits it all, in
        the order it was recorded. A batch that cannot be written at all
        (``JournalBatchError``) is logged (``journal_batch_unwritable``) and handed to
        ``on_unwritable`` (the orchestrator stops with it) before it is raised.

        Raises:
            runtime.journal.JournalError: when the commit fails.
        """
        batch = self._batch
        if batch:
            try:
                self.journal.commit(batch)  # type: ignore[union-attr]  # a batch fills only with a journal
            except JournalBatchError as exc:
                # Not a full disk: the batch itself cannot be written, and the outbox's retries
                # would fail the same way for ever, holding every later write. Nothing of it was
                # sent, so stopping loses nothing announced.
                log.critical("journal_batch_unwritable", error=str(exc), runs=len(batch.runs), facts=len(batch.facts))
                if self.on_unwritable is not None:
                    self.on_unwritable(exc)
                raise
            self._batch = CommitBatch()

    def uncommitted(self, run_id: str) -> bool:
        """Whether records of ``run_id`` wait for a commit (only for a while after a failed one:
        otherwise the batch's end commits them before anything is answered)."""
        batch = self._batch
        return (any(row.run_id == run_id for row in batch.runs) or any(f[0] == run_id for f in batch.facts)
                or any(e[2] == run_id for e in batch.ended))

    # -- reading -----------------------------------------------------------------------------

    def find(self, *, idempotency_key: str | None = None, trigger_key: str | None = None) -> str | None:
        """The id of the journaled run submitted with ``idempotency_key`` (or started for
        ``trigger_key``), or None."""
        journal = self.journal
        if journal is None:
            return None
        if idempotency_key is not None:
            row = journal.run_by_key(idempotency_key)
        elif trigger_key is not None:
            row = journal.run_by_trigger(trigger_key)
        else:
            return None
        return None if row is None else row.run_id

    def replay(self, row: RunRow, facts: list[FactRow], engines: dict[str, Any]) -> Run:
        """Rebuild one run from its journaled rows through the pure engine (no I/O, no sends).

        Args:
            engines: compiled sources by hash, filled as sources are compiled (a cache).

        Raises:
            runtime.journal.JournalCorruptError: when its pinned source is missing from the
                journal, or when a fact does not decode (naming the run and
                the row).
            msgspec.DecodeError, protocols.errors.ManifestError: when the source does not
                decode or compile.
        """
        engine = engines.get(row.source_hash)
        if engine is None:
            body = None if self.journal is None else self.journal.source(row.source_hash)
            if body is None:  # a row deleted by hand, or lost: damage to this run (``journal_damaged``)
                raise JournalCorruptError(f"journal {getattr(self.journal, 'path', '(none)')}: run {row.run_id}: its "
                                          f"workflow source {row.source_hash[:12]} is missing; the journal is damaged")
            engine = engines[row.source_hash] = compile_source(body, connections=self.connections)
        run = Run(engine, row.run_id, row.source_hash)
        for n, f in enumerate(facts):
            if f.kind == GROUP_KIND:  # a group row that did not decode (``Journal.unfinished_facts``)
                raise self._damaged(row.run_id, n, GROUP_KIND)
        try:
            decoded = [_fact_decoder.decode(f.body) for f in facts if f.kind == "fact"]
        except Exception:  # a damaged row: named, not msgspec's error out of a query or a start
            raise self._undecodable(row.run_id, facts, "fact", _fact_decoder) from None
        run.replay(decoded)
        return run

    def _undecodable(self, run_id: str, facts: list[FactRow], kind: str, decoder: Any) -> JournalCorruptError:
        """The error for the first of ``facts`` of ``kind`` that ``decoder`` cannot read."""
        for n, f in enumerate(facts):
            if f.kind == kind:
                try:
                    decoder.decode(f.body)
                except Exception:  # noqa: BLE001 - this is the row to name
                    break
        else:
            n = -1
        return self._damaged(run_id, n, kind)

    def _damaged(self, run_id: str, n: int, kind: str) -> JournalCorruptError:
        """The error for the run's fact row ``n`` (of ``kind``) that does not decode."""
        where_ = self.journal.path if self.journal is not None else "(none)"
        return JournalCorruptError(f"journal {where_}: run {run_id!r}: its fact row {n} (kind {kind!r}) does not decode; "
                                   "the journal is damaged")

    def recover(
        self,
        now: int,
        *,
        adopt: Callable[[Run, RunRow], None],
        lost: Callable[[Run, StepLost], None],
        dispatch: Callable[[Dispatch, int], None],
        await_worker: Callable[[Dispatch, str, int, bytes | None], None] | None = None,
    ) -> RecoveryReport:
        """Replay every unfinished run and go on with it (called once, after binding).

        Args:
            adopt: holds a rebuilt run (the run table's ``add``).
            lost: applies the ``interrupted`` StepLost of an attempt that may have run.
            dispatch: sends an attempt that surely did not run.
            await_worker: holds an attempt that may have run until the worker it was sent to
                (named, with the proof of its session when one was journaled) re-registers (the
                worker pool's ``await_worker``); ``None``: it is lost at once through ``lost``.
        """
        journal = self.journal
        if journal is None:
            return RecoveryReport()
        started = time.perf_counter()
        rows = journal.unfinished()
        nfacts = 0
        grouped: dict[str, list[FactRow]] = defaultdict(list)
        for fact_row in journal.unfinished_facts():
            grouped[fact_row.run_id].append(fact_row)
            nfacts += 1
        engines: dict[str, Any] = {}
        proofs = {worker_id: proof for worker_id, proof, _ in self.memory(PROOF_SCOPE, now)}
        self.proof_rows.seed(proofs)  # oldest first
        redispatched = interrupted = unrecoverable = awaiting = 0
        for row, facts in _with_facts(rows, grouped):
            try:
                run = self.replay(row, facts, engines)
                # Its dispatch records too: one that does not decode (a damaged row) stopped
                # the daemon's start with a traceback, and every other run with it.
                try:
                    sent = {(r[0], r[1]): r[3] for r in (_record_decoder.decode(f.body) for f in facts if f.kind == "dispatched")}
                except Exception:
                    raise self._undecodable(row.run_id, facts, "dispatched", _record_decoder) from None
            except Exception as exc:  # one bad run must not keep every other one down
                # A journal error's text names the run and the row (never a value); others by type.
                detail = str(exc) if isinstance(exc, JournalError) else None
                log.error("run_unrecoverable", run_id=row.run_id, error=type(exc).__name__, where=where(exc), detail=detail)
                unrecoverable += 1
                continue
            self._sources.add(row.source_hash)
            adopt(run, row)
            in_flight = run.engine.in_flight(run.state)
            if not in_flight:
                continue
            for d in in_flight:
                if run.result is not None:
                    break  # an earlier interruption ended the run
                worker_id = sent.get((d.step_id, d.attempt))
                if worker_id is not None and await_worker is not None:
                    # It may have run, and its worker may hold the answer: wait for it.
                    await_worker(d, worker_id, now, proofs.get(worker_id))
                    awaiting += 1
                elif worker_id is not None:
                    # It may have run: a new attempt if that is safe, else it fails as interrupted.
                    lost(run, StepLost(step_id=d.step_id, attempt=d.attempt, reason="interrupted", now_ms=now))
                    interrupted += 1
                else:
                    dispatch(d, now)
                    redispatched += 1
        report = RecoveryReport(runs=len(rows) - unrecoverable, facts=nfacts, redispatched=redispatched,
                                interrupted=interrupted, awaiting=awaiting, unrecoverable=unrecoverable,
                                seconds=time.perf_counter() - started)
        log.info("journal_recovered", **msgspec.structs.asdict(report))
        return report


def _with_facts(rows: list[RunRow], grouped: dict[str, list[FactRow]]) -> Iterator[tuple[RunRow, list[FactRow]]]:
    for row in rows:
        yield row, grouped.pop(row.run_id, [])
