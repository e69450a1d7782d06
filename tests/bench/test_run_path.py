"""bench.run_path's recorder counts our functions and the calls between our files, and nothing
while it is off (the full measurement starts processes: ``python -m bench.run_path``)."""

from __future__ import annotations

import sys

from bench.run_path import _counts, _Recorder
from ontoflow.actors.orchestrator.engine import RunCancelled
from tests.actors.engine.helpers import Driver, block, cap, compile_nodes, node

ADVANCE = ("actors/orchestrator/engine/_advance.py", "advance")
ADMIT = ("actors/orchestrator/engine/_step_end.py", "admit")


def _traced(recorder: _Recorder) -> None:
    driver = Driver(compile_nodes({"main": node("a", {"a": block("x.a")})}, [cap("x.a")]))
    sys.setprofile(recorder.profile)
    try:
        driver.submit()
        driver.finish()
        driver.feed(RunCancelled(reason="too late", now_ms=10_000))  # the run ended: ``admit`` turns it away
    finally:
        sys.setprofile(None)


def test_a_run_through_the_engine_is_recorded_with_its_calls_between_files() -> None:
    recorder = _Recorder(trigger=None)
    recorder.on = True
    _traced(recorder)
    assert ADVANCE in recorder.functions and ADMIT in recorder.functions
    # The late fact through the gate; a running run's RunSubmitted and StepFinished are admitted
    # by ``advance`` itself (perf15d, perf16d: what ``admit`` says of them, without the call).
    assert recorder.edges[(ADVANCE, ADMIT)] == 1
    assert all(not name.startswith("<") for _, name in recorder.functions)  # no comprehensions, no modules
    assert all(file.startswith(("actors/", "protocols/", "runtime/", "ontoflow/")) for file, _ in recorder.functions)
    counts = _counts([{"functions": recorder.functions, "edges": recorder.edges, "calls": recorder.calls}])
    assert counts["files"] >= 3 and counts["cross_file_edges"] >= 1
    assert counts["orchestrator_cross_calls"] >= 2  # advance -> admit, twice, both in actors/orchestrator/


def test_nothing_is_recorded_while_off_and_a_trigger_turns_it_on() -> None:
    off = _Recorder(trigger=None)
    _traced(off)
    assert off.functions == set() and off.calls == 0
    triggered = _Recorder(trigger="admit")
    _traced(triggered)
    assert triggered.on and ADMIT in triggered.functions


def _qualnames() -> set[str]:
    """Every function's qualified name in our source folders (as ``co_qualname`` spells it)."""
    import ast
    from pathlib import Path

    from bench.run_path import ROOT

    names: set[str] = set()

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(prefix + child.name)
                walk(child, f"{prefix}{child.name}.<locals>.")

    for folder in ("protocols", "runtime", "actors", "ontoflow"):
        for path in (ROOT / folder).rglob("*.py"):
            walk(ast.parse(path.read_text()), "")
    return names


def test_every_background_and_once_name_is_a_function_of_ours() -> None:
    # A renamed timer loop left out of BACKGROUND is counted as the run's path (it happened:
    # the kernel's ``BatchActor.run_timer`` replaced ``SocketActor._timer``).
    from bench.run_path import BACKGROUND, ONCE

    missing = (BACKGROUND | ONCE) - _qualnames()
    assert not missing, f"bench.run_path names functions that no longer exist: {sorted(missing)}"
