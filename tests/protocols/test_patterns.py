"""Patterns from outside are RE2's, refused by their place when RE2 cannot compile them (re2_20)."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.actors.intent import Matcher
from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.protocols.capability import CapabilityMetadata, check_metadata
from ontoflow.protocols.domain import DomainManifest, check_domain
from ontoflow.protocols.patterns import compile_pattern, schema_pattern_problems, schema_patterns

BACKREF, LOOKBEHIND = r"(a)\1", "(?<=a)b"


def test_every_pattern_of_a_schema_is_found_by_its_path() -> None:
    schema = {
        "type": "object",
        "properties": {"t.name": {"pattern": "p1"}, "list": {"items": [{"pattern": "p2"}]}},
        "patternProperties": {"k0": {}, "k1": {"anyOf": [{"not": {"pattern": "p3"}}]}},
        "definitions": {"d": {"pattern": "p4"}},
        "x-vendor": {"pattern": "p5"},  # no draft names it, but a $ref may point into it
        "default": {"pattern": "data"}, "enum": [{"pattern": "data"}],  # values, never schemas
    }
    assert sorted(schema_patterns(schema)) == sorted([
        (".properties['t.name'].pattern", "p1"), (".properties.list.items[0].pattern", "p2"),
        (".patternProperties[key 0]", "k0"), (".patternProperties[key 1]", "k1"),
        (".patternProperties[key 1].anyOf[0].not.pattern", "p3"), (".definitions.d.pattern", "p4"),
        ("['x-vendor'].pattern", "p5"),
    ])


def test_a_pattern_re2_cannot_compile_is_a_problem_at_its_place_never_quoted() -> None:
    schema = {"properties": {"a": {"pattern": BACKREF}, "b": {"pattern": BACKREF}},
              "patternProperties": {"^ok": {}, LOOKBEHIND: {}}}
    problems = schema_pattern_problems(schema, "capabilities[3].observation_schema")
    assert sorted(p.path for p in problems) == ["capabilities[3].observation_schema.patternProperties[key 1]",
                                                "capabilities[3].observation_schema.properties.a.pattern",
                                                "capabilities[3].observation_schema.properties.b.pattern"]
    for problem in problems:
        assert problem.message.startswith("RE2 cannot compile it: invalid ")
        assert BACKREF not in problem.message and LOOKBEHIND not in problem.message


def test_check_metadata_checks_the_input_and_observation_schemas_patterns() -> None:
    meta = CapabilityMetadata(id="t.cap", input_schema={"type": "object", "properties": {"x": {"pattern": LOOKBEHIND}}},
                              observation_schema={"type": "object", "properties": {"y": {"pattern": BACKREF}}})
    assert [p.path for p in check_metadata(meta, where="capabilities[0]")] == [
        "capabilities[0].input_schema.properties.x.pattern", "capabilities[0].observation_schema.properties.y.pattern"]
    fine = CapabilityMetadata(id="t.cap", input_schema={"type": "object", "properties": {"x": {"pattern": r"^\d+$"}}})
    assert check_metadata(fine) == []


def test_a_compiled_pattern_searches_and_spans_in_characters() -> None:
    pattern = compile_pattern(r"para\s+(?P<value>\S+)")
    m = pattern.search("exporte ção para relatório.csv")
    assert m.group("value") == "relatório.csv" and m.span(pattern.groupindex["value"]) == (17, 30)
    with pytest.raises(TypeError):
        compile_pattern(5)  # type: ignore[arg-type]


def _domain(pattern: str) -> DomainManifest:
    return msgspec.convert({"domain": "files", "capabilities": ["files.find"], "goals": [{
        "id": "FIND", "capability": "files.find", "intent_hints": {"keywords": ["find"]},
        "entities_schema": {"name_text": {"type": "string", "patterns": [pattern]}}}]}, DomainManifest)


@pytest.mark.parametrize("pattern", [r"(?<=find )(?P<value>\w+)", r"(?P<value>(\w)\2)"])
def test_a_domain_pattern_re2_cannot_compile_is_refused_by_its_place(pattern: str) -> None:
    [problem] = check_domain(_domain(pattern))
    assert problem.path == "goals[0].entities_schema.name_text.patterns[0]"
    assert "RE2 cannot compile it" in problem.message and pattern not in problem.message


def test_the_matcher_runs_a_domains_patterns_with_re2() -> None:
    # (a+)+ before a $ that cannot match: re backtracks 2**n times on n letters, RE2 reads them once.
    manifest = _domain(r"find (?P<value>[a-z]+)\.txt|(?P<x>(a+)+)$z")
    assert check_domain(manifest) == []
    catalogue = Catalogue([manifest], {"files.find": CapabilityMetadata(id="files.find")})
    out = Matcher(catalogue).match("find " + "a" * 60 + "!")
    assert (out.goal, out.entities) == ("FIND", {})
    assert Matcher(catalogue).match("find notes.txt").entities == {"name_text": "notes"}


def test_a_ready_whose_patterns_compile_to_too_much_is_refused_before_compiling_them_all() -> None:
    # \w{1000} is 8 characters and 3,000 RE2 instructions (a millisecond to compile): bounded per Ready.
    from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready, ready_problem
    from ontoflow.protocols.patterns import MAX_PATTERN_INSTRUCTIONS

    caps = [CapabilityMetadata(id=f"t.c{i}", input_schema={"type": "object", "properties": {
        f"k{j}": {"pattern": rf"\w{{1000}}{i}-{j}"} for j in range(10)}}) for i in range(10)]
    reason = ready_problem(Ready(protocol=PROTOCOL_VERSION, worker_id="w", capabilities=caps), PROTOCOL_VERSION)
    assert reason is not None and reason.endswith(f".input_schema: its patterns take more than the {MAX_PATTERN_INSTRUCTIONS} "
                                                  "RE2 instructions one announcement may compile to")
    assert reason.startswith("capabilities[") and not reason.startswith("capabilities[0]")  # the first ones fit
    assert ready_problem(Ready(protocol=PROTOCOL_VERSION, worker_id="w", capabilities=caps[:2]), PROTOCOL_VERSION) is None


def test_a_domain_whose_patterns_compile_to_too_much_is_refused() -> None:
    manifest = _domain("x")
    goal = manifest.goals[0]
    many = msgspec.structs.replace(goal.entities_schema["name_text"], patterns=[rf"(?P<value>[a-z]{{1000}}){i}" for i in range(150)])
    manifest = msgspec.structs.replace(manifest, goals=[msgspec.structs.replace(goal, entities_schema={"name_text": many})])
    problems = check_domain(manifest)
    assert [p.path for p in problems] == ["goals[0].entities_schema.name_text.patterns"]
    assert "RE2 instructions" in problems[0].message
