"""A YAML key given twice is found by the loader on the keys it builds, not on their text."""

from __future__ import annotations

import pytest

from ontoflow.protocols.documents import decode_document
from ontoflow.protocols.errors import ManifestError


@pytest.mark.parametrize(("text", "key"), [
    (b'a: 1\n"a": 2\n', "'a'"),  # plain and quoted: one key
    (b"a: 1\n'a': 2\n", "'a'"),
    (b'a: 1\n"\\x61": 2\n', "'a'"),  # an escape that spells it
    (b"1: x\n0x1: y\n", "1"),  # two spellings of one integer (the last was kept silently)
    (b"~: x\nnull: y\n", "None"),
    (b"true: x\nTrue: y\n", "True"),
    (b'"<<": 1\n"<<": 2\n', "'<<'"),  # a quoted << is a key like any other, not a merge
    (b"k: &k a\nm:\n  a: 1\n  *k : 2\n", "'a'"),  # an alias of a scalar already a key
])
def test_two_spellings_of_one_key_are_refused(text: bytes, key: str) -> None:
    with pytest.raises(ManifestError) as caught:
        decode_document(text, "yaml", source="d.yaml")
    assert f"found duplicate key {key} (first at line" in str(caught.value)


@pytest.mark.parametrize(("text", "expected"), [
    (b'1: x\n"1": y\n', {1: "x", "1": "y"}),  # an integer and a string: two keys (refused before)
    (b'2020-01-01: x\n"2020-01-01": y\n', None),  # a date and a string
    (b"base: &b {a: 1}\nm:\n  <<: *b\n  a: 2\n", {"base": {"a": 1}, "m": {"a": 2}}),  # a merge overridden
    (b"b1: &b1 {a: 1}\nb2: &b2 {a: 3}\nm:\n  <<: [*b1, *b2]\n", {"b1": {"a": 1}, "b2": {"a": 3}, "m": {"a": 1}}),
    (b"a: {b: 1}\nc: {b: 2}\n", {"a": {"b": 1}, "c": {"b": 2}}),  # one key in two maps
])
def test_keys_that_differ_as_values_are_kept(text: bytes, expected: object) -> None:
    document = decode_document(text, "yaml", source="d.yaml")
    assert len(document) == 2 if expected is None else document == expected
