"""Adversarial workflow graphs: the checker ends, quickly, with a finding instead of a traceback."""

from __future__ import annotations

import pytest

from tests.actors.checker.helpers import block, check, kinds, meta, node

PLAIN = meta("t.plain")


def _call_chain(n: int, **extra: object) -> dict:
    """n nodes, each CALLing the next from its only (so last) block: returns return again."""
    nodes = {f"n{i}": node("a", {"a": block("t.plain", ("success", f"CALL:n{i + 1}" if i < n - 1 else "RETURN"),
                                              ("failure", "RETURN"))}, **extra)
             for i in range(n)}
    return {"start": "n0", "nodes": nodes}


def test_thousands_of_nested_calls_are_refused_with_a_finding_not_a_traceback() -> None:
    # 3,000 nested CALLs was a RecursionError traceback from `ontoflow check` (after 8 s of
    # quadratic work copying caller chains), and so from `run` and a daemon's submit.
    report = check(_call_chain(3000), PLAIN)
    [finding] = kinds(report)["analysis-limit"]
    assert finding.severity == "error" and finding.path == "nodes"
    assert "nest deeper" in finding.message
    assert not report.ok


def test_thousands_of_nested_calls_without_inheritance_are_refused_too() -> None:
    # Without context inheritance the chains stay short, but returning from last blocks nests
    # the analysis of returns as deep as the CALLs.
    report = check(_call_chain(3000, context_inheritance=False), PLAIN)
    assert not report.ok
    assert "analysis-limit" in kinds(report)


def test_a_long_call_chain_under_the_limit_is_proved_without_false_recursion() -> None:
    # The recursion search now finds the call graph's cycles in one linear pass (it searched
    # from every call site: a 2,000-node chain took most of a minute; 250 nested returns stay within the stack).
    report = check(_call_chain(250), PLAIN)
    assert "unbounded-recursion" not in kinds(report)
    assert "analysis-limit" not in kinds(report)
    assert report.ok


def test_recursion_is_still_found_in_a_cycle_deep_in_a_chain() -> None:
    doc = _call_chain(300)
    doc["nodes"]["n299"] = node("a", {"a": block("t.plain", ("success", "CALL:n150"), ("failure", "RETURN"))})
    report = check(doc, PLAIN)
    paths = {f.path for f in kinds(report)["unbounded-recursion"]}
    # Every CALL on the cycle n150 -> ... -> n299 -> n150 can nest without bound; none before it.
    assert "nodes.n299.blocks.a.transitions[0].action" in paths
    assert "nodes.n150.blocks.a.transitions[0].action" in paths
    assert "nodes.n149.blocks.a.transitions[0].action" not in paths
    assert not report.ok


def _jump_chain(n: int) -> dict:
    blocks = {f"b{i}": block("t.plain", ("success", f"JUMP:b{i + 1}" if i < n - 1 else "RETURN"), ("failure", "RETURN"))
              for i in range(n)}
    return {"start": "main", "nodes": {"main": node("b0", blocks)}}


def test_a_manifest_of_more_blocks_than_the_limit_is_refused_before_any_analysis() -> None:
    # 100,000 blocks kept `ontoflow check` (so `run` and a submit) busy for minutes.
    from ontoflow.protocols.manifest import MAX_BLOCKS

    report = check(_jump_chain(MAX_BLOCKS + 1), PLAIN)
    [finding] = report.findings
    assert finding.path == "nodes" and f"{MAX_BLOCKS + 1} blocks" in finding.message
    assert not report.ok and report.states == 0


def test_a_counterexample_shows_at_most_the_last_steps_of_a_long_run() -> None:
    # Each finding on a chain of n blocks had an n-step counterexample: n findings were n**2 lines.
    from ontoflow.actors.checker._paths import MAX_STEPS

    doc = _jump_chain(300)
    consumer = meta("t.consume", required=["k.x"])
    doc["nodes"]["main"]["blocks"]["b299"] = block("t.consume", ("success", "RETURN"), ("failure", "RETURN"))
    [finding] = kinds(check(doc, PLAIN, consumer))["missing-input"]
    assert len(finding.counterexample) == MAX_STEPS + 2  # the note, the steps, the failing start
    assert finding.counterexample[0].startswith("... (earlier steps not shown")
    assert finding.counterexample[-2] == "main.b298 --success--> JUMP:b299"


