"""The durable side of the orchestrator shell: group commit, batched sends, and recovery.

Everything one socket batch (or one tick, or one event-loop turn of local calls) causes is
collected: the messages into an outbox and, while a journal is open, the facts into a
:class:`~runtime.journal.Batch`. :meth:`DurableMixin._flush` commits the batch in one
transaction and only then sends the outbox, so no peer ever hears of something the journal
could lose: a submit is acknowledged after its fact is committed, an Invoke leaves after its
``dispatched`` record, an outcome and the transition it causes are one append. The outbox goes
out grouped per peer (``RouterSocket.send_many``: one ZeroMQ message per worker per flush
instead of one per step), which is what lets one pass over many Outcomes stay cheap.

Recovery replays each unfinished run's facts through the same pure engine, then carries on: a
step whose attempt was recorded as dispatched may have run, so it is reported lost with the
reason ``interrupted`` (the engine re-dispatches it as a new attempt when the capability is
idempotent, otherwise ends it with ``failure``); a step never dispatched is simply dispatched.
Plans and pipelines recover the same way: their state (a live DAG sorter) is never snapshotted,
it is rebuilt by replaying the facts through the plan engine, and every attempt it holds in
flight (a plan may hold several) is handled as above, in step-id order. A pipeline is compiled
again with its connections resolved anew from the daemon's configuration.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.orchestrator._runs import _Run, _where
from ontoflow.actors.orchestrator._source import compile_source
from ontoflow.actors.orchestrator.engine import Fact, StepLost
from ontoflow.runtime.journal import Batch, Journal, RunRow

__all__ = ["DurableMixin", "RecoveryReport", "SEND_CHUNK"]

#: Messages per worker after which a socket batch's sends go out before its end.
SEND_CHUNK = 32

log = structlog.get_logger()

_fact_decoder = msgspec.msgpack.Decoder(Fact)
_record_decoder = msgspec.msgpack.Decoder(tuple[str, int, str, str])


def _in_flight(state: Any) -> list[tuple[str, int, Any]]:
    """``(step_id, attempt, Dispatch)`` of every attempt a replayed run holds in flight: the
    workflow engine's one ``pending`` step, or a plan's ``running`` map, in step-id order."""
    pending = getattr(state, "pending", None)
    if pending is not None:
        return [(pending.step_id, pending.attempt, pending.dispatch)]
    running = getattr(state, "running", None)
    if isinstance(running, dict):
        return [(step_id, r.attempt, r.dispatch) for step_id, r in sorted(running.items())]
    return []


class RecoveryReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a start from a journal found and did."""

    runs: int = 0
    facts: int = 0
    redispatched: int = 0
    interrupted: int = 0
    unrecoverable: int = 0
    seconds: float = 0.0


