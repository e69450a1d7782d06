"""Decoding is total: generated frames at the worker-facing and the client-facing decoders.

Every frame set either decodes to typed messages or raises ``ProtocolError`` with a reason
code; nothing else ever escapes (no ``UnicodeDecodeError``, ``RecursionError``, ...). The
default run throws at least 5,000 frames at each decoder; ``make soak`` throws 100,000.
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ontoflow.protocols.client import (
    CLIENT_HEADER,
    ClientMessage,
    DaemonRequest,
    Status,
    Submit,
    client_from_frames,
    client_to_frames,
    request_from_frames,
)
from ontoflow.protocols.documents import decode_submitted_document
from ontoflow.protocols.errors import ProtocolError
from ontoflow.protocols.messages import Heartbeat, Invoke, Outcome, Ready, WireMessage
from ontoflow.runtime.codec import HEADER, from_frames, pack, to_frames

REASONS = {"frames", "header", "oversized", "undecodable", "utf8", "too_deep", "invalid"}
FRAMES_PER_EXAMPLE = 50

_enc = msgspec.msgpack.encode

WORKER_BODIES = [
    to_frames(Heartbeat())[1],
    to_frames(Outcome(run_id="r", step_id="s", attempt=1, event="success", outputs={"k": [1, "two", {"x": 3.0}]}))[1],
    to_frames(Invoke(run_id="r", step_id="s", attempt=2, capability="c.d", inputs={"a": "b"}))[1],
    to_frames(Ready(protocol=2, worker_id="w", capabilities=[]))[1],
    pack([Heartbeat(), Outcome(run_id="r", step_id="s", attempt=1, event="e")])[0],
]
CLIENT_BODIES = [
    client_to_frames(Submit(manifest={"start": "m", "nodes": {}}, inputs={"k": 1}, idempotency_key="i"))[1],
    client_to_frames(Status(run_id="r", wait=True))[1],
]

#: Any msgpack value: the "wrong shapes" and what is nested in otherwise valid bodies.
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=20,
)


def _invalid_utf8(prefix: bytes) -> st.SearchStrategy[bytes]:
    """A body whose first string is replaced by bytes that are not UTF-8."""
    bad = st.binary(min_size=1, max_size=30).map(lambda b: bytes(0x80 | (c & 0x7F) for c in b))
    return bad.map(lambda b: prefix + bytes([0xA0 | len(b)]) + b)


def _deep(depth: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    array = depth.map(lambda n: b"\x91" * n + b"\xc0")
    mapping = depth.map(lambda n: b"\x81\xa1k" * n + b"\xc0")
    nested = st.one_of(array, mapping)
    # Deep nesting on its own, and inside a field typed Any of an otherwise valid message.
    in_outcome = nested.map(lambda d: b"\x96" + b"".join(_enc(x) for x in ["outcome", "r", "s", 1, "e"]) + b"\x81\xa1k" + d)
    in_submit = nested.map(lambda d: b"\x82\xa2op\xa6submit\xa8manifest\x81\xa1k" + d)
    return st.one_of(nested, in_outcome, in_submit)


def _mutated(bodies: list[bytes]) -> st.SearchStrategy[bytes]:
    body = st.sampled_from(bodies)
    truncated = st.tuples(body, st.integers(0, 200)).map(lambda t: t[0][: t[1] % max(len(t[0]), 1)])
    flipped = st.tuples(body, st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 7)), min_size=1, max_size=4)).map(
        lambda t: _flip(*t))
    return st.one_of(body, truncated, flipped)


def _flip(body: bytes, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(body)
    for at, bit in flips:
        out[at % len(out)] ^= 1 << bit
    return bytes(out)


#: Claims of huge sizes (str32, bin32, array32, map32, ext32) with little behind them, and
#: bodies that really are big.
oversized = st.one_of(
    st.sampled_from([b"\xdb", b"\xc6", b"\xdd", b"\xdf", b"\xc9"]).map(lambda h: h + b"\xff\xff\xff\xff\x01"),
    st.integers(1, 4).map(lambda n: b"\xdc\xff\xff" + b"\x91" * 50_000 * n),
    st.integers(100_000, 400_000).map(lambda n: b"\xdb" + n.to_bytes(4, "big") + b"a" * n),
)


def _bodies(valid: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=300),
        _mutated(valid),
        values.map(_enc),
        st.tuples(st.sampled_from(["batch", "outcome", "ready", "submit", "status", "nope"]), values).map(
            lambda t: _enc([t[0], t[1]])),
        st.dictionaries(st.sampled_from(["op", "run_id", "manifest", "wait"]), values).map(_enc),
        _invalid_utf8(b"\x91"), _invalid_utf8(b"\x92\xa9heartbeat"), _invalid_utf8(b"\x81\xa2op"),
        _deep(st.integers(1, 3000)),
        oversized,
    )


def _frame_sets(header: bytes, valid: list[bytes]) -> st.SearchStrategy[list[bytes]]:
    body = _bodies(valid)
    other_header = st.sampled_from([HEADER, CLIENT_HEADER, b"", b"ontoflow-x"]) | st.binary(max_size=12)
    return st.one_of(
        body.map(lambda b: [header, b]),
        st.tuples(other_header, body).map(list),
        st.lists(st.binary(max_size=40), max_size=4),
        st.tuples(body, body, body).map(lambda t: [header, *t]),
    )


def _total(decode, frames: list[bytes], kind: type | tuple) -> None:
    try:
        result = decode(frames)
    except ProtocolError as exc:
        assert exc.reason in REASONS, exc.reason
        assert len(str(exc)) < 2_000  # a reason, never the frame echoed back
        return
    items = result if isinstance(result, list) else [result]
    assert all(isinstance(item, kind) for item in items)


def _fuzz(header: bytes, valid: list[bytes], decoders: list[tuple], examples: int) -> int:
    seen = [0]

    @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(st.lists(_frame_sets(header, valid), min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE))
    def run(frame_sets: list[list[bytes]]) -> None:
        for frames in frame_sets:
            for decode, kind in decoders:
                _total(decode, frames, kind)
            seen[0] += 1

    run()
    return seen[0]


WORKER_DECODERS = [(from_frames, WireMessage.__args__)]
CLIENT_DECODERS = [(request_from_frames, DaemonRequest.__args__), (client_from_frames, ClientMessage.__args__)]


def _fuzzed(figures, side: str, header: bytes, valid: list[bytes], decoders: list[tuple], examples: int) -> int:
    frames = _fuzz(header, valid, decoders, examples)
    figures.record("decode_fuzz", **{f"{side}_frames": frames, f"{side}_crashes": 0})  # reached: none raised
    return frames


def test_worker_facing_decoder_is_total(figures) -> None:
    assert _fuzzed(figures, "worker", HEADER, WORKER_BODIES, WORKER_DECODERS, examples=110) >= 5_000


def test_client_facing_decoders_are_total(figures) -> None:
    assert _fuzzed(figures, "client", CLIENT_HEADER, CLIENT_BODIES, CLIENT_DECODERS, examples=110) >= 5_000


@pytest.mark.soak
@pytest.mark.timeout(3_600)
def test_worker_facing_decoder_is_total_soak(figures) -> None:
    assert _fuzzed(figures, "worker", HEADER, WORKER_BODIES, WORKER_DECODERS, examples=2_000) >= 100_000


@pytest.mark.soak
@pytest.mark.timeout(3_600)
def test_client_facing_decoders_are_total_soak(figures) -> None:
    assert _fuzzed(figures, "client", CLIENT_HEADER, CLIENT_BODIES, CLIENT_DECODERS, examples=2_000) >= 100_000


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        ([HEADER, b"\x91\xa2\xf7\xf7"], "utf8"),
        ([HEADER, b"\x96" + b"".join(_enc(x) for x in ["outcome", "r", "s", 1, "e"]) + b"\x81\xa1k" + b"\x91" * 5000 + b"\xc0"],
         "too_deep"),
        ([HEADER, b"\xc1"], "undecodable"),
        ([b"x", b"y"], "header"),
        ([HEADER], "frames"),
    ],
)
def test_the_frames_that_killed_the_daemon_are_refused_by_reason(frames: list[bytes], reason: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        from_frames(frames)
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\x81\xa2op\xa2\xf7\xf7", "utf8"),
        (b"\x82\xa2op\xa6status\xa6run_id\xa2\xf7\xf7", "utf8"),
        (b"\x82\xa2op\xa6submit\xa8manifest\x81\xa1k" + b"\x91" * 5000 + b"\xc0", None),
        (b"\x82\xa2op\xa6submit\xa6inputs\x81\xa1k" + b"\x91" * 5000 + b"\xc0", "too_deep"),
    ],
)
def test_a_client_request_that_killed_the_daemon_is_refused(body: bytes, reason: str | None) -> None:
    for decode in (request_from_frames, client_from_frames):
        try:
            decode([CLIENT_HEADER, body])
        except ProtocolError as exc:
            assert reason is None or exc.reason == reason
        else:  # a Submit's manifest stays encoded for the daemon: refused when it decodes it
            assert reason is None and decode is request_from_frames


def test_a_submitted_document_with_invalid_utf8_is_a_manifest_error() -> None:
    from ontoflow.protocols.errors import ManifestError

    with pytest.raises(ManifestError, match="manifest: holds a string that is not valid UTF-8"):
        decode_submitted_document(b"\x81\xa5start\xa2\xf7\xf7")
    with pytest.raises(ManifestError, match="nested too deeply"):
        decode_submitted_document(b"\x81\xa1k" + b"\x91" * 5000 + b"\xc0")
    with pytest.raises(ManifestError, match="expected an object"):
        decode_submitted_document(b"\x91\x01")
    assert decode_submitted_document(_enc({"start": "m"})) == {"start": "m"}
