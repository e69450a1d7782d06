"""Every workflow finding: a manifest with the fault and the same manifest without it."""

from __future__ import annotations

from tests.actors.checker.helpers import block, check, kinds, meta, node

PRODUCE = meta("t.produce", outputs=["k.x"])
CONSUME = meta("t.consume", required=["k.x"])
PLAIN = meta("t.plain")


def _consume_after(failure_action: str) -> dict:
    return {"start": "main", "nodes": {"main": node("make", {
        "make": block("t.produce", ("success", "JUMP:use"), ("failure", failure_action)),
        "use": block("t.consume"),
        "stop": block("t.plain"),
    })}}


def test_a_key_missing_on_one_path_is_an_error_with_that_path() -> None:
    report = check(_consume_after("JUMP:use"), PRODUCE, CONSUME, PLAIN)
    [finding] = kinds(report)["missing-input"]
    assert finding.severity == "error" and finding.path == "nodes.main.blocks.use.worker"
    assert "'k.x'" in finding.message
    # The counterexample is the failure path: the success path provides the key.
    assert finding.counterexample[0] == "main.make --failure--> JUMP:use"
    assert finding.counterexample[-1].startswith("main.use: t.consume starts without 'k.x'")
    assert not report.ok


def test_a_key_provided_on_every_path_is_fine() -> None:
    report = check(_consume_after("JUMP:stop"), PRODUCE, CONSUME, PLAIN)
    assert "missing-input" not in kinds(report)
    assert report.ok


def test_declared_inputs_params_and_schema_defaults_provide_keys() -> None:
    doc = _consume_after("JUMP:use")
    assert check({**doc, "inputs": {"k.x": {"type": "string"}}}, PRODUCE, CONSUME, PLAIN).ok
    doc["nodes"]["main"]["blocks"]["use"]["params"] = {"k.x": "given"}
    assert check(doc, PRODUCE, CONSUME, PLAIN).ok
    with_default = meta("t.consume", required=["k.x"], props={"k.x": {"type": "string", "default": "d"}})
    assert check(_consume_after("JUMP:use"), PRODUCE, with_default, PLAIN).ok


def _called(inheritance: bool) -> dict:
    return {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.plain", ("success", "CALL:sub")), "b": block("t.plain")},
                     static_memory={"k.x": "from main"}),
        "sub": node("s", {"s": block("t.consume", ("success", "RETURN"))}, context_inheritance=inheritance),
    }}


def test_static_memory_reaches_a_callee_only_through_inheritance() -> None:
    assert check(_called(True), PLAIN, CONSUME).ok
    report = check(_called(False), PLAIN, CONSUME)
    [finding] = kinds(report)["missing-input"]
    assert finding.path == "nodes.sub.blocks.s.worker"
    assert finding.counterexample[0] == "main.a --success--> CALL:sub (push main.b)"


def test_a_prerequisite_missing_a_key_is_reported_for_it() -> None:
    needy = meta("t.needy", required=["k.y"])
    user = meta("t.user", requires=["t.needy"])
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block("t.user")})}}
    [finding] = kinds(check(doc, needy, user))["missing-input"]
    assert "t.needy (a prerequisite of t.user)" in finding.message
    doc["nodes"]["main"]["static_memory"] = {"k.y": "here"}
    assert check(doc, needy, user).ok


def test_a_literal_of_the_wrong_type_or_outside_the_enum_is_an_error() -> None:
    typed = meta("t.typed", props={"k.n": {"type": "integer"}, "k.lang": {"enum": ["en", "pt_BR"]}})
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block("t.typed", params={"k.n": "five"})},
                                                   static_memory={"k.lang": "fr"})}}
    found = {f.path for f in kinds(check(doc, typed))["type-mismatch"]}
    assert found == {"nodes.main.blocks.a.params.k.n", "nodes.main.static_memory.k.lang"}
    doc["nodes"]["main"]["blocks"]["a"]["params"] = {"k.n": 5}
    doc["nodes"]["main"]["static_memory"] = {"k.lang": "en"}
    assert check(doc, typed).ok


def test_a_declared_input_whose_type_or_enum_contradicts_the_consumer_is_an_error() -> None:
    typed = meta("t.typed", required=["k.lang"], props={"k.lang": {"type": "string", "enum": ["en", "pt_BR"]}})
    doc = {"start": "main", "inputs": {"k.lang": {"type": "integer"}}, "nodes": {"main": node("a", {"a": block("t.typed")})}}
    [finding] = kinds(check(doc, typed))["type-mismatch"]
    assert finding.path == "inputs.k.lang" and "integer" in finding.message
    doc["inputs"] = {"k.lang": {"type": "string", "enum": ["en", "fr"]}}
    [finding] = kinds(check(doc, typed))["type-mismatch"]
    assert "'fr'" in finding.message
    doc["inputs"] = {"k.lang": {"type": "string", "enum": ["en"]}}
    assert check(doc, typed).ok


