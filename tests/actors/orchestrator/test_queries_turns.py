"""``Queries`` counts the journal rows it reads for clients per turn of the loop, the turn told
by the composition (``Mailbox.turn``, a callable it is given) rather than read off another
part's attributes: the count starts again when the turn changes, and only then."""

from __future__ import annotations

from pathlib import Path

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._queries import READS_PER_TURN, Queries
from ontoflow.protocols.client import Error, RunList
from ontoflow.runtime.journal import open_journal


def test_the_reads_of_a_turn_are_counted_by_the_turn_it_is_given(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        orch = compose_orchestrator(address="inproc://queries-turns", journal=journal).orchestrator
        turn = [7]
        queries = Queries(orch, lambda: turn[0])
        assert [type(queries.list_runs(None, READS_PER_TURN // 2)) for _ in range(2)] == [RunList, RunList]
        spent = queries.list_runs(None, 1)
        assert isinstance(spent, Error) and spent.code == "unavailable", spent
        turn[0] += 1  # the next batch: the count starts again
        assert isinstance(queries.list_runs(None, 1), RunList)


def test_the_composed_queries_count_the_mailbox_s_turns(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        orch = compose_orchestrator(address="inproc://queries-mailbox-turns", journal=journal).orchestrator
        before = orch.mailbox.turn()
        orch.deliver([], now=1)
        assert orch.mailbox.turn() == before + 1
