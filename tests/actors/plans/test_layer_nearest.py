"""A step's context layer: of two ancestors giving one key, the nearer one's value wins.

Before: ancestors were layered by their depth from the plan's roots, then step order. For
``d`` depending on ``b`` (which depends on ``a``) and on ``e``, the grandparent ``a`` (depth 0,
listed after ``e``) won over the parent ``e`` (depth 0), against "a nearer ancestor wins"."""

from __future__ import annotations

import pytest

from ontoflow.protocols import RetryPolicy

from tests.actors.plans.helpers import Driver, cap, compile_data

_NO_RETRY = RetryPolicy(max_retries=0)
CAPS = [cap("t.give", outputs=("t.k",), retry=_NO_RETRY, timeout_ms=1000),
        cap("t.pass", outputs=("t.out",), retry=_NO_RETRY, timeout_ms=1000),
        cap("t.take", "t.k", required=("t.k",), outputs=("t.out",), retry=_NO_RETRY, timeout_ms=1000)]


@pytest.mark.parametrize("order", [["e", "a"], ["a", "e"]])
def test_a_parent_wins_over_a_grandparent_whatever_the_step_order(order: list[str]) -> None:
    roots = [{"id": r, "capability": "t.give"} for r in order]
    steps = [*roots, {"id": "b", "capability": "t.pass", "depends_on": ["a"]},
             {"id": "d", "capability": "t.take", "depends_on": ["b", "e"]}]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    d.finish("e", outputs={"t.k": "parent"})
    d.finish("a", outputs={"t.k": "grandparent"})
    d.finish("b", outputs={"t.out": 1})
    assert d.in_flight["d"].inputs == {"t.k": "parent"}
    assert d.compiled.by_id["d"].ancestors[-2:] in (("b", "e"), ("e", "b"))  # the parents, last


def test_equally_near_ancestors_layer_in_step_order() -> None:
    steps = [{"id": "x", "capability": "t.give"}, {"id": "y", "capability": "t.give"},
             {"id": "d", "capability": "t.take", "depends_on": ["y", "x"]}]
    d = Driver(compile_data({"steps": steps}, CAPS))
    d.submit()
    d.finish("y", outputs={"t.k": "y"})
    d.finish("x", outputs={"t.k": "x"})
    assert d.in_flight["d"].inputs == {"t.k": "y"}
