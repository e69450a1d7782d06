"""Who submitted each run, when roles are enforced (CURVE): a client key reads and cancels only
its own runs (``Authority.may_touch``), and finds again only its own idempotency keys.

The owner is noted at submit (and for an ask's run) and kept as long as the run is kept in
memory; the journal keeps it too (``runs.owner``) and is asked about a run from before a
restart. An idempotency key is kept as the client key's own (``Authority.scoped``); a run
journaled by a version before that kept it as sent, and is found under it for its owner alone
(:meth:`RunOwners.unscoped_run`).
"""

from __future__ import annotations

from ontoflow.actors.orchestrator._mailbox import key_of
from ontoflow.actors.orchestrator._orchestrator import Orchestrator

__all__ = ["RunOwners"]


class RunOwners:
    """The client keys that submitted the runs of ``orchestrator`` (see the module docstring)."""

    def __init__(self, orchestrator: Orchestrator) -> None:
        self._orch = orchestrator
        self._owners: dict[str, str] = {}  # run id -> z85 key, runs in memory only

    def note(self, run_id: str, key: str) -> None:
        """Note ``key`` as the owner of ``run_id`` (the first noted stays)."""
        self._owners.setdefault(run_id, key)

    def forget(self, run_id: str) -> None:
        """Drop what is noted of ``run_id`` (forgotten from memory; the journal keeps it)."""
        self._owners.pop(run_id, None)

    def of(self, run_id: str) -> str | None:
        """The key that submitted ``run_id``: noted, or journaled before a restart; None when
        not known (roles off, a triggered or recovered run without one)."""
        owner = self._owners.get(run_id)
        orch = self._orch
        if owner is None and orch.authority.roles is not None and orch.journal is not None:
            row = orch.journal.run(run_id)
            owner = None if row is None else row.owner
        return owner

    def foreign(self, run_id: str, identity: bytes) -> bool:
        """Whether ``run_id``, found under a scoped idempotency key, is not the own run of the
        client key of ``identity``. Without a journal every run was submitted by this process,
        under scoped keys: one whose owner was forgotten with it (its key outlives it, being
        the only dedupe) is the client's."""
        owner = self.of(run_id)
        return owner != key_of(identity) and (owner is not None or self._orch.journal is not None)

    def unscoped_run(self, identity: bytes, sent: str) -> str | None:
        """The run journaled before idempotency keys were scoped under the key as ``sent``, when
        the client key of ``identity`` owns it; None otherwise. Never a run without a recorded
        owner (submitted while roles were off): whose it is cannot be told, and another key
        would get its run id and, with ``wait``, its context."""
        if self._orch.journal is None:  # memory starts empty: only a journal holds such runs
            return None
        run_id = self._orch.find_run(idempotency_key=sent)
        return run_id if run_id is not None and self.of(run_id) == key_of(identity) else None
