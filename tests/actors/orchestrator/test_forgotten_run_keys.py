"""A forgotten run's keys go with it when a journal answers for them (a real SQLite journal).

The CLI gives every submit an idempotency key, and the run table kept each key (and each
trigger key) for good after the run itself was forgotten: a journaled daemon's memory grew by a
key a run for as long as it ran. The journal answers ``find_run`` for a forgotten run's keys.
Without a journal the keys are what dedupes, so they stay, at most ``MAX_KEYS`` of them.
"""

from __future__ import annotations

from pathlib import Path

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.runtime.journal import open_journal
from tests.actors.orchestrator.parts import one_step


def test_a_forgotten_runs_keys_are_answered_by_the_journal_not_kept_in_memory(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        orch = compose_orchestrator(address="inproc://forgotten-keys", journal=journal).orchestrator
        ids = [orch.submit(one_step(), {}, idempotency_key=f"k{n}", trigger_key=f"t{n}", source=("h", b"{}"))
               for n in range(3)]  # with a source: journaled
        for run_id in ids:
            orch.cancel(run_id)
        orch.durability.commit()
        for run_id in ids:
            orch.forget(run_id)
        assert all(orch.runs.find(idempotency_key=f"k{n}") is None for n in range(3))
        assert all(orch.runs.find(trigger_key=f"t{n}") is None for n in range(3))
        assert [orch.find_run(idempotency_key=f"k{n}") for n in range(3)] == ids  # the journal answers
        assert [orch.find_run(trigger_key=f"t{n}") for n in range(3)] == ids
        assert not orch.runs._by_key and not orch.runs._by_trigger and not orch.runs._keys_of


def test_without_a_journal_a_forgotten_runs_keys_stay_within_a_bound() -> None:
    orch = compose_orchestrator(address="inproc://forgotten-keys-memory").orchestrator
    run_id = orch.submit(one_step(), {}, idempotency_key="k", trigger_key="t")
    orch.cancel(run_id)
    orch.forget(run_id)
    assert orch.find_run(idempotency_key="k") == run_id and orch.find_run(trigger_key="t") == run_id
    assert not orch.runs._keys_of
    from ontoflow.actors.orchestrator._run_table import MAX_KEYS

    table = RunTable()
    workflow = one_step()

    for n in range(MAX_KEYS):
        table._by_key[f"k{n}"] = f"r{n}"  # as ``add`` leaves them: the oldest first
    table.add(Run(workflow, "new"), idempotency_key="k-new")
    assert len(table._by_key) == MAX_KEYS and "k0" not in table._by_key and table.find(idempotency_key="k-new") == "new"
