"""A run's trace is typed on the wire: the daemon sends its engine's TraceEntry records, a client
decodes each as a typed map (a wrong type is refused; a field a newer daemon adds is dropped)."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.actors.orchestrator.engine import TraceEntry
from ontoflow.protocols.client import RunStatus, client_from_frames, client_to_frames
from ontoflow.protocols.errors import ProtocolError

ENTRY = TraceEntry(step_id="s1", node="main", block="load", capability="t.cap", event="success", action="JUMP:next",
                   attempt=1, duration_ms=1.5, retries=0, reason=None, error=None, prerequisite_of=None,
                   started_ms=10, ended_ms=12)


def test_a_trace_entry_crosses_the_wire_as_a_typed_record() -> None:
    frames = client_to_frames(RunStatus(run_id="r", status="completed", trace=[ENTRY]))
    decoded = client_from_frames(list(frames))
    assert isinstance(decoded, RunStatus)
    assert decoded.trace[0] == msgspec.to_builtins(ENTRY)
    assert decoded.trace[0]["block"] == "load" and decoded.trace[0]["duration_ms"] == 1.5


def test_a_record_of_the_wrong_type_is_refused_and_an_unknown_field_dropped() -> None:
    wrong = msgspec.msgpack.encode({"op": "run_status", "run_id": "r", "status": "completed",
                                    "trace": [{"block": 3}]})
    header, _ = client_to_frames(RunStatus(run_id="r", status="completed"))
    with pytest.raises(ProtocolError):
        client_from_frames([header, wrong])
    newer = msgspec.msgpack.encode({"op": "run_status", "run_id": "r", "status": "completed",
                                    "trace": [{"block": "b", "new_field": [1, 2]}]})
    assert client_from_frames([header, newer]).trace == [{"block": "b"}]
