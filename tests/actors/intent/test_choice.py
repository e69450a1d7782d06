"""A reply to a question with candidates, read loosely: by value in any case, by position, by a word
only one candidate holds; anything else is left for the run to refuse."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import choose

NORDEA = [{"symbol": "NDA-SE.ST", "name": "Nordea Bank Abp (Stockholm)", "market": "SE"},
          {"symbol": "NDA-FI.HE", "name": "Nordea Bank Abp (Helsinki)", "market": "FI"}]


@pytest.mark.parametrize(("reply", "chosen"), [
    ("NDA-FI.HE", "NDA-FI.HE"),
    ("  nda-fi.he ", "NDA-FI.HE"),
    ("FI", "NDA-FI.HE"),  # another value of the candidate: answered by its first value
    ("2", "NDA-FI.HE"),
    ("#2", "NDA-FI.HE"),
    ("a segunda", "NDA-FI.HE"),
    ("a opção 2", "NDA-FI.HE"),
    ("the second one", "NDA-FI.HE"),
    ("o último", "NDA-FI.HE"),
    ("1º", "NDA-SE.ST"),
    ("the first", "NDA-SE.ST"),
    ("a primeira", "NDA-SE.ST"),
    ("Helsinki", "NDA-FI.HE"),
    ("a de Estocolmo", None),  # a word no candidate holds
    ("Stockholm", "NDA-SE.ST"),
])
def test_a_reply_names_one_candidate(reply: str, chosen: str | None) -> None:
    assert choose(reply, NORDEA) == chosen


@pytest.mark.parametrize("reply", ["", "   ", "Nordea", "3", "0", "the third", "1 or 2", "Apple", "-1", "- 2", "+1", "1.5", "2,0"])
def test_a_reply_that_names_none_or_several_is_left_to_the_run(reply: str) -> None:
    assert choose(reply, NORDEA) is None


def test_plain_candidates_and_no_candidates() -> None:
    assert choose("B", ["a", "b"]) == "b"
    assert choose("2", ["a", "b"]) == "b"
    assert choose("anything", []) is None


@pytest.mark.parametrize(("reply", "chosen"), [("2" * 5000, None), ("0002000000", None), ("①", "NDA-SE.ST")])
def test_a_position_is_a_few_decimal_digits(reply: str, chosen: str | None) -> None:
    # Before: 5,000 digits raised ValueError (int's digit limit) out of choose (``ontoflow
    # answer`` crashed; the planner actor asking would have).
    assert choose(reply, NORDEA) == chosen
