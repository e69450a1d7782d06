"""What one answer may bring into a run is bounded in count too (red19c, session 19).

``--max-value-bytes`` bounded each output value, but not how many outputs or segments an
Outcome brings, nor a segment's size. A worker answering its own step with a 64 MiB Outcome of
empty segments brought 13 million of them, each copied into the run's payload (gigabytes of
daemon memory, kept while the run is), and a 60 MB segment went into every later Invoke of the
run. Now an answer with more than ``MAX_OUTCOME_ITEMS`` outputs or segments, or a segment over
``--max-value-bytes``, ends its step ``failure`` (reason ``output_too_large``), as an output over
the limit does; the error says which bound, never a value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.orchestrator._step_payload import MAX_OUTCOME_ITEMS
from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted
from ontoflow.protocols.context import Segment
from ontoflow.protocols.messages import PROTOCOL_VERSION, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_capabilities import RolesStep, manifest
from tests.integration.roles_helpers import RawPeer

pytestmark = pytest.mark.anyio


def _segments(count: int, content: str = "") -> list[Segment]:
    return [Segment(id="x", type="text", content=content, block="b") for _ in range(count)]


@pytest.mark.parametrize(("segments", "outputs", "error"), [
    (_segments(MAX_OUTCOME_ITEMS + 1), {}, f"the answer has {MAX_OUTCOME_ITEMS + 1} segments, over the limit"),
    (_segments(1, "s" * (2 << 20)), {}, f"segment 1 is {2 << 20} bytes, over the limit of {1 << 20} bytes"),
    ([], {f"t.k{i}": i for i in range(MAX_OUTCOME_ITEMS + 1)}, f"the answer has {MAX_OUTCOME_ITEMS + 1} outputs, over"),
    (_segments(3, "fine"), {"t.out": "real"}, None),
], ids=["too many segments", "a segment too big", "too many outputs", "within the bounds"])
async def test_an_answer_bringing_too_much_fails_its_step(tmp_path: Path, segments: list[Segment], outputs: dict,
                                                          error: str | None) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, None, tmp_path / "d.log", "--liveness", "100")  # --max-value-bytes: 1 MiB
    worker = None
    try:
        await daemon.ready()
        worker = RawPeer(address, identity=b"w1")
        await worker.send(Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[RolesStep.metadata]))
        welcome = await worker.next_wire(Welcome)
        async with open_client(address) as dealer:
            accepted = await request(dealer, Submit(manifest=manifest()))
            assert isinstance(accepted, SubmitAccepted), accepted
            invoke = await worker.next_wire(Invoke)
            await worker.send(Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt,
                                      event="success", outputs=outputs, segments=segments, session=welcome.session))
            ended = await request(dealer, Status(run_id=accepted.run_id, wait=True), timeout_s=60)
    finally:
        if worker is not None:
            worker.close()
        daemon.close()
    assert isinstance(ended, RunStatus), ended
    [step] = ended.trace
    if error is None:
        assert ended.status == "completed" and step["event"] == "success" and ended.context == {"t.out": "real"}
    else:
        assert step["event"] == "failure" and step["reason"] == "output_too_large", step
        assert error in step["error"] and "sss" not in repr(ended)
