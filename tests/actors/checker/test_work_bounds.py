"""What a document may make the checker do grows with the document, not with how its CALLs
multiply nor with keys no step reads; and a capped report shows the first findings only."""

from __future__ import annotations

from ontoflow.actors.checker import analyse_document, capped_problems, render_text, state_budget
from ontoflow.protocols.errors import Problem
from tests.actors.checker.helpers import block, check, kinds, meta, node
from tests.actors.checker.test_hostile_graphs import _diamonds, _jump_chain

PLAIN = meta("t.plain")


def test_a_small_document_whose_calls_multiply_gets_a_small_budget() -> None:
    # 80 blocks, 2^14 caller chains: explored to 25,000 states (~2 s of a daemon's loop) before
    # its refusal; now to 2,000 and one a block.
    report = check(_diamonds(14), PLAIN)
    [limit] = kinds(report)["analysis-limit"]
    assert report.states == state_budget(80) == 2_080
    assert "2,080 control states" in limit.message and not report.ok


def test_the_largest_plain_manifest_is_still_proved() -> None:
    from ontoflow.protocols.manifest import MAX_BLOCKS

    report = check(_jump_chain(MAX_BLOCKS), PLAIN)
    assert report.ok and report.states == MAX_BLOCKS and "analysis-limit" not in kinds(report)


def test_keys_no_capability_reads_are_not_carried_through_every_state() -> None:
    # 20,000 declared inputs no step reads were copied into each of 2,045 states: 17 s and
    # gigabytes for a document of 150 KB (the same doc with more states was killed for memory).
    doc = _diamonds(6)
    doc["inputs"] = {f"k.in{i}": {} for i in range(5_000)} | {"k.x": {}}
    for n in doc["nodes"].values():
        n["static_memory"] |= {f"k.m{i}": 1 for i in range(500)}
    consumer = meta("t.plain", required=["k.x"])
    analysis = analyse_document(doc, {"t.plain": consumer})
    ex = analysis.exploration
    assert ex is not None and ex.values
    assert max(len(keys) for keys, _ in ex.values.values()) <= 2  # k.x and the failure key: what is read
    assert all("k.x" in keys for keys, _ in ex.values.values())  # what is read still holds everywhere
    assert analysis.report.ok or "missing-input" not in kinds(analysis.report)


def test_memory_a_step_reads_still_counts_when_the_rest_is_dropped() -> None:
    consumer = meta("t.consume", required=["k.x"], props={"k.x": {"type": "integer"}})
    doc = {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.consume", ("success", "CALL:sub")), "b": block("t.consume", ("success", "RETURN"))},
                     static_memory={"k.x": "not a number", **{f"k.m{i}": 1 for i in range(100)}}),
        "sub": node("s", {"s": block("t.consume", ("success", "RETURN"))}),
    }}
    report = check(doc, consumer)
    assert {f.path for f in kinds(report)["type-mismatch"]} == {"nodes.main.static_memory.k.x"}
    assert "missing-input" not in kinds(report)


def test_a_capped_report_shows_the_first_findings_and_counts_the_rest() -> None:
    doc = _jump_chain(300)
    for b in doc["nodes"]["main"]["blocks"].values():
        b["worker"] = "t.consume"
        b["params"] = {"k.x": 5}
    report = check(doc, meta("t.consume", required=["k.x"]))
    assert len(report.errors) == 300
    text = render_text(report, limit=10)
    assert text.count("[type-mismatch]") == 10 and "... and 290 more finding(s)" in text
    assert text.endswith("submitted document: workflow, 300 error(s), 0 warning(s): refused")
    assert render_text(report).count("[type-mismatch]") == 300  # `ontoflow check` prints them all


def test_capped_problems_count_the_rest_and_cut_long_lines() -> None:
    problems = [Problem(path=f"steps[{i}]", message="x" * (5_000 if i == 0 else 5)) for i in range(120)]
    out = capped_problems(problems, 50)
    assert len(out) == 51 and str(out[-1]) == "... and 70 more problem(s)"
    assert len(out[0].message) < 1_100 and "4,000 more characters" in out[0].message
    assert capped_problems(problems[1:3]) == problems[1:3]


