"""Commands about runs from code on the orchestrator's event loop: start, cancel, answer.

The client service, the trigger and edge services and the embedded cluster start runs, cancel
them and answer their questions through here, between two socket reads of the actor (no lock).
Each command becomes a fact applied through the orchestrator's ``apply`` (recorded first for a
journaled run), and is committed before the call returns; ``asubmit`` shares one commit with
the other submissions of its event-loop turn (group commit). While the journal cannot be
written, a start or a cancel is refused with ``JournalError`` and nothing changes.

A run's id (:func:`new_run_id`) is a time-ordered 128-bit identifier in UUID version 7 hex form,
cheap enough for every submit.

Time-ordered, because the journal indexes every run and every fact by run id: with random ids
each insert lands on a random page of those B-trees and a group commit writes a page per row,
while ids that grow with time append next to each other (a commit of 60 runs took 3.0-3.6 ms
with random ids and 2.3-2.5 ms with these, measured on the journal's own schema). The layout is
RFC 9562's version 7: 48 bits of Unix milliseconds, the version, 74 random bits, the variant.
Ids made within one millisecond are unique, not ordered among themselves (nothing needs that).

``uuid.uuid4()`` asks the kernel for 16 random bytes per call (a system call, microseconds on
a virtual machine) and builds a ``UUID`` object; a daemon starting tens of thousands of runs a
second pays that on its one serial thread. Run ids only need to be unique, not secret (they
appear in logs and answers, beside the run's submission time), so the random bits come from a
generator seeded once from the kernel's randomness and re-seeded in a forked child.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from ontoflow.actors.orchestrator._durability import Durability
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.actors.orchestrator.engine import Fact, RunCancelled, RunEngine, RunResumed, RunSubmitted
from ontoflow.protocols.client import MAX_DEADLINE_MS, run_id_problem
from ontoflow.runtime.actor import Outbox
from ontoflow.runtime.journal import JournalError, RunRow

__all__ = ["RunCommands", "UnknownRunError", "new_run_id"]

log = structlog.get_logger()

#: The input keys a ``run_submitted`` line lists (with their count): keys are not values, but
#: there may be 4,096 of 256 characters.
LOGGED_INPUT_KEYS = 16

_random = random.Random(os.urandom(32))
_getrandbits = _random.getrandbits
_time_ns = time.time_ns
_FIXED_BITS = (0x7 << 76) | (0x2 << 62)  # the UUID version 7 and RFC 9562 variant bits
# The 76 bits below the time but the variant's two: 74 random bits where RFC 9562 puts them
# (12 of ``rand_a`` above the variant, 62 of ``rand_b`` below it), drawn in one call.
_RAND_MASK = ((1 << 76) - 1) ^ (0x3 << 62)


def _reseed() -> None:
    _random.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def new_run_id(now_ms: int | None = None) -> str:
    """A fresh run id: 32 lowercase hex digits, a valid UUID version 7.

    Args:
        now_ms: the Unix time in milliseconds it starts with; the wall clock when None (a
            parameter so that tests can pin it).
    """
    if now_ms is None:
        now_ms = _time_ns() // 1_000_000
    # Two operations on the 128-bit value fewer than placing ``rand_a`` and ``rand_b`` apart (per submit).
    value = ((now_ms & 0xFFFF_FFFF_FFFF) << 80) | _FIXED_BITS | (_getrandbits(76) & _RAND_MASK)
    return value.to_bytes(16).hex()  # big-endian: the same 32 digits as f"{value:032x}", for less


class UnknownRunError(KeyError):
    """Raised when a run id names no run this orchestrator knows."""


class RunCommands:
    """Starts, cancels and resumes runs (see the module docstring).

    Args:
        runs: the run table.
        durability: the journal's part (journaled submissions, run ids it knows).
        outbox: the actor's outbox (its commit, whether it is available).
        apply: records and applies a fact to a run (``Orchestrator.apply``).
        clock: returns "now" in milliseconds.
    """

    def __init__(self, *, runs: RunTable, durability: Durability, outbox: Outbox,
                 apply: Callable[[Run, Fact], None], clock: Callable[[], int]) -> None:
        self._runs = runs
        self._durability = durability
        self._outbox = outbox
        self._apply = apply
        self._clock = clock

    def run(self, run_id: str) -> Run:
        """The run ``run_id`` held in memory, ended or not.

        Raises:
            UnknownRunError: when no such run is held.
        """
        run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(run_id)
        return run

    def submit(
        self,
        workflow: RunEngine,
        inputs: Mapping[str, Any],
        *,
        run_id: str | None = None,
        deadline_ms: int | None = None,
        source: tuple[str, bytes] | None = None,
        idempotency_key: str | None = None,
        trigger_key: str | None = None,
        owner: str | None = None,
    ) -> str:
        """Start a run of ``workflow`` with ``inputs`` in its context; returns the run id.

        Args:
            workflow: a compiled workflow or plan (any ``RunEngine``).
            deadline_ms: the run's whole budget; past it the run is cancelled (its running
                step is sent Cancel) and ends ``cancelled``. ``None`` for no limit.
            source: ``(hash, bytes)`` of the workflow's pinned source
                (``actors.orchestrator.encode_source``): with a journal, the run is journaled
                and survives a crash; without a source it lives in memory only.
            idempotency_key: a later submit with the same key gets this run (``find_run``).
            trigger_key: the observation that started the run (same use).
            owner: the client key that submitted it (roles enforced), journaled with the run.

        Raises:
            ValueError: when ``run_id`` names a run this orchestrator already has or is no
                run id (``protocols.client.run_id_problem``), or ``deadline_ms`` is not
                between 1 and ``protocols.client.MAX_DEADLINE_MS``.
            runtime.journal.JournalError: when the journal is unavailable (nothing is started),
                or when this submission's commit fails (it is kept and committed by the retry).
        """
        durability, outbox, runs = self._durability, self._outbox, self._runs
        journaled = source is not None and durability.journal is not None
        if not outbox.available:
            raise JournalError(f"journal unavailable ({outbox.error}); retry later")
        now = self._clock()
        if run_id is None:
            # Fresh: no need to ask the journal whether it exists. It starts with the time of its
            # submission (the clock is the wall clock's milliseconds): one read of it per run.
            run_id = new_run_id(now)
        else:
            problem = run_id_problem(run_id)
            if problem is not None:
                raise ValueError(problem)
            if run_id in runs or (journaled and durability.exists(run_id)):
                raise ValueError(f"run {run_id} exists already")
        if deadline_ms is not None and not 1 <= deadline_ms <= MAX_DEADLINE_MS:
            # past the bound, now + deadline_ms would not fit the journal's INTEGER, and a
            # batch that cannot commit would hold every later commit back
            raise ValueError(f"deadline_ms must be between 1 and {MAX_DEADLINE_MS} (ten years)")
        run = Run(workflow, run_id, source[0] if journaled and source is not None else None)
        deadline_at = None if deadline_ms is None else now + deadline_ms
        runs.add(run, deadline_at_ms=deadline_at, idempotency_key=idempotency_key, trigger_key=trigger_key)
        if journaled and source is not None:
            name = workflow.name or ""  # a property: read only when needed
            durability.submitted(RunRow(
                run_id=run_id, source_hash=source[0], submitted_ms=now, deadline_at_ms=deadline_at,
                idempotency_key=idempotency_key, trigger_key=trigger_key, name=name, owner=owner), source)
        if runs.log_info:
            # the first keys and how many: 4,096 keys of 256 characters made a 1 MB line a submit
            log.info("run_submitted", run_id=run_id, workflow=workflow.name or "",
                     input_keys=sorted(inputs)[:LOGGED_INPUT_KEYS], input_key_count=len(inputs), journaled=journaled)
        self._apply(run, RunSubmitted(run_id, dict(inputs), now))  # run_id, inputs, now_ms
        outbox.commit()
        return run_id

    async def asubmit(self, workflow: RunEngine, inputs: Mapping[str, Any], **options: Any) -> str:
        """``submit``, but the callers of one event-loop turn share one commit (group commit).

        Returns only once the submission is committed, like ``submit``: the acknowledgement
        still follows the commit. Without a journal it is ``submit``.

        Raises:
            The errors of ``submit``. A shared commit that fails is retried and waited for.
        """
        if self._durability.journal is None:
            return self.submit(workflow, inputs, **options)
        with self._outbox.holding():  # the group's commit takes this submission too
            run_id = self.submit(workflow, inputs, **options)
        await self._outbox.committed()
        return run_id

    def cancel(self, run_id: str, reason: str = "cancelled by request") -> None:
        """Cancel a run: its running step is sent a Cancel and the run ends ``cancelled``.

        Raises:
            UnknownRunError: when no such run was submitted here.
            runtime.journal.JournalError: when the journal is unavailable (nothing changes).
        """
        run = self.run(run_id)
        if run.result is None:
            if not self._outbox.available:
                raise JournalError(f"journal unavailable ({self._outbox.error}); retry later")
            self._apply(run, RunCancelled(reason=reason, now_ms=self._clock()))
            self._outbox.commit()

    def resume(self, answer: Any, *, run_id: str | None = None, token: str | None = None) -> str:
        """Answer a suspended run's question and resume it (``RunResumed``, journaled first);
        returns the run id. ``run_id`` is enough when the run asks one question, ``token`` alone
        always is.

        Raises:
            AnswerRefused: as ``RunTable.question`` says (its ``code`` is the client API's).
        """
        run, suspension = self._runs.question(answer, run_id=run_id, token=token)
        self._apply(run, RunResumed(token=suspension.token, answer=answer, now_ms=self._clock()))
        self._runs.answered(suspension.token)
        self._outbox.commit()
        return run.run_id
