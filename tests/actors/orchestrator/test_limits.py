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