def test_the_text_report_escapes_control_and_bidi_characters_of_ids() -> None:
    # The id is refused, but other findings name its block raw: an escape sequence in a block id
    # reached the terminal of whoever ran `ontoflow check` (and a U+202E reversed the path).
    from ontoflow.actors.checker import render_text

    sneaky = "a\x1b[2J\u202eb"
    doc = {"start": "main", "nodes": {"main": node(sneaky, {sneaky: block("t.consume", ("success", "RETURN"))})}}
    text = render_text(check(doc, meta("t.consume", required=["k.x"])))
    assert "\x1b" not in text and "\u202e" not in text
    assert "a\\x1b[2J\\u202eb" in text


def test_a_newline_in_an_id_cannot_forge_a_line_of_the_text_report() -> None:
    # Lines were joined before escaping, so a newline in a block id went out raw: the id below
    # printed a line of its own that read as the report's verdict.
    from ontoflow.actors.checker import render_text

    forged = "b\nforged.json: workflow, 0 error(s), 0 warning(s): ok"
    doc = {"start": "main", "nodes": {"main": node(forged, {forged: block("t.consume", ("success", "RETURN"))})}}
    report = check(doc, meta("t.consume", required=["k.x"]))
    text = render_text(report)
    assert not any(line.startswith("forged.json") for line in text.splitlines())
    assert "b\\x0aforged.json" in text
    assert len(text.splitlines()) == len(report.findings) + 1 + sum(
        len(f.counterexample) + 1 for f in report.findings if f.counterexample)


def _diamonds(layers: int) -> dict:
    """Two inheriting nodes a layer, each CALLing both of the next: 2^layers caller chains."""
    nodes = {}
    for i in range(layers):
        for j in (0, 1):
            calls = {"a": block("t.plain", ("success", f"CALL:n{i + 1}_0")),
                     "b": block("t.plain", ("success", f"CALL:n{i + 1}_1")),
                     "c": block("t.plain", ("success", "RETURN"))} if i < layers - 1 else {
                "a": block("t.plain", ("success", "RETURN"))}
            nodes[f"n{i}_{j}"] = node("a", calls, static_memory={f"k.{i}{j}": 1})
    return {"start": "n0_0", "nodes": nodes}


def test_a_document_past_the_state_budget_is_refused_as_unproved_not_passed_with_false_warnings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past the budget the exploration stops: what it did not reach was reported "unreachable"
    # (a warning), the stop itself a warning, and the document passed, unproved (run and a
    # daemon's submit went ahead). Under the old budget of 200,000 states such a document of
    # 120 blocks held a daemon's loop for 17 s and 860 MB.
    import ontoflow.actors.checker._explore as explore

    monkeypatch.setattr(explore, "MAX_STATES", 2_000)
    report = check(_diamonds(12), PLAIN)
    assert not report.ok
    [limit] = kinds(report)["analysis-limit"]
    assert limit.severity == "error" and limit.path == "nodes" and "2000" in limit.message.replace(",", "")
    assert "unreachable" not in kinds(report) and "no-exit" not in kinds(report)


def test_the_state_budget_stays_within_seconds_of_a_daemons_loop() -> None:
    import ontoflow.actors.checker._explore as explore

    assert explore.MAX_STATES <= 25_000  # ~90 us a state (bench.check_bench): a few seconds at worst
    report = check(_diamonds(6), PLAIN)  # well within it: proved, every block reached
    assert report.ok and "unreachable" not in {f.kind for f in report.findings if f.path != "nodes.n0_1"}


def test_counterexample_searches_are_bounded_when_many_keys_are_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    # One search over every state per missing key: 5,000 blocks of 500 capabilities, each
    # missing two keys, held `check` (and a daemon's loop, on submit) for 51 s. Past a budget
    # of searched states the findings stay, their counterexample says it was not searched.
    import ontoflow.actors.checker._workflow as workflow
    from ontoflow.actors.checker._paths import PathFinder

    searches: list[str | None] = []

    class Counting(PathFinder):
        def __init__(self, ex, key=None) -> None:
            searches.append(key)
            super().__init__(ex, key)

    monkeypatch.setattr(workflow, "PathFinder", Counting)
    monkeypatch.setattr(workflow, "SEARCH_BUDGET", 2_000)
    caps = [meta(f"t.c{i}", required=[f"k.{i}a", f"k.{i}b"]) for i in range(100)]
    chain = {f"b{i}": block(f"t.c{i % 100}", ("success", f"JUMP:b{i + 1}" if i < 199 else "RETURN")) for i in range(200)}
    report = check({"start": "main", "nodes": {"main": node("b0", chain)}}, *caps)
    missing = kinds(report)["missing-input"]
    assert len(missing) == 400  # every finding is still there
    keyed = [k for k in searches if k is not None]
    assert len(keyed) == 2_000 // 200  # the budget over the states of each search
    searched = [f for f in missing if "not searched" not in f.counterexample[0]]
    assert len(searched) >= len(keyed)
    assert searched[0].counterexample[-1].endswith("-> invalid")
    unsearched = [f for f in missing if "not searched" in f.counterexample[0]]
    assert unsearched and all(f.severity == "error" for f in unsearched)


