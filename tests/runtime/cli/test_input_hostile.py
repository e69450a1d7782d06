"""``--input KEY=VALUE`` values the shell hands over as they are: bytes that are not UTF-8
(Python's argv keeps them as surrogates) and JSON nested deeper than msgspec goes. Both were
tracebacks (UnicodeEncodeError, RecursionError); each is a ConfigError naming the pair and
the key, never the value."""

from __future__ import annotations

import pytest

from ontoflow.runtime.cli._shared import parse_inputs
from ontoflow.runtime.errors import ConfigError


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("SECRET\udcff", "not UTF-8"),  # what argv holds for the bytes b"SECRET\xff"
        ("[" * 100_000, "nested deeper"),
        ("[" * 60_000 + "]" * 60_000, "nested deeper"),
        ("1e999", "out of range"),  # JSON for an infinity: it was taken as the text "1e999"
        ("[1, -1e400]", "out of range"),
    ],
    ids=["surrogates", "deep-unclosed", "deep-closed", "infinity", "infinity-inside"],
)
def test_a_hostile_value_is_an_error_naming_the_pair_not_the_value(value: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_inputs(["acme.ok=1", f"acme.k={value}"])
    text = str(caught.value)
    assert "--input #2" in text and "'acme.k'" in text and says in text
    assert "SECRET" not in text and "[[" not in text


def test_ordinary_values_are_still_json_or_text() -> None:
    assert parse_inputs(["a.n=3", "a.t=hello", "a.l=[[1]]", "a.u=Olá"]) == {"a.n": 3, "a.t": "hello", "a.l": [[1]],
                                                                           "a.u": "Olá"}


def test_an_integer_past_64_bits_is_an_error_naming_the_pair_not_the_value() -> None:
    # It was an OverflowError traceback as the run's first message was encoded.
    with pytest.raises(ConfigError) as caught:
        parse_inputs(["acme.n=[1, 987654321987654321987654321]"])
    text = str(caught.value)
    assert "--input #1" in text and "'acme.n'" in text and "64 bits" in text and "987654321" not in text
