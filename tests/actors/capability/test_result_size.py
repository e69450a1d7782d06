"""A step's answer must fit in one message: outputs and segments too big end the step in an
``invalid_result`` failure at once (before: the receiving socket dropped the worker's connection
and the step hung until its deadline, 22 s for a one-block manifest)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.context import Segment
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES
from tests.actors.capability._support import make_request
from tests.actors.capability.test_invoke import scripted

pytestmark = pytest.mark.anyio

BIG = "x" * (DEFAULT_MAX_MESSAGE_BYTES + 1)


def test_the_default_leaves_room_for_the_rest_of_the_outcome() -> None:
    assert 0 < Capability.max_result_bytes < DEFAULT_MAX_MESSAGE_BYTES


@pytest.mark.parametrize(
    "result",
    [{"customer.email": BIG}, Result(segments=[Segment(id="a", type="CODE_OUTPUT", content=BIG)]),
     Result(outputs={"count": BIG[: DEFAULT_MAX_MESSAGE_BYTES // 2]},
            segments=[Segment(id="a", type="CODE_OUTPUT", content=BIG[: DEFAULT_MAX_MESSAGE_BYTES // 2])])],
    ids=["outputs", "segments", "both together"],
)
async def test_an_answer_bigger_than_a_message_fails_the_step(result: object) -> None:
    cap, _ = scripted([result], retry=RetryPolicy(max_retries=0))
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason) == ("failure", "invalid_result")
    assert outcome.error is not None and "bytes encoded, over the" in outcome.error and "xxx" not in outcome.error
    assert outcome.outputs == {} and outcome.segments == []


async def test_a_host_may_set_a_lower_limit_and_an_answer_under_it_passes() -> None:
    cap, _ = scripted([{"customer.email": "y" * 200}, {"customer.email": "y" * 10}])
    cap.max_result_bytes = 100
    assert (await cap.invoke(make_request())).reason == "invalid_result"
    small = await cap.invoke(make_request())
    assert (small.event, small.outputs) == ("success", {"customer.email": "y" * 10})


_CAPS = '''
from ontoflow import Capability, CapabilityMetadata

class Huge(Capability):
    # No attempt budget: on a loaded machine, making and measuring 70 MiB could outlast the
    # default 30 s, and the step would end as a timeout, not the failure this test is about.
    metadata = CapabilityMetadata(id="demo.huge", outputs=["demo.out"], timeout_ms=None)

    async def execute(self, inputs, context):
        return {"demo.out": "x" * (70 * 1024 * 1024)}
'''
_MANIFEST = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.huge"}}}}}


def test_a_real_worker_answers_a_too_big_result_as_a_failure(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(_CAPS)
    (tmp_path / "m.json").write_bytes(msgspec.json.encode(_MANIFEST))
    ran = subprocess.run(
        [sys.executable, "-m", "ontoflow", "run", "m.json", "-c", "caps.py", "--no-builtins", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
    )
    (step,) = msgspec.json.decode(ran.stdout)["trace"]
    assert (step["event"], step["reason"]) == ("failure", "invalid_result"), step


def test_a_segment_the_orchestrator_could_not_decode_fails_the_step_at_once() -> None:
    from ontoflow import CapabilityMetadata, run_manifest

    class BadSegment(Capability):
        metadata = CapabilityMetadata(id="demo.segment", timeout_ms=60_000)

        async def execute(self, inputs: dict, context: object) -> Result:
            return Result(segments=[Segment(id=1, type="t", content="c")])  # type: ignore[arg-type]

    doc = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.segment"}}}}}
    (step,) = run_manifest(doc, [BadSegment]).trace  # before: a timeout, after the step's whole budget
    assert (step.event, step.reason) == ("failure", "invalid_result")


def test_a_worker_host_bounds_answers_by_its_own_message_limit() -> None:
    # review12: the bound was the default limit whatever the host's --max-message-bytes: a
    # raised limit refused answers it could carry, a lowered one sent answers it dropped.
    from ontoflow.actors.capability import result_bytes_for
    from ontoflow.actors.worker import WorkerHost

    class OwnBound(Capability):
        metadata = msgspec.structs.replace(scripted([None])[0].metadata, id="test.own_bound")  # one id, one capability
        max_result_bytes = 1234

        async def execute(self, inputs, context):
            return None

    raised, lowered = scripted([None])[0], scripted([None])[0]
    own = OwnBound()
    WorkerHost([raised, own], address="inproc://unused", max_message_bytes=256 << 20)
    WorkerHost([lowered], address="inproc://unused", max_message_bytes=1 << 20)
    assert raised.max_result_bytes == result_bytes_for(256 << 20) > Capability.max_result_bytes
    assert lowered.max_result_bytes == result_bytes_for(1 << 20) < 1 << 20
    assert own.max_result_bytes == 1234  # a class's own bound stays

    class AboveTheLimit(OwnBound):
        max_result_bytes = 1 << 40  # more than any message carries: its answer was dropped, the step hung

    above = AboveTheLimit()
    WorkerHost([above], address="inproc://unused", max_message_bytes=1 << 20)
    assert above.max_result_bytes == result_bytes_for(1 << 20)