def test_a_provided_value_is_checked_against_a_consumer_once_not_at_every_block(monkeypatch: pytest.MonkeyPatch) -> None:
    # A declared input with an enum of 100,000 values was validated value by value at every
    # block consuming it, in every context: 500 blocks made a 0.7 MB document a 34 s check.
    import ontoflow.actors.checker._workflow as workflow

    calls: list[str] = []
    real_declared, real_literal = workflow.declared_contradiction, workflow.literal_problem
    monkeypatch.setattr(workflow, "declared_contradiction", lambda *a: calls.append("declared") or real_declared(*a))
    monkeypatch.setattr(workflow, "literal_problem", lambda *a: calls.append("literal") or real_literal(*a))
    consumer = meta("t.int", props={"k.n": {"type": "integer"}, "k.m": {"type": "integer"}}, required=["k.n"])
    chain = {f"b{i}": block("t.int", ("success", f"JUMP:b{i + 1}" if i < 99 else "RETURN")) for i in range(100)}
    doc = {"start": "main", "inputs": {"k.n": {"enum": [1, "two"]}},
           "nodes": {"main": node("b0", chain, static_memory={"k.m": "three"})}}
    report = check(doc, consumer)
    assert sorted(f.path for f in kinds(report)["type-mismatch"]) == ["inputs.k.n", "nodes.main.static_memory.k.m"]
    assert sorted(calls) == ["declared", "literal"]


def test_returns_are_given_back_per_call_site_not_per_call_site_and_return(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each node CALLs a node from every block and RETURNs from every block: each RETURN was
    # given back to each call site of its node (and so in the no-exit and counterexample
    # passes): 50 nodes of 100 blocks were a 26 s check, in a daemon's loop on submit.
    import ontoflow.actors.checker._explore as explore

    given: list[int] = []
    real = explore._Solver._return
    monkeypatch.setattr(explore._Solver, "_return", lambda self, *a: given.append(1) or real(self, *a))
    meta_ab = meta("t.ab", events=["success", "done"])
    n, per = 12, 40
    nodes = {f"n{i}": node("b0", {f"b{j}": block("t.ab", ("success", f"CALL:n{(i * per + j) * 7 % n}"), ("done", "RETURN"),
                                                   ("SIGNAL:FAIL_DEFAULT", "RETURN")) for j in range(per)})
             for i in range(n)}
    report = check({"start": "n0", "nodes": nodes}, meta_ab)
    sites = n * per
    assert len(given) <= 100 * sites  # was about 440 a site: each RETURN of the callee, again and again
    assert "unbounded-recursion" in kinds(report)


def test_a_long_chain_of_requires_is_looked_up_once_per_block_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every prerequisite's own closure was looked up too: a chain of 1,000 requires cost 8.6 s
    # for a manifest of 10 blocks (a daemon checks every submit against its catalogue).
    import ontoflow.actors.checker._model as model

    looked: list[str] = []
    real = model._closure
    monkeypatch.setattr(model, "_closure", lambda cap_id, catalog: looked.append(cap_id) or real(cap_id, catalog))
    n = 300
    chain = [meta(f"t.{i}", requires=[f"t.{i + 1}"] if i < n - 1 else [], outputs=[f"k.{i}"],
                  required=[f"k.{i + 1}"] if i < n - 1 else []) for i in range(n)]
    blocks = {f"b{j}": block("t.0", ("success", f"JUMP:b{j + 1}" if j < 9 else "RETURN"), ("failure", "RETURN")) for j in range(10)}
    report = check({"start": "main", "nodes": {"main": node("b0", blocks)}}, *chain)
    assert looked == ["t.0"]
    assert "missing-input" not in kinds(report)  # each prerequisite's key comes from the one it requires
