"""What a client may choose as a run id (``protocols.client.run_id_problem``)."""

from __future__ import annotations

import pytest

from ontoflow.protocols.client import MAX_RUN_ID_CHARS, run_id_problem


@pytest.mark.parametrize("run_id", ["r", "run-1", "r0", "2026-11-23T12:00:00Z", "job@host", "a.b_c",
                                    "0" * MAX_RUN_ID_CHARS, "01a208a614e87ba1baaac10cff627d9e"])
def test_a_run_id_of_letters_digits_and_few_marks_is_taken(run_id: str) -> None:
    assert run_id_problem(run_id) is None


@pytest.mark.parametrize("run_id", ["", "x" * (MAX_RUN_ID_CHARS + 1), "../../etc", "a/b", ".hidden", "-r",
                                    "a b", "tab\there", "new\nline", "caf\u00e9", "nul\x00"])
def test_any_other_run_id_is_refused_without_quoting_it(run_id: str) -> None:
    problem = run_id_problem(run_id)
    assert problem is not None and "run_id" in problem
    if run_id:
        assert run_id not in problem  # the client's value is never echoed
