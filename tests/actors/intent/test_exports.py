"""The package's public face is complete and sorted; the report key is the engine's."""

from __future__ import annotations

import ontoflow.actors.intent as intent
from ontoflow.actors.orchestrator.plans import REPORT_KEY


def test_all_is_complete_and_sorted() -> None:
    public = {n for n in dir(intent) if not n.startswith("_") and n not in ("errors",)}
    assert public == set(intent.__all__)
    upper = [n for n in intent.__all__ if n.isupper()]
    rest = [n for n in intent.__all__ if not n.isupper()]
    assert intent.__all__ == sorted(upper) + sorted(rest, key=lambda n: (n[0].islower(), n))


def test_the_answer_reads_the_engines_report_key() -> None:
    assert intent.REPORT_KEY == REPORT_KEY
