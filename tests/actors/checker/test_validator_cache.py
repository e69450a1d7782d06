"""The checker's compiled validators are kept within a bound (a daemon checks every client's documents)."""

from __future__ import annotations

from ontoflow.actors.checker import _schema


def test_the_compiled_validators_are_kept_within_a_bound() -> None:
    # One validator per distinct schema, kept in a dict that only grew for the daemon's life.
    for i in range(_schema.CACHED_VALIDATORS + 200):
        assert _schema.literal_problem("abc", {"type": "string", "maxLength": 10_000 + i}) is None
    assert _schema._compiled.cache_info().currsize <= _schema.CACHED_VALIDATORS
    assert _schema.literal_problem(7, {"type": "string", "maxLength": 3}) == "must be string"  # still checks

