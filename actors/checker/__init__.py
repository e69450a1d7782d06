"""The static contract checker (``ontoflow check``): prove a document before it runs.

A pure analysis of a workflow manifest, an execution plan or an OML pipeline against the
capabilities' metadata: no capability runs. See :func:`check_document`.
"""

from ontoflow.actors.checker._check import Analysis, analyse_document, check_document, read_document, refuse_if_invalid
from ontoflow.actors.checker._explore import MAX_STATES, STATE_FLOOR, Edge, Exploration, state_budget
from ontoflow.actors.checker._paths import format_step, return_targets
from ontoflow.actors.checker._report import ERROR, KINDS, SHOWN, WARNING, Finding, Report, capped_problems, render_text
from ontoflow.actors.checker.errors import CheckerError

__all__ = [
    "Analysis",
    "CheckerError",
    "ERROR",
    "Edge",
    "Exploration",
    "Finding",
    "KINDS",
    "MAX_STATES",
    "Report",
    "SHOWN",
    "STATE_FLOOR",
    "WARNING",
    "analyse_document",
    "capped_problems",
    "check_document",
    "format_step",
    "read_document",
    "refuse_if_invalid",
    "render_text",
    "return_targets",
    "state_budget",
]
