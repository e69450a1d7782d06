"""A follow-up's role is filled from the parent capability's own namespace first.

Before: the lowest id filling the role was chosen, across every domain loaded: adding an
``alerts`` domain whose ``alerts.push`` is a ``notifier`` sent every ``finance`` quote's
notification there instead of to ``finance.notify`` (a new domain changed an old one)."""

from __future__ import annotations

from ontoflow.protocols import Composition

from tests.actors.plans.helpers import cap, compile_data

QUOTE = cap("finance.quote", "symbol", outputs=("price",), composition=Composition(followup_roles=["notifier"]))
OWN = cap("finance.notify", "msg", roles=["notifier"])
OTHER = cap("alerts.push", "msg", roles=["notifier"])
PLAN = {"steps": [{"id": "q", "capability": "finance.quote", "params": {"symbol": "X"}}]}


def _filler(*caps) -> str:
    [follow_up] = compile_data(PLAN, [QUOTE, *caps]).steps[0].follow_ups
    return follow_up.capability.id


def test_the_parents_own_namespace_fills_the_role_whatever_else_is_loaded() -> None:
    assert _filler(OWN, OTHER) == "finance.notify"
    assert _filler(OTHER, OWN, cap("aaa.notify", "msg", roles=["notifier"])) == "finance.notify"


def test_without_one_of_its_own_the_lowest_id_fills_it() -> None:
    assert _filler(OTHER, cap("chat.send", "msg", roles=["notifier"])) == "alerts.push"
