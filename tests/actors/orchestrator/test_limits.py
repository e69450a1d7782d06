"""The size limit on context values: what ``oversized`` reports is what encoding measures."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ontoflow.actors.orchestrator._step_payload import check_payload, oversized

VALUES: list[Any] = [None, True, 0, -1, 2**63, -(2**63), 2**64 - 1, 1.5, "", "a" * 40, "é" * 30, "🙂" * 12,
                     [1, 2, 3], {"k": "v" * 50}, b"x" * 30]


@pytest.mark.parametrize("limit", [0, 1, 4, 8, 9, 10, 31, 32, 60, 200])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_value_is_over_the_limit_exactly_when_its_encoding_is(value: Any, limit: int) -> None:
    size = len(msgspec.msgpack.encode(value))
    expected = ("k", size) if size > limit else None
    assert oversized({"k": value}, limit) == expected


def test_the_message_names_the_key_and_sizes_never_the_value() -> None:
    message = check_payload({"small": 1, "big": "secret" * 10}, 16, "input")
    assert message == "input 'big' is 62 bytes encoded, over the limit of 16 bytes"
    assert check_payload({"small": 1}, 16, "input") is None


def test_a_value_that_cannot_be_encoded_is_a_type_error() -> None:
    with pytest.raises((TypeError, OverflowError)):
        oversized({"k": 2**70}, 1 << 20)


@pytest.mark.parametrize("limit", [0, 8, 9, 32, 200])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_check_payload_says_what_the_two_walks_say(value: Any, limit: int) -> None:
    """Its one pass over scalars within their bound answers as the depth and size walks do."""
    values = {"a": 1, "k": value, "z": "s"}
    try:
        found = oversized(values, limit)
    except (TypeError, OverflowError):
        return
    expected = None if found is None else f"input '{found[0]}' is {found[1]} bytes encoded, over the limit of {limit} bytes"
    assert check_payload(values, limit, "input") == expected


def test_a_submit_of_scalars_within_their_bound_is_passed_without_the_two_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    import ontoflow.actors.orchestrator._step_payload as payload

    def walked(*args: Any) -> None:
        raise AssertionError("walked")

    monkeypatch.setattr(payload, "too_deep", walked)
    monkeypatch.setattr(payload, "oversized", walked)
    assert check_payload({"bench.label": "run-label", "bench.size": 42, "f": 1.5, "b": True, "n": None}, 1 << 20,
                         "input") is None
    with pytest.raises(AssertionError, match="walked"):  # a map takes the walks
        check_payload({"doc": {"k": 1}}, 1 << 20, "input")
