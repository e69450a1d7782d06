"""The action DSL of transitions (seed 002): an import path kept for its callers; the actions
live with the events in ``protocols.events`` (the words of a transition table)."""

from ontoflow.protocols.events import Action, Call, Jump, Return, parse_action

__all__ = ["Action", "Call", "Jump", "Return", "parse_action"]
