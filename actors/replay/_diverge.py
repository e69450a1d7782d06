"""Replay a journaled run against a new version of its document: where would it part ways?

The recorded facts are fed to two engines side by side: the run's own document (compiled
from its pinned source) and the new one (compiled against the same pinned capability catalogue,
defaults and working tree, so only the document differs). After each fact the decisions of both
are named (:func:`~actors.replay._decisions.decisions`: routes taken, dispatches, cancels, the
end) and compared; the first fact where they differ is the divergence, with the block and the
signal it happened on. An outcome (or a loss) of an attempt the run's document had in flight
but the new one would never have dispatched is a divergence too, named at that fact: the new
version could not take that run over.

Like Temporal's replayer, this tells before deploying a new version whether the runs in flight
would carry on under it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ontoflow.actors.orchestrator import compile_document, compile_source, decode_source, document_kind
from ontoflow.actors.orchestrator.engine import Fact, RunCancelled, RunEngine, RunSubmitted
from ontoflow.actors.replay._decisions import (
    UNRESOLVED,
    Dispatched,
    advance,
    block_of,
    context_digest,
    decisions,
    fact_about,
    read_rows,
)
from ontoflow.actors.replay._results import Mismatch, RunReplay
from ontoflow.actors.replay.errors import ReplayInputError
from ontoflow.runtime.journal import FactRow, RunRow

__all__ = ["compile_replacement", "diverge_run"]


def compile_replacement(source: bytes, document: Mapping[str, Any], *, manifest_hash: str = "",
                        origin: str = "new document") -> RunEngine:
    """Compile ``document`` as the run pinned in ``source`` would have been compiled.

    Raises:
        ReplayInputError: when ``document`` is of another kind than the run's (a plan for a
            workflow).
        protocols.errors.ManifestError: naming each problem of ``document`` with its path.
        msgspec.DecodeError: when ``source`` does not decode.
    """
    pinned = decode_source(source)
    kind = document_kind(document)
    if kind != pinned.kind:
        raise ReplayInputError(f"{origin} is a {kind}, the run ran a {pinned.kind}")
    return compile_document(document, pinned.catalog, kind=kind, manifest_hash=manifest_hash, defaults=pinned.defaults,
                            worktree=pinned.worktree, connections=UNRESOLVED, source=origin)


def diverge_run(row: RunRow, rows: list[FactRow], source: bytes, new: RunEngine, *, against: str = "") -> RunReplay:
    """Feed ``row``'s recorded facts to its own document and to ``new``; the first divergence.

    Args:
        row: the run's row.
        rows: its fact rows, in journal order.
        source: its pinned source.
        new: the new version, from :func:`compile_replacement`.
        against: the new document's path, for the report.

    Returns:
        The replay; ``matched`` when every recorded fact leads to the same decisions under ``new``.

    Raises:
        msgspec.DecodeError: when the source or a row does not decode.
        protocols.errors.ManifestError: when the run's own source no longer compiles.
    """
    old: RunEngine = compile_source(source, connections=UNRESOLVED)
    then, now = old.new_run(row.run_id), new.new_run(row.run_id)
    workflow = old.kind == "workflow"
    facts = 0
    mismatch = None
    for item in read_rows(rows):
        if isinstance(item, Dispatched):
            continue  # what the shell did with a decision; the decisions themselves are compared
        facts += 1
        mismatch = _orphan(old, then, new, now, item, facts)
        if mismatch is not None:
            break
        seen_then, seen_now = len(then.trace), len(now.trace)
        block = block_of(old, then, fact_about(item)[1])
        decided_then = decisions(advance(old, then, item), then.trace[seen_then:], workflow)
        decided_now = decisions(advance(new, now, item), now.trace[seen_now:], workflow)
        then.notes.clear()
        now.notes.clear()
        if decided_then != decided_now:
            kind, step_id, _, signal = fact_about(item)
            mismatch = Mismatch(fact_index=facts, fact=kind, step_id=step_id,
                                block=block_of(old, then, step_id) or block or _entry(old, item),
                                signal=signal, what="decisions", recorded="; ".join(decided_then) or "nothing",
                                now="; ".join(decided_now) or "nothing")
            break
    return RunReplay(
        run_id=row.run_id, kind=old.kind, name=old.name, status=row.status, matched=mismatch is None, facts=facts,
        status_now=now.status, error_now=now.error, context_sha256=context_digest(now.context), against=against,
        mismatch=mismatch,
    )


def _orphan(old: RunEngine, then: Any, new: RunEngine, now: Any, fact: Fact, index: int) -> Mismatch | None:
    """An outcome or loss of an attempt in flight under the run's document but not under ``new``."""
    if isinstance(fact, RunSubmitted | RunCancelled):
        return None
    kind, step_id, attempt, signal = fact_about(fact)
    key = (step_id, attempt)
    if key not in {(d.step_id, d.attempt) for d in old.in_flight(then)}:
        return None  # a late or stray fact: the run's own document ignored it too
    if key in {(d.step_id, d.attempt) for d in new.in_flight(now)}:
        return None
    held = [f"{d.step_id}#{d.attempt} {d.capability}" for d in new.in_flight(now)]
    return Mismatch(fact_index=index, fact=kind, step_id=step_id, block=block_of(old, then, step_id), signal=signal,
                    what="outcome", recorded=f"{step_id}#{attempt} was in flight",
                    now=f"the new version never dispatched {step_id}#{attempt}"
                    + (f" (it holds {', '.join(held)})" if held else f" (its run is {now.status})"))


def _entry(engine: RunEngine, fact: Fact) -> str | None:
    """The entry of a workflow for a divergence on ``RunSubmitted`` (no step yet)."""
    if isinstance(fact, RunSubmitted):
        manifest = getattr(engine, "manifest", None)
        start = getattr(manifest, "start", None)
        nodes = getattr(engine, "nodes", None)
        if start and nodes and start in nodes:
            return f"{start}.{nodes[start].entry_block}"
    return None
