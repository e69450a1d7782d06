"""Replay: the journal as the proof.

A journaled run is re-applied fact by fact through the same pure engine that decided it, and
every decision it recorded is checked (:func:`verify_run`, :func:`replay_run`,
:func:`replay_journal`); or its facts are fed to a new version of its document to find the
first fact where the two would part ways (:func:`diverge_run`). No capability or model is ever
called: the engine is pure, and the outcomes come from the journal.
"""

from ontoflow.actors.replay._decisions import UNRESOLVED, context_digest
from ontoflow.actors.replay._diverge import compile_replacement, diverge_run
from ontoflow.actors.replay._journal import replay_journal, replay_run
from ontoflow.actors.replay._results import Mismatch, ReplaySummary, RunReplay
from ontoflow.actors.replay._verify import verify_run
from ontoflow.actors.replay.errors import ReplayError, ReplayInputError, RunNotFoundError

__all__ = [
    "Mismatch",
    "ReplayError",
    "ReplayInputError",
    "ReplaySummary",
    "RunNotFoundError",
    "RunReplay",
    "UNRESOLVED",
    "compile_replacement",
    "context_digest",
    "diverge_run",
    "replay_journal",
    "replay_run",
    "verify_run",
]
