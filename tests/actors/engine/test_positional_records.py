"""The records the engine and the run table make positionally, once per step or per run (msgspec
matches keywords one by one, so positional is cheaper): their fields' order is what those calls
rely on. msgspec does not check types when a Struct is made, so a field inserted in the middle
or two swapped (``reason``/``error``, ``started_ms``/``ended_ms`` share a type) would store
wrong values silently: this pins the order, and a change to it must change the calls too
(``engine/_advance.py`` ``_on_finished``, ``_run_table.py`` ``RunTable.end`` and ``result_of``)."""

from __future__ import annotations

from ontoflow.actors.orchestrator import RunResult
from ontoflow.actors.orchestrator.engine._step_end import TraceEntry


def test_trace_entry_fields_are_in_the_order_the_engine_makes_them() -> None:
    assert TraceEntry.__struct_fields__ == (
        "step_id", "node", "block", "capability", "event", "action", "attempt", "duration_ms",
        "retries", "reason", "error", "prerequisite_of", "started_ms", "ended_ms", "dropped_outputs",
    )


def test_run_result_fields_are_in_the_order_the_run_table_makes_them() -> None:
    assert RunResult.__struct_fields__[:7] == (
        "run_id", "status", "error", "context", "trace", "started_ms", "ended_ms",
    )
