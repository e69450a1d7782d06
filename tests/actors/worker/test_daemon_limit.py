"""A worker host bounds its capabilities' answers by its daemon's message size limit too
(``Welcome.max_message_bytes``, ``_session.bound_answers``): an answer the daemon would refuse
ends its step ``failure``, ``invalid_result``, as one over the host's own limit does. The
end-to-end path is ``tests/integration/test_outcome_too_large.py``."""

from __future__ import annotations

from ontoflow.actors.capability import Capability, result_bytes_for
from ontoflow.actors.worker._initialize import hosted
from ontoflow.actors.worker._session import bound_answers
from ontoflow.protocols import CapabilityMetadata

OWN = 1 << 20


class Plain(Capability):
    metadata = CapabilityMetadata(id="test.limit.plain", outputs=["test.out"])

    async def execute(self, inputs, context):
        return {"test.out": 1}


class Small(Plain):
    metadata = CapabilityMetadata(id="test.limit.small", outputs=["test.out"])
    max_result_bytes = 1000  # a class's own bound


class Roomy(Plain):
    metadata = CapabilityMetadata(id="test.limit.roomy", outputs=["test.out"])
    max_result_bytes = 10 * OWN


def test_the_smaller_of_the_two_limits_bounds_each_answer() -> None:
    caps = [Plain(), Small(), Roomy()]
    bound_answers(caps, OWN, 65536)
    assert [c.max_result_bytes for c in caps] == [result_bytes_for(65536), 1000, result_bytes_for(65536)]
    bound_answers(caps, OWN, 4 * OWN)  # a daemon accepting more: the host's own limit still bounds
    assert [c.max_result_bytes for c in caps] == [result_bytes_for(OWN), 1000, result_bytes_for(OWN)]


def test_an_older_daemon_leaves_the_bounds_the_host_set() -> None:
    caps = [Plain(), Small(), Roomy()]
    bound_answers(caps, OWN, 65536)
    bound_answers(caps, OWN, 0)  # a later session's daemon announces no limit
    # Roomy's class bound is above what a message of the host carries: lowered, as hosting does.
    assert [c.max_result_bytes for c in caps] == [result_bytes_for(OWN), 1000, result_bytes_for(OWN)]


def test_a_welcome_without_a_limit_does_not_undo_what_hosting_lowered() -> None:
    caps = [Plain(), Small(), Roomy()]
    hosted(caps, OWN)
    before = [c.max_result_bytes for c in caps]
    bound_answers(caps, OWN, 0)  # an older daemon's Welcome
    assert [c.max_result_bytes for c in caps] == before == [result_bytes_for(OWN), 1000, result_bytes_for(OWN)]
