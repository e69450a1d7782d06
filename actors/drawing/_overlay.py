"""The path a journaled run took, rebuilt read-only from its journal.

The journal holds the run's pinned source and its facts; replaying the facts through the pure
engine (as a recovering daemon does) gives the run's trace: every step in order with its event,
attempt and duration, and how the run ended. The file is opened with
:func:`~runtime.journal.open_journal_readonly`: drawing a run never writes to its journal, nor
creates a file beside it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata

from ontoflow.actors.drawing.errors import RunNotFoundError

__all__ = ["OverlayStep", "RunOverlay", "overlay_from_journal", "overlay_from_state"]


@dataclass(frozen=True, slots=True)
class OverlayStep:
    """One finished step of the run (``block`` is the plan step id for plans)."""

    step_id: str
    node: str
    block: str
    capability: str
    event: str
    attempt: int
    duration_ms: float
    prerequisite_of: str | None = None

    @property
    def capability_short(self) -> str:
        """The capability id's last part, to keep a box narrow."""
        return self.capability.rsplit(".", 1)[-1]


@dataclass(slots=True)
class RunOverlay:
    """A run's path: its steps in order, how it ended and the step a failed run ended in.

    Attributes:
        document: the run's pinned document (drawn when no other document is given).
        catalog: the capability metadata the run was compiled against.
    """

    run_id: str
    status: str
    error: str | None
    steps: list[OverlayStep]
    failed_step: OverlayStep | None
    document: dict[str, Any] = field(default_factory=dict)
    catalog: dict[str, CapabilityMetadata] = field(default_factory=dict)


def overlay_from_state(run_id: str, state: Any) -> RunOverlay:
    """The overlay of a run state of either engine (anything with ``trace``, ``status``, ``error``)."""
    steps = [
        OverlayStep(t.step_id, t.node, t.block, t.capability, t.event, t.attempt, t.duration_ms, t.prerequisite_of)
        for t in state.trace
    ]
    failed = steps[-1] if state.status == "failed" and steps else None
    return RunOverlay(run_id, state.status, state.error, steps, failed)


def overlay_from_journal(journal_path: str | Path, run_id: str) -> RunOverlay:
    """Rebuild run ``run_id`` from the journal at ``journal_path``, read-only.

    Raises:
        RunNotFoundError: when the file is not a readable journal, does not hold the run, or
            the run's source no longer compiles.
    """
    from ontoflow.actors.orchestrator import compile_source, decode_source
    from ontoflow.actors.orchestrator.engine import Fact
    from ontoflow.actors.replay import UNRESOLVED, PinnedSourceError, advance, one_line, pinned_source, sqlite_reason
    from ontoflow.protocols.errors import ProtocolsError
    from ontoflow.runtime.journal import JournalError, open_journal_readonly

    # The one read-only opening every tool shares: no side file beside a closed journal (SQLite's
    # mode=ro alone makes a -wal and a -shm), a path taken as a path (not a URI whose '?' or '#'
    # starts a query), an older schema read as it was written, a newer one refused by name.
    try:
        journal = open_journal_readonly(journal_path)
    except JournalError as exc:
        raise RunNotFoundError(str(exc)) from None
    path = journal.path
    try:
        with journal.snapshot():  # the row, its source and its facts as of one commit of a live daemon
            row = journal.run(run_id)
            if row is None:
                known = ", ".join(r.run_id for r in journal.runs(limit=5)) or "none"
                raise RunNotFoundError(f"journal {path} holds no run {run_id!r} (newest: {known})")
            # Read and checked as replay does: present, stored as bytes, the bytes its hash names.
            body = pinned_source(journal, row)
            facts = journal.facts(run_id)
    except PinnedSourceError as exc:
        raise RunNotFoundError(f"run {run_id}: {exc}") from None
    except sqlite3.Error as exc:  # SQLite's own message may quote a column's bytes
        raise RunNotFoundError(f"journal {path} cannot be read ({sqlite_reason(exc)})") from None
    except JournalError as exc:
        raise RunNotFoundError(f"journal {path} cannot be read ({exc})") from None
    finally:
        journal.close()
    try:
        source = decode_source(body)
        # Drawing never runs a step: a pipeline's connections stay names (no secret read into
        # memory, and a machine without them can still draw the run).
        workflow = compile_source(body, connections=UNRESOLVED)
        decoder = msgspec.msgpack.Decoder(Fact)
        state = workflow.new_run(run_id)
        for fact_row in facts:
            if fact_row.kind == "fact":
                # As the daemon's shell (and replay) apply it: an engine that raised ended the
                # run failed there, and the run is drawn so, not a traceback.
                advance(workflow, state, decoder.decode(fact_row.body))
    except (msgspec.DecodeError, ProtocolsError, ValueError) as exc:
        raise RunNotFoundError(f"run {run_id}: cannot be rebuilt from the journal ({type(exc).__name__}: "
                               f"{one_line(exc)})") from None
    overlay = overlay_from_state(run_id, state)
    overlay.document = dict(source.manifest)
    overlay.catalog = dict(source.catalog)
    return overlay

