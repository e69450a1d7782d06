"""Duplicate keys in a submitted msgpack document (``protocols._msgpack_keys``)."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols import ManifestError
from ontoflow.protocols._msgpack_keys import duplicate_key
from ontoflow.protocols.documents import refuse_duplicate_keys
from ontoflow.protocols.oml import check_oml

_enc = msgspec.msgpack.encode


def _map(*pairs: tuple[object, bytes]) -> bytes:
    return bytes([0x80 | len(pairs)]) + b"".join(_enc(k) + v for k, v in pairs)


def test_unique_keys_pass_on_both_paths() -> None:
    body = _enc({"a": [1, 2.5, {"b": None, "c": b"x", "d": "y" * 300}], "e": {"f": {"g": [[], {}]}}, "h": {}})
    assert duplicate_key(body) is None
    assert duplicate_key(body, msgspec.msgpack.decode(body)) is None
    float32 = _map(("a", b"\xca\x00\x00\x00\x00"), ("b", _enc({"x": 1})))  # another encoder's bytes: walked
    assert duplicate_key(float32, msgspec.msgpack.decode(float32)) is None


@pytest.mark.parametrize(("body", "found"), [
    (_map(("a", _enc(1)), ("a", _enc(2))), ("", "a")),
    (_map(("n", _map(("b", _map(("x", _enc(1)), ("y", _enc([1, {"z": 2}])), ("x", _enc(3))))))), ("n.b", "x")),
    (_map(("a", b"\x92" + _enc(1) + _map(("k", _enc(1)), ("k", _enc(2))))), ("a[1]", "k")),
    (_map((1, _enc("one")), (1, _enc("two"))), ("", "1")),
    (_map(("k" * 500, _enc(1)), ("k" * 500, _enc(2))), ("", "k" * 80 + "... (500 characters)")),
])
def test_the_first_duplicate_is_found_by_its_path(body: bytes, found: tuple[str, str]) -> None:
    assert duplicate_key(body) == found
    assert duplicate_key(body, msgspec.msgpack.decode(body)) == found


def test_the_refusal_names_the_path_and_the_key_never_a_value() -> None:
    body = _map(("steps", b"\x91" + _map(("params", _map(("p", _enc("VALUE-1")), ("p", _enc("VALUE-2")))))))
    with pytest.raises(ManifestError) as caught:
        refuse_duplicate_keys(body, msgspec.msgpack.decode(body))
    assert caught.value.problems[0].path == "manifest.steps[0].params"
    assert "duplicate key 'p'" in str(caught.value) and "VALUE" not in str(caught.value)


def test_a_pipeline_connection_name_is_bounded_and_not_echoed() -> None:
    def pipeline(name: str) -> dict:
        return {"oml_version": "0.1.0", "name": "p", "steps": [
            {"id": "read", "component": "sqlite-reader", "mode": "read", "config": {"connection": "@" + name}}]}
    problems = [p for p in check_oml(pipeline("n" * 5_000)) if p.path.endswith("connection")]
    assert [p.message for p in problems] == ["a connection name is at most 64 characters (this one has 5,000)"]
    assert not [p for p in check_oml(pipeline("n" * 64)) if p.path.endswith("connection")]
