"""What a step answered is what leaves, even when its outputs are an object the capability keeps
and changes afterwards (a history list it returns, a cache): the steps a runner runs back to
back are answered together, and before, their Outcomes were only encoded when the group was
handed over, after the later steps ran. A later step that put something unencodable in the
shared object crashed the whole worker process (``TypeError`` out of the answer book, every
step in it lost); one that added to it sent the earlier step's answer with the later steps'
data in it."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Batch, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class History(Capability):
    """Returns the list it keeps; ``add`` appends to it first (``object``: something unencodable)."""

    metadata = CapabilityMetadata(id="test.history", idempotent=False)
    kept: list[Any] = []

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        add = inputs.get("add")
        if add is not None:
            History.kept.append(object() if add == "object" else add)
        return {"history": History.kept}


def _invoke(step: str, add: Any = None) -> Invoke:
    return Invoke(run_id="r1", step_id=step, attempt=1, capability="test.history", inputs={} if add is None else {"add": add})


async def _serve(batches: list[list[Invoke]], expect: int) -> dict[str, Outcome]:
    """Welcome a host, send each of ``batches`` as one body (run back to back), collect ``expect`` answers."""
    History.kept = []
    context = shared_context()
    address = f"inproc://frozen-{next(_names)}"
    outcomes: dict[str, Outcome] = {}
    async with open_router(address, context=context) as router, anyio.create_task_group() as tg:
        host = WorkerHost([History()], address=address, context=context, worker_id="w1")
        tg.start_soon(host.run)
        with anyio.fail_after(15):
            while len(outcomes) < expect:
                for peer, message in await router.recv_batch():
                    if isinstance(message, Ready):
                        router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=50, session="tok"))
                        for batch in batches:
                            router.send(peer, Batch(batch))
                    elif isinstance(message, Outcome):
                        outcomes[message.step_id] = message
        tg.cancel_scope.cancel()
    return outcomes


async def test_a_later_step_making_a_shared_output_unencodable_does_not_take_the_worker_down() -> None:
    outcomes = await _serve([[_invoke("s1"), _invoke("s2", "object"), _invoke("s3")], [_invoke("s4", 7)]], 4)
    # s1 answered its list as it was (empty); s2 and s3 returned it unencodable: they fail, alone.
    assert (outcomes["s1"].event, outcomes["s1"].outputs) == ("success", {"history": []})
    assert [(outcomes[s].event, outcomes[s].reason) for s in ("s2", "s3")] == [("failure", "invalid_result")] * 2
    assert outcomes["s4"].event == "failure"  # still serving: the next batch is answered too


async def test_the_answer_of_a_step_run_back_to_back_is_what_it_returned_not_what_came_later() -> None:
    outcomes = await _serve([[_invoke("s1", 1), _invoke("s2", 2), _invoke("s3", 3)]], 3)
    assert [outcomes[s].outputs["history"] for s in ("s1", "s2", "s3")] == [[1], [1, 2], [1, 2, 3]]


def test_an_answer_that_no_longer_encodes_is_sent_as_the_steps_failure_not_raised() -> None:
    # What a thread of the capability changes while the step is answered: the book must not raise.
    from ontoflow.actors.worker._answer_book import AnswerBook, _outcome_decoder

    book = AnswerBook()
    book.set_token("tok")
    broken = Outcome(run_id="r1", step_id="s1", attempt=1, event="success", outputs={"x": object()})
    for body in (book.sent(broken), *book.sent_many([broken])):
        sent = _outcome_decoder.decode(body)
        assert (sent.step_id, sent.event, sent.reason, sent.session) == ("s1", "failure", "invalid_result", "tok")
    book.keep(broken)
    assert book.keys()[0] == ("r1", "s1", 1)
