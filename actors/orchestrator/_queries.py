"""The reads of the client API: a run's status, list and trace, from memory or from the journal,
and the clients held until a run ends or following it.

A run still in memory answers from its live state; one that ended and was forgotten (or ended
before this daemon started) is rebuilt by replaying its journaled facts through the same pure
engine, so ``show`` of a month-old run is exactly what it was (:class:`Queries`).

Clients held until a run ends (``Status(wait=True)``) or following it (``Watch``) are kept by
:class:`Waiters`. Every held request is state the daemon keeps for a peer it cannot see leave
(a ROUTER is not told when a DEALER goes), so it is bounded three ways:

- one hold per ``(client, run, kind)``: the same request again is answered at once with the
  run's current status instead of being held twice (a waiting client re-asks now and then to
  notice a restarted daemon; 200,000 repeats cost nothing);
- at most ``per_client`` runs held per client and ``max_clients`` clients holding anything:
  past them a request is refused with a clear error instead of being held;
- a lease: a hold older than ``lease_ms`` is answered with the run's current status and
  dropped, so a client that went away is forgotten within one lease (a live client re-asks).

The holds are kept in the order they were made (which is time order), so expiring the old
ones touches only those. Pure book-keeping: the caller (``ClientService``) supplies the time
and sends the answers.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal, get_args

import msgspec

from ontoflow.actors.orchestrator._orchestrator import Orchestrator
from ontoflow.actors.orchestrator._reply_check import checked_list, checked_reply
from ontoflow.actors.orchestrator._results import RunResult
from ontoflow.actors.orchestrator._run_table import result_of
from ontoflow.actors.orchestrator.engine import Fact, RunCancelled, RunSubmitted, StepFinished
from ontoflow.actors.pipelines import ConnectionResolutionError
from ontoflow.protocols.client import Error, RunList, RunStatus, RunSummary, RunTrace
from ontoflow.protocols.errors import ProtocolsError
from ontoflow.protocols.types import RunStatusName
from ontoflow.runtime.journal import JournalCorruptError

__all__ = ["Found", "Hold", "Queries", "ReadsSpent", "Waiters", "run_status", "trace_dicts"]

_fact_decoder = msgspec.msgpack.Decoder(Fact)

#: The statuses a ``ListRuns`` may filter on (what a run can be listed with).
_STATUSES = frozenset(get_args(RunStatusName))  # not StatusReply's "cancelling": no run is listed so
_record_decoder = msgspec.msgpack.Decoder(tuple[str, int, str, str])


class Found(msgspec.Struct):
    """A run's engine state and, once it ended, its result."""

    state: Any
    result: RunResult | None


def trace_dicts(entries: list[Any]) -> list[dict[str, Any]]:
    """Trace entries for the wire, where a client reads each as a map.

    A ``TraceEntry`` (a map-encoded Struct) already encodes as exactly the map its
    ``msgspec.to_builtins`` would give, so the entries go as they are; converting each one
    cost the daemon microseconds per step for the same bytes.
    """
    return list(entries)


def run_status(result: RunResult) -> RunStatus:
    """The client's view of an ended run."""
    return RunStatus(
        run_id=result.run_id,
        status=result.status,
        error=result.error,
        context=result.context,
        trace=result.trace,  # ``trace_dicts`` needs no copy here: an ended run's trace never changes
        started_ms=result.started_ms,
        ended_ms=result.ended_ms,
    )


#: The journal rows lists, traces and runs replayed may read for clients in one turn of the
#: daemon's loop (a batch received): past it, a ``ListRuns``, ``Show``, or a request about a run
#: to replay from the journal is refused ``unavailable`` (ask again), so that reads cannot hold
#: the loop, its workers' heartbeats and every other client. One message of 512
#: ``ListRuns(limit=10000)`` held it 25 s; a turn now reads at most about twice this.
READS_PER_TURN = 20_000