def _ways_into_one_loop(ways: int, loop: int) -> dict:
    """A chain of ``ways`` blocks, each failing into another block of one loop of ``loop`` blocks."""
    blocks = {f"c{i}": block("t.plain", ("success", f"JUMP:c{i + 1}" if i + 1 < ways else "RETURN"),
                             ("failure", f"JUMP:r{i % loop}"), ("SIGNAL:FAIL_DEFAULT", "RETURN")) for i in range(ways)}
    blocks |= {f"r{j}": block("t.plain", ("SIGNAL:FAIL_DEFAULT", f"JUMP:r{(j + 1) % loop}"),
                              ("success", f"JUMP:r{(j + 1) % loop}")) for j in range(loop)}
    return {"start": "main", "nodes": {"main": node("c0", blocks)}}


def test_a_loop_entered_many_ways_is_walked_within_a_budget_and_named_briefly(monkeypatch) -> None:
    # Each way into the loop walked the whole loop and named each of its blocks: 2,500 ways into
    # a loop of 2,500 blocks was a 22 s check of 2,500 findings of 2,500 names each.
    import ontoflow.actors.checker._workflow as workflow

    monkeypatch.setattr(workflow, "SEARCH_BUDGET", 3_000)
    report = check(_ways_into_one_loop(300, 300), PLAIN)
    traps = kinds(report)["no-exit"]
    assert len(traps) == 300 and not report.ok  # every way in is still a finding
    named = [f for f in traps if "leads back among" in f.message]
    assert len(named) == 10  # 300 states walked each, 3,000 in all
    assert all(f.message.count(", ") == 19 and f.message.endswith("and 280 more") for f in named)
    assert all("its loop not named" in f.message for f in traps if f not in named)


def test_counterexamples_are_written_within_a_budget_and_once_per_state(monkeypatch) -> None:
    # 4,000 CALLs of one node whose capability declares six events no block routes made 24,000
    # findings of 50 steps each, every one walked anew (1.2 million lines).
    import ontoflow.actors.checker._workflow as workflow

    monkeypatch.setattr(workflow, "STEPS_BUDGET", 2_000)
    chatty = meta("t.plain", events=[f"e{i}" for i in range(5)] + ["success", "failure"])
    doc = {"start": "main", "nodes": {
        "main": node("c0", {f"c{i}": block("t.plain", ("success", "CALL:h")) for i in range(300)}),
        "h": node("h0", {"h0": block("t.plain", ("success", "RETURN"))})}}
    report = check(doc, chatty)
    unrouted = kinds(report)["unrouted-event"]
    assert len(unrouted) == 301 * 6  # every finding stands
    cut = [f for f in unrouted if "counterexample not written" in f.counterexample[0]]
    assert cut and len(cut) < len(unrouted)
    assert sum(len(f.counterexample) for f in unrouted if f not in cut) < 6 * (2_000 + 50 + 2 * 301)


def test_a_capability_of_many_events_stops_the_analysis_at_the_edges_bound(monkeypatch) -> None:
    # The states' budget does not see a state's edges (its capability's events): 2,000 events
    # in a 500-block document took 75 s and 3.5 GB. Here the bound is lowered so the test is small.
    from ontoflow.actors.checker import _explore

    monkeypatch.setattr(_explore, "MAX_EDGES", 5_000)
    followed: list[int] = []
    edges = _explore._edges

    def counted(*args, **kwargs):
        out = edges(*args, **kwargs)
        followed.append(len(out))
        return out

    monkeypatch.setattr(_explore, "_edges", counted)
    many = meta("t.many", events=["success", *(f"e{i}" for i in range(199))])
    blocks = {f"b{i}": block("t.many", ("success", f"JUMP:b{i + 1}")) for i in range(99)}
    blocks["b99"] = block("t.many")
    report = check({"name": "many", "start": "m", "nodes": {"m": node("b0", blocks)}}, many)
    [limit] = kinds(report)["analysis-limit"]
    assert not report.ok and "5,000 events followed" in limit.message
    assert sum(followed) - followed[-1] <= 5_000 < sum(followed)  # stopped at the state that passed it
