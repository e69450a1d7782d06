"""The exit code of a daemon's refusal follows ``protocols.error_codes``: a request the client
must change before sending it again is invalid input (exit 2), a run that is not there exits 7
(``EXIT_NOT_FOUND``), a damaged record of the run exits 3 (``EXIT_JOURNAL``), the rest exit 1."""

from __future__ import annotations

import pytest

from ontoflow.protocols.client import Busy, Error
from ontoflow.runtime.cli._client import reply_code
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_INVALID, EXIT_JOURNAL, EXIT_NOT_FOUND


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [
        ("invalid_request", EXIT_INVALID), ("invalid_manifest", EXIT_INVALID), ("invalid_inputs", EXIT_INVALID),
        ("idempotency_conflict", EXIT_INVALID),
        ("payload_too_large", EXIT_INVALID),  # was 1: the same request can only be refused again
        ("unknown_run", EXIT_NOT_FOUND),  # was 1, which also means "the run failed"
        ("unavailable", EXIT_FAILED), ("internal", EXIT_FAILED),
        ("journal_damaged", EXIT_JOURNAL),  # was internal (1): a damaged row is not a bug
    ],
)
def test_a_refusal_the_client_must_change_exits_2(code: str, exit_code: int, capsys) -> None:
    assert reply_code(Error(code=code, message="why")) == exit_code
    assert code in capsys.readouterr().err


def test_busy_exits_1(capsys) -> None:
    assert reply_code(Busy(runs_in_flight=3, limit=3)) == EXIT_FAILED