class ReadsSpent(Exception):
    """Raised by :meth:`Queries.lookup` when this turn's journal reads are spent; ``refusal``
    answers the request (``unavailable``: ask again)."""

    def __init__(self, refusal: Error) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class Queries:
    """Answers about runs of ``orchestrator`` (see the module docstring).

    Args:
        orchestrator: whose runs (in memory, in its journal) are read.
        turn: which turn of the orchestrator's loop this is (``Mailbox.turn``): the journal
            rows read for clients are counted per turn (``READS_PER_TURN``).
    """

    def __init__(self, orchestrator: Orchestrator, turn: Callable[[], int]) -> None:
        self._orch = orchestrator
        self._now_turn = turn
        self._workflows: OrderedDict[str, Any] = OrderedDict()  # compiled sources, bounded
        self._turn = -1
        self._read = 0  # journal rows read for clients in turn ``_turn``

    def _afford(self, rows: int) -> Error | None:
        """Count ``rows`` about to be read from the journal in this turn; the refusal when this
        turn's reads are spent (``READS_PER_TURN``), None otherwise."""
        turn = self._now_turn()
        if turn != self._turn:
            self._turn, self._read = turn, 0
        if self._read >= READS_PER_TURN:
            return Error(code="unavailable", message=f"the daemon read {self._read:,} journal rows for clients in this "
                                                     "turn of its loop, the most it reads at once; ask again")
        self._read += rows
        return None

    def lookup(self, run_id: str, *, charged: bool = True) -> Found | None:
        """The run's state and result, or None when neither memory nor the journal knows it.

        Raises:
            ReadsSpent: when the run must be replayed from the journal and this turn's reads
                are spent (``charged``: a client's request; its facts count). 512 ``Status`` of
                one ended run of 2,000 steps held the loop 13 s.
            runtime.journal.JournalCorruptError: when the run's rows make a reply no client
                decodes (``_reply_check.py``), or its pinned document does not compile here.
        """
        orch = self._orch
        if not orch.uncommitted(run_id):  # else memory is ahead of the journal: read what is committed
            run = orch.runs.get(run_id)  # one lookup: a submit with wait=True asks this for every run
            if run is not None:
                return Found(run.state, run.result)
        journal = orch.journal
        if journal is None:
            return None
        row = journal.run(run_id)
        if row is None:
            return None
        if charged and (refused := self._afford(1)) is not None:
            raise ReadsSpent(refused)
        if len(self._workflows) > 64:
            self._workflows.popitem(last=False)
        facts = journal.facts(run_id)
        self._read += len(facts)
        try:
            run = orch.replay(row, facts, self._workflows)
        except (ProtocolsError, ConnectionResolutionError, msgspec.DecodeError) as exc:  # as replay reads them
            # The run's pinned document does not compile here (a rule it breaks, a connection
            # defined nowhere now): a record this daemon cannot read, not a bug ("internal").
            raise JournalCorruptError(f"run {run_id}: its pinned document cannot be compiled by this daemon: "
                                      f"{type(exc).__name__}: {str(exc)[:500]}") from None
        state = run.state
        result = None if row.status == "running" else result_of(state, state.status, state.error)
        if result is not None:  # a row the journal holds may make a reply no client decodes
            checked_reply(run_status(result), run_id)
        return Found(state, result)

    def list_runs(self, status: str | None, limit: int) -> RunList | Error:
        """The newest runs first (from the journal when there is one); ``unavailable`` when
        this turn's reads are spent (``READS_PER_TURN``); ``invalid_request`` for a ``status``
        no run can have (named by its length, never quoted)."""
        if status is not None and status not in _STATUSES:
            # A typo (or a megabyte) was a query of the journal and an empty list, as if no run
            # had that status: the client could not tell it from the truth.
            return Error(code="invalid_request", message=f"status must be one of {', '.join(sorted(_STATUSES))} "
                                                         f"(got {len(status):,} characters)")
        limit = max(1, min(limit, 10_000))
        orch = self._orch
        unfinished = status in ("running", "suspended")
        # Rows read: a journal's ``limit`` (every running row, to tell the suspended ones), or
        # every run held in memory without one.
        refused = self._afford(len(orch.runs) if orch.journal is None else 10_000 if unfinished else limit)
        if refused is not None:
            return refused
        if orch.journal is not None:
            # The journal's row says ``running`` until the run ends; a live run that waits for
            # an answer says ``suspended`` (its state's status), and is listed and filtered so.
            rows = orch.journal.runs(status="running" if unfinished else status, limit=10_000 if unfinished else limit)
            summaries = []
            for r in rows:
                run = orch.runs.get(r.run_id) if r.status == "running" else None
                now_status = r.status if run is None or run.state.status != "suspended" else "suspended"
                if status is None or now_status == status:
                    summaries.append(RunSummary(run_id=r.run_id, status=now_status, name=r.name,
                                                submitted_ms=r.submitted_ms, ended_ms=r.ended_ms))
                    if len(summaries) >= limit:
                        break
            return checked_list(summaries) or RunList(runs=summaries)
        summaries = []
        for run in reversed(list(orch.runs)):
            state = run.state
            if status is None or state.status == status:
                summaries.append(RunSummary(run_id=state.run_id, status=state.status, submitted_ms=state.started_ms or 0,
                                            ended_ms=state.ended_ms))
                if len(summaries) >= limit:
                    break
        return RunList(runs=summaries)

    def show(self, run_id: str) -> RunTrace | Error | None:
        """The run's trace and every journaled event, or None when unknown; ``unavailable``
        when this turn's reads are spent (``READS_PER_TURN``: its facts count)."""
        refused = self._afford(1) if self._orch.journal is not None else None
        if refused is not None:
            return refused
        found = self.lookup(run_id)
        if found is None:
            return None
        state = found.state
        events: list[dict[str, Any]] = []
        journal = self._orch.journal
        if journal is not None:
            rows = journal.facts(run_id)
            self._read += len(rows)
            for row in rows:
                if row.kind == "dispatched":
                    step_id, attempt, capability, worker_id = _record_decoder.decode(row.body)
                    events.append({"at_ms": row.at_ms, "kind": "dispatched", "step_id": step_id, "attempt": attempt,
                                   "capability": capability, "worker_id": worker_id})
                elif row.kind == "fact":
                    events.append(_describe(_fact_decoder.decode(row.body)))
        return RunTrace(
            run_id=run_id,
            status=state.status,
            error=state.error,
            started_ms=state.started_ms or 0,
            ended_ms=state.ended_ms or 0,
            context=state.context,
            trace=trace_dicts(state.trace),
            events=events,
        )


