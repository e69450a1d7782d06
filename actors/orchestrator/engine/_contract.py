"""The engine contract: what the orchestrator's run table asks of any compiled document.

Workflows (``CompiledWorkflow``) and execution plans (``CompiledPlan``), and whatever kind of
document comes next, are compiled once and then drive every run of them through the same four
calls (and ``uses``). The shell never tells the engines apart: it holds a :class:`RunEngine` and a state.
Every engine is pure: no clock (time comes in on each fact), no I/O, no randomness, no logging.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol, runtime_checkable

from ontoflow.protocols.types import RunStatusName
from ontoflow.actors.orchestrator.engine._commands import Command, Dispatch
from ontoflow.actors.orchestrator.engine._facts import Fact
from ontoflow.actors.orchestrator.engine._step_end import admit

__all__ = ["ENGINE_FAILED", "EndedEngine", "RunEngine", "RunView", "engine_failure"]


class RunView(Protocol):
    """The fields of a run's state that the shell reads, whatever the engine.

    Attributes:
        run_id, status, context, trace, notes, error, started_ms, ended_ms: see
            ``RunState``; ``notes`` may be cleared by the shell once logged.
    """

    run_id: str
    status: RunStatusName
    context: dict[str, Any]
    trace: list[Any]
    notes: list[str]
    error: str | None
    started_ms: int | None
    ended_ms: int | None


@runtime_checkable
class RunEngine(Protocol):
    """A compiled document that runs: start a run, apply a fact, list what is in flight.

    Attributes:
        kind: ``workflow`` or ``plan`` (a pipeline compiles to a plan).
        name: the document's name, for logs and run lists.
    """

    kind: str

    @property
    def name(self) -> str:
        """The document's name (for logs, traces and run lists)."""
        ...

    def new_run(self, run_id: str) -> Any:
        """The state of a run that has not been submitted yet (feed it ``RunSubmitted``)."""
        ...

    def advance(self, state: Any, fact: Fact) -> list[Command]:
        """Apply ``fact`` to ``state`` in place; return the commands, in the order to carry out.

        Raises:
            TypeError: when ``fact`` is not one of the engine's facts.
        """
        ...

    def in_flight(self, state: Any) -> list[Dispatch]:
        """The last Dispatch of every attempt the run holds in flight, in step-id order
        (what recovery re-sends or reports lost)."""
        ...

    def suspensions(self, state: Any) -> list[Any]:
        """The questions (``engine._suspend.Suspension``) the run waits on, in step order."""
        ...

    def uses(self) -> Collection[str]:
        """The ids of the capabilities a run of it may send a step of (a workflow: its blocks'
        workers and their prerequisites; a plan: its steps' and their follow-ups'), not the
        whole catalogue it was compiled against: a full catalogue keeps these while a run of it
        is in flight (``_catalogue_room.py``). Cheap: computed once, at most, per document."""
        ...


#: How the error of a run whose engine raised begins (see :func:`engine_failure`).
ENGINE_FAILED = "internal error: the engine failed on "


def engine_failure(fact: Fact, exc: BaseException) -> str:
    """The error of a run whose engine raised ``exc`` on ``fact``: what the shell records
    (``RunTable``) and replay reproduces, word for word. Neither the exception's text nor a
    value: the daemon's log says where."""
    return f"{ENGINE_FAILED}{type(fact).__name__} ({type(exc).__name__}); the daemon's log says where"


def _ended_advance(state: Any, fact: Fact) -> list[Command]:
    admit(state, fact)  # False for an ended run: a note, or the TypeError of a fact that is none
    return []


class EndedEngine:
    """What an ended run keeps in place of its engine (a ``RunEngine``): its kind, its name and
    the status gate (``admit``: a fact is noted as ignored, as the engine notes it), not the
    compiled document. Ended runs are kept for their clients (10,000 by default), and each kept
    its document: 10,000 distinct documents of 20 MB grew a daemon by 180 MB a run. Each
    compiled document makes its own once (``ended``), so a run's end costs two assignments."""

    __slots__ = ("kind", "name")

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name

    advance = staticmethod(_ended_advance)  # a plain function: ``run.advance`` binds nothing

    def in_flight(self, state: Any) -> list[Dispatch]:
        """None: an ended run has no step in flight (``RunEngine``)."""
        return []

    def suspensions(self, state: Any) -> list[Any]:
        """None: an ended run waits on no question (``RunEngine``)."""
        return []

    def uses(self) -> Collection[str]:
        """None: an ended run keeps no capability in the catalogue (``RunEngine``)."""
        return ()