class _CommitGroup:
    """The submissions of one event-loop turn waiting for their shared commit."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.error: Exception | None = None


class DurableMixin:
    """Group commit and recovery (see the module docstring)."""

    journal: Journal | None
    _batch: Batch | None
    _outbox: list[tuple[bytes, Any, bool]]
    _in_batch: bool
    _commit_group: _CommitGroup | None
    _runs: dict[str, _Run]
    _run_deadlines: dict[str, int]
    _by_key: dict[str, str]
    _by_trigger: dict[str, str]
    _sources: set[str]
    runs_in_flight: int

    def _send(self, identity: bytes, message: Any) -> None:
        self._outbox.append((identity, message, False))
        if not self._in_batch:
            self._send_soon()
        elif self.journal is None and len(self._outbox) >= SEND_CHUNK * max(len(self.registry), 1):  # type: ignore[attr-defined]
            # A long socket batch need not be handled whole before its first steps go out:
            # workers start on them while the rest is decided (with a journal, each flush
            # is a commit, so the batch's end is waited for).
            self._flush()

    def send_client(self, identity: bytes, message: Any) -> None:
        """Send a client API reply (``protocols.client``) to the client ``identity``.

        It leaves with the current batch's messages, after its facts are committed.
        """
        self._outbox.append((identity, message, True))
        if not self._in_batch:
            self._send_soon()

    def _send_soon(self) -> None:
        """Flush once the tasks made ready in this event-loop turn have run (their sends share
        the ZeroMQ messages); at once when no loop runs."""
        if self._flush_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._flush()
            return
        self._flush_scheduled = True
        loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        if not self._in_batch:  # a socket batch in progress flushes at its end
            try:
                self._flush()
            except Exception as exc:  # a failed commit: nothing of it was sent; stop serving
                log.error("flush_failed", error=type(exc).__name__, where=_where(exc))
                self._failure = exc
                self.stop()  # type: ignore[attr-defined]

    def _flush(self) -> None:
        """Commit the batch, then send what waited for it.

        Raises:
            runtime.journal.JournalError: when the commit fails; nothing of the batch is sent
                (the daemon stops rather than acknowledge what it could not record).
        """
        self._commit()
        if self._outbox:
            out, self._outbox = self._outbox, []
            router = self._router  # type: ignore[attr-defined]
            if router is None:
                return
            router.send_many([(identity, message) for identity, message, client in out if not client])
            for identity, message, client in out:
                if client:
                    router.send_client(identity, message)

    def _maybe_flush(self) -> None:
        """Commit now unless a socket batch is being handled (it commits once at its end); the
        messages follow within this event-loop turn (``_send_soon``)."""
        if not self._in_batch:
            self._commit()
            if self._outbox:
                self._send_soon()

    def _commit(self) -> None:
        """Commit the facts collected so far (none without a journal).

        Raises:
            runtime.journal.JournalError: when the commit fails.
        """
        batch = self._batch
        if batch is not None and batch:
            self._batch = Batch()
            self.journal.commit(batch)  # type: ignore[union-attr]

    async def asubmit(self, workflow: Any, inputs: Any, **options: Any) -> str:
        """``submit``, but the callers of one event-loop turn share one commit (group commit).

        Returns only once the submission is committed, like ``submit``: the acknowledgement
        still follows the commit. Without a journal it is ``submit``.

        Raises:
            The errors of ``submit``; runtime.journal.JournalError when the shared commit fails.
        """
        if self.journal is None:
            return self.submit(workflow, inputs, **options)  # type: ignore[attr-defined]
        was_in_batch = self._in_batch
        self._in_batch = True  # hold the flush: the group's commit takes this submission too
        try:
            run_id = self.submit(workflow, inputs, **options)  # type: ignore[attr-defined]
        finally:
            self._in_batch = was_in_batch
        group = self._commit_group
        if group is None:
            group = self._commit_group = _CommitGroup()
            # After the other tasks made ready in this turn have submitted too.
            asyncio.get_running_loop().call_soon(self._commit_group_now, group)
        await group.done.wait()
        if group.error is not None:
            raise group.error
        return run_id

    def _commit_group_now(self, group: _CommitGroup) -> None:
        self._commit_group = None
        try:
            if not self._in_batch:  # a socket batch in progress commits it at its end
                self._flush()
        except Exception as exc:  # handed to every waiter: each submit learns it failed
            group.error = exc
        group.done.set()

    def find_run(self, *, idempotency_key: str | None = None, trigger_key: str | None = None) -> str | None:
        """The run id submitted with ``idempotency_key`` (or started for ``trigger_key``), or None."""
        if idempotency_key is not None:
            found = self._by_key.get(idempotency_key)
            if found is None and self.journal is not None:
                row = self.journal.run_by_key(idempotency_key)
                found = None if row is None else row.run_id
            return found
        if trigger_key is not None:
            found = self._by_trigger.get(trigger_key)
            if found is None and self.journal is not None:
                row = self.journal.run_by_trigger(trigger_key)
                found = None if row is None else row.run_id
            return found
        return None

    def _journal_submit(self, run: _Run, source: tuple[str, bytes], row: RunRow) -> None:
        batch = self._batch
        assert batch is not None  # only called with a journal
        source_hash, body = source
        if source_hash not in self._sources:
            batch.sources[source_hash] = body
            self._sources.add(source_hash)
        batch.runs.append(row)

    def replay(self, row: RunRow, facts: list[Any], workflows: dict[str, Any]) -> _Run:
        """Rebuild one run from its journaled rows through the pure engine (no I/O, no sends).

        Raises:
            runtime.journal.JournalError: when its pinned source is missing from the journal.
            msgspec.DecodeError, protocols.errors.ManifestError: when the source or a fact does
                not decode or compile.
        """
        from ontoflow.runtime.journal import JournalError

        workflow = workflows.get(row.source_hash)
        if workflow is None:
            body = self.journal.source(row.source_hash)  # type: ignore[union-attr]
            if body is None:
                raise JournalError(f"run {row.run_id}: its workflow source {row.source_hash[:12]} is missing")
            workflow = workflows[row.source_hash] = compile_source(body, connections=self.connections)  # type: ignore[attr-defined]
        run = _Run(workflow, row.run_id, row.source_hash)
        advance, state = run.advance, run.state
        for fact_row in facts:
            if fact_row.kind == "fact":
                advance(state, _fact_decoder.decode(fact_row.body))
        state.notes.clear()
        run.logged = len(state.trace)
        return run

    def _recover(self, now: int) -> RecoveryReport:
        """Replay every unfinished run and go on with it (called once, after binding)."""
        journal = self.journal
        assert journal is not None
        started = time.perf_counter()
        rows = journal.unfinished()
        grouped: dict[str, list[Any]] = defaultdict(list)
        nfacts = 0
        for fact_row in journal.unfinished_facts():
            grouped[fact_row.run_id].append(fact_row)
            nfacts += 1
        workflows: dict[str, Any] = {}
        redispatched = interrupted = unrecoverable = 0
        self._in_batch = True
        try:
            for row in rows:
                facts = grouped.pop(row.run_id, [])
                try:
                    run = self.replay(row, facts, workflows)
                except Exception as exc:  # one bad run must not keep every other one down
                    log.error("run_unrecoverable", run_id=row.run_id, error=type(exc).__name__, where=_where(exc))
                    unrecoverable += 1
                    continue
                self._runs[row.run_id] = run
                self._sources.add(row.source_hash)
                self.runs_in_flight += 1
                if row.idempotency_key is not None:
                    self._by_key[row.idempotency_key] = row.run_id
                if row.trigger_key is not None:
                    self._by_trigger[row.trigger_key] = row.run_id
                if row.deadline_at_ms is not None:
                    self._run_deadlines[row.run_id] = row.deadline_at_ms
                in_flight = _in_flight(run.state)
                if not in_flight:
                    continue
                sent = {(r[0], r[1]) for r in (_record_decoder.decode(f.body) for f in facts if f.kind == "dispatched")}
                for step_id, attempt, dispatch in in_flight:
                    if run.result is not None:
                        break  # an earlier interruption ended the run
                    if (step_id, attempt) in sent:
                        # It may have run (or be running on a worker that will reconnect): a new
                        # attempt if that is safe, else the step fails as interrupted.
                        self._apply(run, StepLost(step_id=step_id, attempt=attempt, reason="interrupted",  # type: ignore[attr-defined]
                                                  now_ms=now))
                        interrupted += 1
                    else:
                        self._dispatch(dispatch, now)  # type: ignore[attr-defined]
                        redispatched += 1
            self._flush()
        finally:
            self._in_batch = False
        report = RecoveryReport(runs=len(rows) - unrecoverable, facts=nfacts, redispatched=redispatched,
                                interrupted=interrupted, unrecoverable=unrecoverable,
                                seconds=time.perf_counter() - started)
        log.info("journal_recovered", **msgspec.structs.asdict(report))
        return report
