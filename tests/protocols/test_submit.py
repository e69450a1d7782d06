"""Reading a Submit: the document from untrusted bytes, and idempotency keys that are re-used."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols.documents import decode_submitted_document, idempotency_conflict, submit_fingerprint
from ontoflow.protocols.errors import ManifestError

_enc = msgspec.msgpack.encode
DOC = {"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": "x"}}}}}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"\x81\xa5start\xa2\xf7\xf7", "not valid UTF-8"),
        (b"\x81\xa1k" + b"\x91" * 5000 + b"\xc0", "nested too deeply"),
        (b"\x91\x01", "expected an object with string keys"),
        (b"\xc1", "expected an object with string keys"),
        (b"\x81\x01\x02", "expected an object with string keys"),
    ],
)
def test_an_unreadable_document_is_a_manifest_error_naming_the_path(body: bytes, says: str) -> None:
    with pytest.raises(ManifestError) as caught:
        decode_submitted_document(body)
    assert caught.value.problems[0].path == "manifest" and says in str(caught.value)


def test_the_same_submit_has_the_same_fingerprint_in_any_key_order() -> None:
    one = submit_fingerprint(_enc(DOC), {"a": 1, "b": [1, 2]}, deadline_ms=5)
    two = submit_fingerprint(_enc(DOC), {"b": [1, 2], "a": 1}, deadline_ms=5)
    assert one == two and len(one) == 64
    assert submit_fingerprint(DOC, {"a": 1}) == submit_fingerprint({"nodes": DOC["nodes"], "start": "m"}, {"a": 1})


@pytest.mark.parametrize(
    "change",
    [
        {"inputs": {"a": 2}},
        {"document": {**DOC, "name": "other"}},
        {"deadline_ms": 6},
        {"manifest_hash": "h2"},
    ],
)
def test_a_different_submit_under_a_used_key_is_a_conflict(change: dict) -> None:
    base = {"document": DOC, "inputs": {"a": 1}, "deadline_ms": 5, "manifest_hash": "h1"}
    first = submit_fingerprint(base["document"], base["inputs"], deadline_ms=base["deadline_ms"],
                               manifest_hash=base["manifest_hash"])
    other = {**base, **change}
    second = submit_fingerprint(other["document"], other["inputs"], deadline_ms=other["deadline_ms"],
                                manifest_hash=other["manifest_hash"])
    message = idempotency_conflict("k-1", first, second)
    assert message is not None and "'k-1'" in message
    assert "2" not in message.replace("k-1", "")  # names the key, never a value
    assert idempotency_conflict("k-1", first, first) is None


def test_a_run_recorded_before_fingerprints_is_taken_as_the_same_submit() -> None:
    assert idempotency_conflict("k", None, "abc") is None
