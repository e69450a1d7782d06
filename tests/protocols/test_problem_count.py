"""A list of problems the loader cut (:func:`bounded`: the first 1,000 and a line counting the
rest) still counts them all when cut again to fewer lines: a daemon's refusal of 3,000 problems
said "and 951 more" (of the 1,001 lines), not "and 2,950 more"."""

from __future__ import annotations

from ontoflow.actors.checker import capped_problems
from ontoflow.protocols.errors import Problem
from ontoflow.protocols._manifest_size import MAX_PROBLEMS, bounded, problem_count


def _problems(n: int) -> list[Problem]:
    return [Problem(path=f"nodes.m.blocks.b{i}", message="does not exist") for i in range(n)]


def test_a_cut_list_counts_what_it_stands_for() -> None:
    assert problem_count(_problems(3)) == 3
    assert problem_count(bounded(_problems(3_000))) == 3_000
    assert len(bounded(_problems(3_000))) == MAX_PROBLEMS + 1
    assert problem_count([Problem(path="x", message="and 5 more problems (the first 1 are listed)")]) == 1  # a path: not the count


def test_cut_again_it_says_how_many_of_them_all_are_left_out() -> None:
    shown = capped_problems(bounded(_problems(3_000)), 50)
    assert len(shown) == 51 and shown[-1].message == "... and 2,950 more problem(s)"