def _describe(fact: Any) -> dict[str, Any]:
    """A fact as an event dict: keys and sizes of values, the values only of outcomes' events."""
    kind = type(fact).__struct_config__.tag
    event: dict[str, Any] = {"at_ms": fact.now_ms, "kind": kind}
    if isinstance(fact, RunSubmitted):
        event["input_keys"] = sorted(fact.inputs)
    elif isinstance(fact, StepFinished):
        o = fact.outcome
        event.update(step_id=o.step_id, attempt=o.attempt, event=o.event, reason=o.reason, error=o.error,
                     duration_ms=o.duration_ms, retries=o.retries, output_keys=sorted(o.outputs))
    elif isinstance(fact, RunCancelled):
        event["reason"] = fact.reason
    else:
        for field in ("step_id", "attempt", "reason"):
            if hasattr(fact, field):
                event[field] = getattr(fact, field)
    return event


Kind = Literal["status", "watch"]
#: ``(client identity, run id, kind)``.
Hold = tuple[bytes, str, Kind]


class Waiters:
    """The held requests of every client (see the module docstring).

    Args:
        per_client: runs one client may wait for (or watch) at once.
        max_clients: clients that may hold requests at once.
        lease_ms: how long a request is held before it is answered with the current status.

    Attributes:
        watches: held Watch requests (read it, never set it): most daemons have none.
        on_watching: called with True when the first Watch is held and with False when the
            last one is released, so that the client service is asked about the steps of runs
            only while someone watches (most daemons never: no call per step). One composition
            sets it: a ``Waiters`` belongs to one orchestrator.
    """

    def __init__(self, *, per_client: int = 256, max_clients: int = 4096, lease_ms: int = 60_000) -> None:
        if per_client < 1 or max_clients < 1 or lease_ms < 1:
            raise ValueError("per_client, max_clients and lease_ms must be >= 1")
        self.per_client = per_client
        self.max_clients = max_clients
        self.lease_ms = lease_ms
        self._since: dict[Hold, int] = {}  # insertion order is time order
        self._by_run: dict[str, dict[Hold, None]] = {}
        self._per_client: dict[bytes, int] = {}
        self.watches = 0
        self.on_watching: Callable[[bool], None] | None = None

    def hold(self, identity: bytes, run_id: str, kind: Kind, now: int) -> bool | str:
        """Hold a request of ``identity`` about ``run_id``.

        Returns:
            True when held now; False when the same request is already held (answer it with
            the current status); a message saying why when refused (a cap is reached).
        """
        key = (identity, run_id, kind)
        if key in self._since:
            return False
        count = self._per_client.get(identity, 0)
        if count >= self.per_client:
            return (f"this client already waits on {count} runs, the most one client may; "
                    "wait for fewer at once, or ask again with wait off")
        if count == 0 and len(self._per_client) >= self.max_clients:
            return (f"{len(self._per_client)} clients are already waiting, the most this daemon holds; "
                    "retry later, or ask again with wait off")
        self._since[key] = now
        self._by_run.setdefault(run_id, {})[key] = None
        self._per_client[identity] = count + 1
        if kind == "watch":
            self.watches += 1
            if self.watches == 1 and self.on_watching is not None:
                self.on_watching(True)
        return True

    def held(self, run_id: str, kind: Kind) -> list[bytes]:
        """The clients holding a request of ``kind`` about ``run_id`` (kept held)."""
        if kind == "watch" and not self.watches:
            return []
        return [identity for identity, _, k in self._by_run.get(run_id, ()) if k == kind]

    def ended(self, run_id: str) -> list[bytes]:
        """Release every request about ``run_id``; the clients to answer, each once."""
        keys = self._by_run.pop(run_id, None)
        if not keys:
            return []
        if len(keys) == 1:  # the usual: the one client that submitted and waits (no dict, no copy per run end)
            for key in keys:
                self._drop(key)
                return [key[0]]
        clients: dict[bytes, None] = {}  # each once, in order (a loop: no generator per run end)
        for key in keys:
            clients[key[0]] = None
            self._drop(key)
        return list(clients)

    def expire(self, now: int) -> list[Hold]:
        """Release the requests held longer than the lease; returns them, oldest first."""
        cutoff = now - self.lease_ms
        expired: list[Hold] = []
        for key, since in self._since.items():
            if since > cutoff:
                break
            expired.append(key)
        for key in expired:
            self._drop(key)
            on_run = self._by_run.get(key[1])
            if on_run is not None:
                on_run.pop(key, None)
                if not on_run:
                    del self._by_run[key[1]]
        return expired

    def _drop(self, key: Hold) -> None:
        del self._since[key]
        if key[2] == "watch":
            self.watches -= 1
            if not self.watches and self.on_watching is not None:
                self.on_watching(False)
        identity = key[0]
        left = self._per_client[identity] - 1
        if left:
            self._per_client[identity] = left
        else:
            del self._per_client[identity]

    def statistics(self) -> dict[str, int]:
        """Clients holding requests, and requests held."""
        return {"clients_waiting": len(self._per_client), "requests_waiting": len(self._since)}
