"""Times the daemon sends (a run's submitted and ended, read from its journal) are printed as
UTC; one outside what a datetime holds (a damaged journal row) was a ValueError traceback
that ended ``ontoflow runs`` for the whole listing."""

from __future__ import annotations

import pytest

from ontoflow.runtime.cli._shared import utc


def test_a_usual_time_is_iso_utc() -> None:
    assert utc(1_795_459_263_707) == "2026-11-23T18:41:03.707Z"
    assert utc(None) == "-" and utc(0) == "-"


@pytest.mark.parametrize("ms", [-99_999_999_999_999, 99_999_999_999_999_999, 2**63 - 1, -(2**63)])
def test_a_time_past_what_a_date_holds_is_printed_as_its_milliseconds(ms: int) -> None:
    assert utc(ms) == f"{ms} ms"
