"""A capability's ``requires`` run first, once per run, and their failure is routable."""

from __future__ import annotations

from ontoflow.actors.orchestrator.engine import RunEnded
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, dispatches, node, schema

CAPS = [
    cap("x.pipes", requires=["x.materials"], outputs=["k.pipes"]),
    cap("x.materials", requires=["x.units"], outputs=["k.materials"]),
    cap("x.units"),
    cap("x.report"),
]


def _workflow():
    return compile_nodes({"main": node("p1", {
        "p1": block("x.pipes", ("success", "JUMP:p2"), ("prerequisite_failed", "JUMP:report")),
        "p2": block("x.pipes", ("success", "JUMP:report"), ("prerequisite_failed", "JUMP:report")),
        "report": block("x.report"),
    })}, CAPS)


def test_prerequisites_run_first_in_dependency_order_and_only_once() -> None:
    run = Driver(_workflow())
    (sent,) = run.submit()
    assert sent.capability == "x.units"
    assert run.state.pending is not None and run.state.pending.prerequisite_of == "x.pipes"
    (sent,) = run.finish()
    assert sent.capability == "x.materials"
    (sent,) = run.finish(outputs={"k.materials": ["steel"]})
    assert (sent.capability, sent.context.system.block) == ("x.pipes", "p1")
    (sent,) = run.finish()
    assert (sent.capability, sent.context.system.block) == ("x.pipes", "p2")  # no prerequisite again
    run.finish()
    run.finish()
    assert [(t.capability, t.prerequisite_of, t.action) for t in run.state.trace] == [
        ("x.units", "x.pipes", None),
        ("x.materials", "x.pipes", None),
        ("x.pipes", None, "JUMP:p2"),
        ("x.pipes", None, "JUMP:report"),
        ("x.report", None, None),
    ]
    assert run.state.context == {"k.materials": ["steel"]}
    assert run.state.succeeded == ["x.units", "x.materials", "x.pipes", "x.report"]
    assert run.state.status == "completed"


def test_a_failed_prerequisite_ends_the_block_step_with_prerequisite_failed_and_is_not_rerun() -> None:
    run = Driver(_workflow())
    run.submit()
    run.finish()  # x.units
    (sent,) = run.finish("failure", error="boom", reason="error")  # x.materials
    assert sent.capability == "x.report"  # p1 routed prerequisite_failed -> report
    entry = run.state.trace[-1]
    assert (entry.block, entry.capability, entry.event, entry.action) == ("p1", "x.pipes", "prerequisite_failed", "JUMP:report")
    assert entry.error == "prerequisite 'x.materials' of 'x.pipes' ended with 'failure'"
    assert run.state.failed_prereqs == {"x.materials": "failure"}
    assert run.state.context["ontoflow.last_failure"]["event"] == "prerequisite_failed"


def test_a_prerequisite_that_failed_once_is_not_attempted_again() -> None:
    wf = compile_nodes({"main": node("p1", {
        "p1": block("x.pipes", ("prerequisite_failed", "JUMP:p2")),
        "p2": block("x.pipes", ("prerequisite_failed", "JUMP:report")),
        "report": block("x.report"),
    })}, CAPS)
    run = Driver(wf)
    run.submit()
    (sent,) = run.finish("failure")  # x.units fails
    # p1 ends prerequisite_failed, jumps to p2, which also ends at once: x.units is not re-run.
    assert sent.capability == "x.report"
    assert [(t.block, t.capability, t.event) for t in run.state.trace] == [
        ("p1", "x.units", "failure"),
        ("p1", "x.pipes", "prerequisite_failed"),
        ("p2", "x.pipes", "prerequisite_failed"),
    ]


def test_a_prerequisite_missing_a_required_input_counts_as_failed() -> None:
    caps = [cap("x.a", requires=["x.b"]), cap("x.b", input_schema=schema("k.need", required=("k.need",)))]
    # Block params are the block's own capability's: they do not feed its prerequisites.
    run = Driver(compile_nodes({"main": node("a", {"a": block("x.a", params={"k.need": 1})})}, caps))
    (ended,) = run.submit()
    assert isinstance(ended, RunEnded) and ended.status == "failed"
    assert [(t.capability, t.event) for t in run.state.trace] == [("x.b", "invalid"), ("x.a", "prerequisite_failed")]
    assert run.state.failed_prereqs == {"x.b": "invalid"}


def test_a_prerequisite_already_run_as_a_block_is_skipped() -> None:
    wf = compile_nodes({"main": node("u", {
        "u": block("x.units", ("success", "JUMP:m")),
        "m": block("x.materials"),
    })}, CAPS)
    run = Driver(wf)
    run.submit()
    assert [d.capability for d in dispatches(run.finish())] == ["x.materials"]
