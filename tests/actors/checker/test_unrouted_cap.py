"""A capability of thousands of events: one finding per unrouted event was most of a check's work."""

from __future__ import annotations

import re

from ontoflow.actors.checker import render_text
from ontoflow.actors.checker._workflow import UNROUTED_SHOWN

from tests.actors.checker.helpers import block, check, kinds, meta, node


def test_a_blocks_unrouted_events_past_the_first_few_are_one_finding_that_counts_them() -> None:
    # 2,000 events in 500 blocks made 250,000 findings, each with its run (390 MB of report).
    many = meta("t.many", events=["success", *(f"e{i}" for i in range(300))])
    blocks = {f"b{i}": block("t.many", ("success", f"JUMP:b{i + 1}")) for i in range(3)}
    blocks["b3"] = block("t.many", ("success", "JUMP:b0"), ("e0", "JUMP:b0"))
    report = check({"name": "many", "start": "m", "nodes": {"m": node("b0", blocks)}}, many)
    unrouted = kinds(report)["unrouted-event"]
    for name, routed in (("b0", 0), ("b3", 1)):
        mine = [f for f in unrouted if f.path == f"nodes.m.blocks.{name}.transitions"]
        shown = [f for f in mine if f.counterexample]
        [rest] = [f for f in mine if not f.counterexample]
        assert len(shown) == UNROUTED_SHOWN
        counted = int(re.match(r"([\d,]+) more events of t.many", rest.message)[1].replace(",", ""))
        assert counted + len(shown) == 300 - routed  # every unrouted event is shown or counted
        assert "'e" in rest.message and "more;" in rest.message  # the first of the rest named
        assert all(f"'e{i}'" not in rest.message for i in range(UNROUTED_SHOWN))  # not those shown
    assert len(unrouted) == 4 * (UNROUTED_SHOWN + 1)
    assert len(render_text(report)) < 200_000


def test_a_block_with_few_unrouted_events_has_one_finding_each() -> None:
    few = meta("t.few", events=["success", *(f"e{i}" for i in range(UNROUTED_SHOWN - 1))])
    report = check({"name": "few", "start": "m", "nodes": {"m": node("b0", {"b0": block("t.few", ("success", "JUMP:b0"))})}}, few)
    unrouted = kinds(report)["unrouted-event"]
    assert len(unrouted) == UNROUTED_SHOWN - 1 and all(f.counterexample for f in unrouted)
