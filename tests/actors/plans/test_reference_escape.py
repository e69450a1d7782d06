"""``$${`` writes a literal ``${`` in a param; everything else about references is unchanged."""

from __future__ import annotations

import pytest

from ontoflow.protocols import ManifestError
from ontoflow.protocols.plan import find_references

from tests.actors.plans.helpers import Driver, cap, compile_data

CAPS = [cap("t.work", "x", "y", outputs=("v",))]


def _run_b(params: dict) -> dict:
    steps = [{"id": "a", "capability": "t.work"}, {"id": "b", "capability": "t.work", "depends_on": ["a"], "params": params}]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    d.finish("a", outputs={"v": "V"})
    return d.in_flight["b"].inputs


@pytest.mark.parametrize(
    ("param", "sent"),
    [
        ("echo $${HOME}", "echo ${HOME}"),          # before: refused, "${HOME} must name a field"
        ("$${a.v}", "${a.v}"),                      # a whole escaped reference stays text
        ("$${a.v} is ${a.v}", "${a.v} is V"),
        ("price: $${5} and ${a.v}", "price: ${5} and V"),
        ("$${", "${"),
    ],
)
def test_an_escaped_reference_reaches_the_capability_as_text(param: str, sent: str) -> None:
    assert _run_b({"x": param}) == {"x": sent}


def test_escapes_are_not_references_to_check() -> None:
    assert list(find_references({"x": ["$${5}", "$${a.}"]}, "p")) == []
    assert [where for where, _ in find_references({"x": "$${a.v}${a.v}"}, "p")] == ["p.x"]


def test_an_unescaped_malformed_reference_is_still_refused_at_its_path() -> None:
    with pytest.raises(ManifestError) as info:
        compile_data({"steps": [{"id": "a", "capability": "t.work", "params": {"x": "echo ${HOME}"}}]}, CAPS)
    assert [p.path for p in info.value.problems] == ["steps[0].params.x"]


@pytest.mark.parametrize("param", ["${a.v", "${a.${a.v}}", "${{a.v}}", "cost ${ 5", "${abc"])
def test_a_dollar_brace_that_opens_no_reference_is_refused_without_echoing_the_param(param: str) -> None:
    # Before: these reached the capability as text (a nested reference half-substituted).
    steps = [{"id": "a", "capability": "t.work"}, {"id": "b", "capability": "t.work", "depends_on": ["a"], "params": {"x": param}}]
    with pytest.raises(ManifestError) as info:
        compile_data({"steps": steps}, CAPS)
    [problem] = info.value.problems
    assert problem.path == "steps[1].params.x" and "$${" in problem.message and param not in problem.message
