"""A destination folder longer than any path a file system opens is refused by its length,
before anything walks it: its parents were listed first (time quadratic in its parts: 100 KB
held the worker's loop 36 s), and the message echoed all of it."""

from __future__ import annotations

from ontoflow.actors.synthesis._capabilities import _destination_problem


def test_a_destination_past_4096_bytes_is_refused_by_its_length_not_echoed() -> None:
    message = _destination_problem("a/" * 30_000)
    assert message is not None and "60,000 characters" in message and len(message) < 300, message


def test_an_ordinary_destination_is_fine(tmp_path) -> None:
    assert _destination_problem(str(tmp_path / "out" / "deeper")) is None