def test_a_prerequisite_that_can_never_succeed_is_an_error() -> None:
    doomed = meta("t.pre", events=["failure", "empty_but_failed"])
    user = meta("t.user", requires=["t.pre"])
    doc = {"start": "main", "nodes": {"main": node("a", {"a": block("t.user")})}}
    # "empty_but_failed" is a declared, non-reserved event: it counts as success.
    assert "prerequisite" not in kinds(check(doc, doomed, user))
    never = meta("t.pre", events=["failure"])
    [finding] = kinds(check(doc, never, user))["prerequisite"]
    assert finding.path == "nodes.main.blocks.a.worker" and "never succeed" in finding.message


def test_a_declared_event_routed_by_nothing_is_a_warning() -> None:
    lister = meta("t.list", events=["success", "empty", "failure"])
    doc = {"start": "main", "nodes": {"main": node("a", {
        "a": block("t.list", ("success", "JUMP:b"), ("failure", "JUMP:b")), "b": block("t.plain")})}}
    report = check(doc, lister, PLAIN)
    [finding] = kinds(report)["unrouted-event"]
    assert finding.severity == "warning" and "'empty'" in finding.message
    assert finding.counterexample == ["main.a --empty--> run ends (no-transition)"]
    assert report.ok  # a warning does not refuse the document
    doc["nodes"]["main"]["blocks"]["a"]["transitions"].append({"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "JUMP:b"})
    assert "unrouted-event" not in kinds(check(doc, lister, PLAIN))


def test_an_unrouted_prerequisite_failure_is_a_warning() -> None:
    pre = meta("t.pre")
    user = meta("t.user", requires=["t.pre"])
    doc = {"start": "main", "nodes": {"main": node("a", {
        "a": block("t.user", ("success", "JUMP:b"), ("failure", "JUMP:b")), "b": block("t.plain")})}}
    [finding] = kinds(check(doc, pre, user, PLAIN))["unrouted-event"]
    assert "'prerequisite_failed'" in finding.message
    doc["nodes"]["main"]["blocks"]["a"]["transitions"].append({"on_signal": "prerequisite_failed", "action": "JUMP:b"})
    assert "unrouted-event" not in kinds(check(doc, pre, user, PLAIN))


def test_unreachable_blocks_and_nodes_are_warnings() -> None:
    doc = {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.plain"), "lost": block("t.plain")}),
        "orphan": node("o", {"o": block("t.plain")}),
    }}
    found = {f.path for f in kinds(check(doc, PLAIN))["unreachable"]}
    assert found == {"nodes.main.blocks.lost", "nodes.orphan"}
    doc["nodes"]["main"]["blocks"]["a"] = block("t.plain", ("success", "JUMP:lost"), ("failure", "CALL:orphan"))
    assert "unreachable" not in kinds(check(doc, PLAIN))


def test_a_loop_with_no_way_out_is_an_error() -> None:
    every = ("SIGNAL:FAIL_DEFAULT",)
    doc = {"start": "main", "nodes": {"main": node("a", {
        "a": block("t.plain", (every[0], "JUMP:b")),
        "b": block("t.plain", (every[0], "JUMP:a")),
    })}}
    [finding] = kinds(check(doc, PLAIN))["no-exit"]
    assert finding.path == "nodes.main.blocks.a" and "main.a, main.b" in finding.message
    doc["nodes"]["main"]["blocks"]["b"] = block("t.plain", ("success", "JUMP:a"), (every[0], "RETURN"))
    assert "no-exit" not in kinds(check(doc, PLAIN))


def test_unbounded_call_recursion_is_an_error() -> None:
    doc = {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.plain", ("success", "CALL:sub")), "b": block("t.plain")}),
        "sub": node("s", {"s": block("t.plain", ("success", "CALL:sub"), ("failure", "RETURN"))}),
    }}
    [finding] = kinds(check(doc, PLAIN))["unbounded-recursion"]
    assert finding.path == "nodes.sub.blocks.s.transitions[0].action"
    assert finding.counterexample[0] == "main.a --success--> CALL:sub (push main.b)"
    doc["nodes"]["sub"]["blocks"]["s"] = block("t.plain", ("success", "RETURN"), ("failure", "RETURN"))
    assert "unbounded-recursion" not in kinds(check(doc, PLAIN))


