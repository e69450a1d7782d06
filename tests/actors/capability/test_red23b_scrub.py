"""Values a step was handed never reach its Outcome's error, whatever the message looks like:
a value cut in two where the scrubber stops reading, and a key of a map the step was handed."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.capability import Capability, scrub
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import StepContext
from tests.actors.capability._support import make_metadata, make_request

pytestmark = pytest.mark.anyio

# A long input the message quotes first, then the person's address, split where the scrubber
# stops reading (2,000 characters): the first is redacted, which pulls the second into the
# 500 characters kept.
BLOB = "x" * 1500
ADDRESS = "Alice Liddell lives at 12 Rabbit Hole Lane, Oxford, and her diary says so. " * 15
TOKEN_TAIL = "sk-proj-" + "Ab1" * 20


class Echo(Capability):
    """Raises quoting its two string inputs, one after the other."""

    metadata = make_metadata(
        retry=RetryPolicy(max_retries=0),
        input_schema={"type": "object", "properties": {"a.first": {"type": "string"}, "a.second": {"type": "string"},
                                                       "a.scores": {"type": "object"}}},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        if "a.scores" in inputs:
            raise LookupError(f"no rate for {', '.join(inputs['a.scores'])}")
        raise RuntimeError(f"{inputs['a.first']}{inputs['a.second']}")


async def test_a_value_cut_where_the_scrubber_stops_reading_never_reaches_the_error() -> None:
    outcome = await Echo().invoke(make_request({"a.first": BLOB, "a.second": ADDRESS}))
    assert outcome.error is not None
    assert "alice" not in outcome.error.lower() and "rabbit" not in outcome.error.lower()


def test_a_secret_cut_where_the_scrubber_stops_reading_is_dropped() -> None:
    secret = "zq" + "9" * 600 + " hunter two and more words"
    text = "y" * 1000 + " " + "q" * 500 + " " + secret
    out = scrub(text, values=["y" * 1000, "q" * 500], secrets=[secret])
    assert "zq" not in out and "999" not in out


def test_a_token_cut_short_by_the_head_is_not_left_readable() -> None:
    # "sk-proj-Ab1Ab1" is too short for the token rule once cut: the last word goes whole.
    text = "v" * 1800 + " " + "w" * 186 + " " + TOKEN_TAIL
    out = scrub(text, values=["v" * 1800])
    assert "sk-proj" not in out


async def test_a_key_of_a_map_the_step_was_handed_never_reaches_the_error() -> None:
    scores = {"alice@example.com": 5, "carol@example.net": 7}
    outcome = await Echo().invoke(make_request({"a.scores": scores}))
    assert outcome.error == "unknown: LookupError: no rate for <redacted>, <redacted>"


NAME = "José Álvarez-Núñez"


@pytest.mark.parametrize("text", [f"header {NAME.encode()!r} refused", f"name {ascii(NAME)} unknown"],
                         ids=["utf-8 bytes quoted", "ascii()"])
def test_a_non_ascii_value_escaped_as_ascii_or_quoted_as_utf8_bytes_is_redacted(text: str) -> None:
    out = scrub(text, values=[NAME])
    assert "lvarez" not in out and "<redacted>" in out


def test_a_huge_value_is_only_escaped_as_far_as_the_text_reaches(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its forms were made whole: an 11 MB document held the worker's loop 1.3 s per failed step.
    from ontoflow.actors.capability import _scrub

    seen: list[int] = []

    real = _scrub.quote

    def quote(value: str, safe: str = "/") -> str:
        seen.append(len(value))
        return real(value, safe=safe)

    monkeypatch.setattr(_scrub, "quote", quote)
    document = "Lorem ipsum dolor sit amet, consectetur; " * 25_000
    text = "failed at 50% of alice%20smith"
    assert scrub(text, values=[document, "alice smith"]) == "failed at 50% of <redacted>"
    assert seen and max(seen) <= len(text)


def test_a_huge_bytes_value_whose_head_ends_inside_a_character_is_still_dropped_at_the_cut() -> None:
    blob = ("€" * 1500).encode()  # 3 bytes a character: the head the text can hold ends inside one
    text = "v" * 1800 + " " + "€" * 1500
    out = scrub(text, values=["v" * 1800, blob])
    assert "€" not in out


def test_a_map_key_that_is_a_word_stays_readable() -> None:
    dataset = {"columns": ["id"], "path": "/srv/out.jsonl", "alice smith": 1, "bob@example.org": 2}
    text = "columns and path of alice smith, bob@example.org"
    assert scrub(text, values=[dataset]) == "columns and path of <redacted>, <redacted>"
