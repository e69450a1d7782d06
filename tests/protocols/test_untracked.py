"""Wire messages and step contexts are pure data the cyclic collector need not track.

``Message`` and ``_ClientMessage`` (so every wire and client message) and the parts of a step
context (``SystemMetadata``, ``BlockContract``, ``Segment``) are declared ``gc=False``: a run
makes several (Submit, Invoke, Outcome, their contexts), and a tracked object costs an
allocation in the collector's lists and a traversal at each collection. None can take part in
a reference cycle: they are frozen, and what they hold is decoded data (a tree) or values the
sender built before them (a capability's outputs, checked encodable, so acyclic): nothing in
them can refer back to the message holding it. ``StepContext`` itself stays tracked: its dicts
and list are handed to a capability's code, which may put in them what refers back to it.
"""

from __future__ import annotations

import gc
import weakref

import msgspec

from ontoflow.protocols.client import RunStatus, Submit
from ontoflow.protocols.context import BlockContract, Segment, StepContext, SystemMetadata
from ontoflow.protocols.messages import Batch, Invoke, Outcome, WireMessage


def _context() -> StepContext:
    return StepContext(payload=[Segment("s.1", "CODE_OUTPUT", "text", "b")],
                       contract=BlockContract("main", "b", "x.a", "do it"), inherited={"k": [1, 2]},
                       artifact={"a.py": "print()"}, system=SystemMetadata(run_id="r", step_id="s"))


def test_messages_and_contexts_are_not_tracked_by_the_collector() -> None:
    context = _context()
    invoke = Invoke(run_id="r", step_id="s", attempt=1, capability="x.a", inputs={"k": [1]}, context=context)
    outcome = Outcome(run_id="r", step_id="s", attempt=1, event="success", outputs={"x.a.out": {"v": [1]}},
                      segments=[Segment("s.2", "CODE_OUTPUT", "t")])
    submit = Submit(manifest={"name": "m", "nodes": {}}, inputs={"k": {"nested": [1]}})
    status = RunStatus(run_id="r", status="completed", context={"k": [1]})
    records = [context.contract, context.system, *context.payload, invoke, outcome, submit, status]
    assert [type(r).__name__ for r in records if gc.is_tracked(r)] == []
    # What they hold is still the collector's: a container in a message is tracked on its own.
    assert gc.is_tracked(invoke.inputs) and gc.is_tracked(outcome.outputs) and gc.is_tracked(context.inherited)


def test_decoded_messages_are_not_tracked_either() -> None:
    batch = Batch([Invoke(run_id="r", step_id="s", attempt=1, capability="x.a", inputs={"k": [1]}, context=_context()),
                   Outcome(run_id="r", step_id="s", attempt=1, event="success", outputs={"o": [1]})])
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(batch), type=WireMessage | Batch)
    assert type(decoded) is Batch and not gc.is_tracked(decoded)
    invoke, outcome = decoded.messages
    assert not gc.is_tracked(invoke) and not gc.is_tracked(outcome) and not gc.is_tracked(invoke.context.system)
    assert invoke == batch.messages[0] and outcome == batch.messages[1]


class _Marker:
    """Something a capability keeps in its step's context (weakly referenced by the test)."""


def test_a_cycle_a_capability_makes_through_its_context_is_collected() -> None:
    # execute() doing ``context.inherited["error"] = exc`` closes a cycle: the context, its dict,
    # the exception, its traceback, the frame holding the context. Untracked, it leaked.
    context = _context()
    marker = _Marker()
    context.inherited["marker"] = marker
    context.inherited["itself"] = context
    kept = weakref.ref(marker)
    del context, marker
    gc.collect()
    assert kept() is None
