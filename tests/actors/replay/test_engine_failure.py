"""A run whose engine raised replays to the failure the daemon recorded, not to an error."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ontoflow.actors.orchestrator import Run, RunTable, compile_document, encode_source
from ontoflow.actors.orchestrator.engine import Dispatch, RunEnded, RunSubmitted, StepFinished
from ontoflow.actors.orchestrator.engine._compile import CompiledWorkflow
from ontoflow.actors.replay import replay_journal, replay_run
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal, open_journal_readonly
from tests.actors.replay.recording import CATALOG, workflow

_encoder = msgspec.msgpack.Encoder()


def _record_live(path: Path) -> RunEnded:
    """Run ``workflow()`` through the daemon's run table (its engine raising on the second
    outcome), journaling as the shell does; the end the run table decided."""
    compiled = compile_document(workflow(), CATALOG)
    source_hash, body = encode_source(workflow(), compiled, kind=compiled.kind)
    table, run = RunTable(), Run(compiled, "r1")
    table.add(run)
    batch = CommitBatch()
    batch.sources[source_hash] = body
    batch.runs.append(RunRow(run_id="r1", source_hash=source_hash, submitted_ms=1_000, name=compiled.name))
    queue: list[Dispatch] = []
    ended: list[RunEnded] = []

    def apply(fact) -> None:
        batch.fact("r1", "fact", fact.now_ms, _encoder.encode(fact))
        for command in table.advance(run, fact):
            if isinstance(command, Dispatch):
                batch.fact("r1", "dispatched", fact.now_ms, _encoder.encode((command.step_id, command.attempt,
                                                                              command.capability, "w1")))
                queue.append(command)
            elif isinstance(command, RunEnded):
                batch.end("r1", command.status, run.state.ended_ms or 0)
                ended.append(command)

    apply(RunSubmitted(run_id="r1", inputs={}, now_ms=1_000))
    now = 1_000
    while queue and not ended:
        d = queue.pop(0)
        now += 7
        outputs = {key: 1 for key in CATALOG[d.capability].outputs}
        apply(StepFinished(outcome=Outcome(run_id="r1", step_id=d.step_id, attempt=d.attempt, event="success",
                                           outputs=outputs), now_ms=now))
    with open_journal(path) as journal:
        journal.commit(batch)
    [end] = ended
    return end


@pytest.fixture
def broken_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow engine raises on the outcome of ``sub.work`` (a bug, as plans12 found one)."""
    real = CompiledWorkflow.advance

    def advance(self, state, fact):
        if isinstance(fact, StepFinished) and len(state.trace) == 1:
            raise KeyError("secret-value")
        return real(self, state, fact)

    monkeypatch.setattr(CompiledWorkflow, "advance", advance)


def test_a_run_whose_engine_failed_replays_to_the_failure_the_daemon_recorded(tmp_path: Path, broken_engine) -> None:
    # `ontoflow replay` stopped at the exception: "could not be replayed: KeyError: 'secret-value'"
    # (the exception's text, which the daemon keeps out of a run's error), where the run had
    # ended `failed` with the engine failure named.
    live = _record_live(tmp_path / "j.sqlite")
    assert live.status == "failed" and live.error.startswith("internal error: the engine failed on StepFinished")
    with open_journal_readonly(tmp_path / "j.sqlite") as journal:
        replay = replay_run(journal, "r1")
        summary = replay_journal(journal)
        against = replay_run(journal, "r1", new=compile_document(workflow(), CATALOG))
    assert replay.error is None and replay.mismatch is None and replay.matched, replay
    assert (replay.status, replay.status_now, replay.error_now) == ("failed", "failed", live.error)
    assert "secret-value" not in msgspec.json.encode(replay).decode()
    assert summary.ok and summary.matched == 1
    assert against.matched and against.error is None and against.error_now == live.error  # the same engine: no divergence