def test_a_call_from_a_last_block_makes_its_callee_return_complete_the_run() -> None:
    doc = {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.plain", ("success", "CALL:sub"))}),
        "sub": node("s", {"s": block("t.plain", ("success", "RETURN"))}),
    }}
    [finding] = kinds(check(doc, PLAIN))["return-empty-stack"]
    assert finding.severity == "warning" and finding.path == "nodes.sub.blocks.s.transitions[0].action"
    assert finding.counterexample[-1].startswith("sub.s --success--> RETURN (nothing after main.a")
    doc["nodes"]["main"]["blocks"]["then"] = block("t.plain")
    assert "return-empty-stack" not in kinds(check(doc, PLAIN))


def test_a_called_start_node_returning_with_an_empty_stack_is_an_error() -> None:
    doc = {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.plain", ("success", "RETURN"), ("failure", "CALL:helper")), "b": block("t.plain")}),
        "helper": node("h", {"h": block("t.plain", ("success", "CALL:main"), ("failure", "RETURN")), "h2": block("t.plain")}),
    }}
    errors = [f for f in kinds(check(doc, PLAIN))["return-empty-stack"] if f.severity == "error"]
    assert errors and errors[0].path == "nodes.main.blocks.a.transitions[0].action"
    doc["nodes"]["helper"]["blocks"]["h"] = block("t.plain", ("success", "RETURN"), ("failure", "RETURN"))
    assert "return-empty-stack" not in kinds(check(doc, PLAIN))


def test_structure_and_capability_problems_come_in_one_report() -> None:
    doc = {"start": "main", "nodes": {"main": node("a", {
        "a": block("t.plain", ("success", "JUMP:nowhere")),
        "b": block("t.unknown"),
    })}}
    found = kinds(check(doc, PLAIN))
    assert [f.path for f in found["structure"]] == ["nodes.main.blocks.a.transitions[0].action"]
    assert [f.path for f in found["capability"]] == ["nodes.main.blocks.b.worker"]


def test_the_example_workflow_is_clean() -> None:
    from pathlib import Path

    from ontoflow.actors.capability import load_capabilities
    from ontoflow.actors.checker import read_document

    root = Path(__file__).resolve().parents[3]
    catalog = {c.metadata.id: c.metadata for c in load_capabilities(["ontoflow.actors.capabilities"])}
    report = check_document_file(root / "configs/examples/building_report/workflow.yaml", catalog, read_document)
    assert report.findings == []
    assert report.states > 0


def check_document_file(path, catalog, read):  # type: ignore[no-untyped-def]
    from ontoflow.actors.checker import check_document

    return check_document(read(path), catalog, name=str(path))


def test_a_callee_is_checked_in_each_calling_context() -> None:
    # sub inherits: called from main it sees main's memory (k.x); called from other it does not.
    doc = {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.plain", ("success", "CALL:sub"), ("failure", "CALL:other")), "b": block("t.plain")},
                     static_memory={"k.x": "m"}),
        "other": node("o", {"o": block("t.plain", ("success", "CALL:sub")), "o2": block("t.plain", ("success", "RETURN"))},
                      context_inheritance=False),
        "sub": node("s", {"s": block("t.consume", ("success", "RETURN"), ("failure", "RETURN"))}),
    }}
    [finding] = kinds(check(doc, PLAIN, CONSUME))["missing-input"]
    assert finding.counterexample[:2] == ["main.a --failure--> CALL:other (push main.b)",
                                          "other.o --success--> CALL:sub (push other.o2)"]
    doc["nodes"]["other"]["context_inheritance"] = True
    assert check(doc, PLAIN, CONSUME).ok


def test_keys_held_before_a_call_are_still_held_after_its_return() -> None:
    doc = {"start": "main", "nodes": {
        "main": node("a", {"a": block("t.produce", ("success", "CALL:sub")), "b": block("t.consume")}),
        "sub": node("s", {"s": block("t.plain", ("success", "RETURN"), ("failure", "RETURN"))}),
        "other": node("x", {"x": block("t.plain", ("success", "CALL:sub"))}),
    }}
    report = check(doc, PRODUCE, CONSUME, PLAIN)
    assert "missing-input" not in kinds(report)
    assert [f.path for f in kinds(report)["unreachable"]] == ["nodes.other"]
