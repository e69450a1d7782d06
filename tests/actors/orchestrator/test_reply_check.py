"""The check of replies made from journal rows (``_reply_check.py``): what a client's decoder
refuses is refused ``journal_damaged`` naming the run (the end-to-end case, a row edited by
hand, is ``tests/integration/test_damaged_reply.py``)."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator._reply_check import checked_list, checked_reply
from ontoflow.protocols.client import RunStatus, RunSummary
from ontoflow.runtime.journal import JournalCorruptError


def test_a_status_a_client_would_drop_is_refused_naming_the_run() -> None:
    checked_reply(RunStatus(run_id="r1", status="completed", ended_ms=5), "r1")
    with pytest.raises(JournalCorruptError, match="run 'r1'.*ended_ms"):
        checked_reply(RunStatus(run_id="r1", status="completed", ended_ms=None), "r1")  # type: ignore[arg-type]


def test_a_list_with_a_summary_a_client_would_drop_is_refused_naming_its_run() -> None:
    good = RunSummary(run_id="a", status="completed", ended_ms=3)
    assert checked_list([good]) is None and checked_list([]) is None
    refused = checked_list([good, RunSummary(run_id="b", status="Done")])  # type: ignore[arg-type]
    assert refused is not None and refused.code == "journal_damaged" and "run b " in refused.message
