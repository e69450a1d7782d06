"""Replay: the journal as the proof.

A journaled run is re-applied fact by fact through the same pure engine that decided it, and
every decision it recorded is checked (:func:`verify_run`, :func:`replay_run`,
:func:`replay_journal`); or its facts are fed to a new version of its document to find the
first fact where the two would part ways (:func:`diverge_run`). No capability or model is ever
called: the engine is pure, and the outcomes come from the journal.
"""

from ontoflow.actors.replay._decisions import UNRESOLVED, advance, context_digest
from ontoflow.actors.replay._diverge import compile_replacement, diverge_run
from ontoflow.actors.replay._journal import replay_journal, replay_run
from ontoflow.actors.replay._results import Mismatch, ReplaySummary, RunReplay
from ontoflow.actors.replay._source import one_line, pinned_source, sqlite_reason
from ontoflow.actors.replay._verify import verify_run
from ontoflow.actors.replay.errors import PinnedSourceError, ReplayError, ReplayInputError, RunNotFoundError

__all__ = [
    "Mismatch",
    "PinnedSourceError",
    "ReplayError",
    "ReplayInputError",
    "ReplaySummary",
    "RunNotFoundError",
    "RunReplay",
    "UNRESOLVED",
    "advance",
    "compile_replacement",
    "context_digest",
    "diverge_run",
    "one_line",
    "pinned_source",
    "replay_journal",
    "replay_run",
    "sqlite_reason",
    "verify_run",
]
