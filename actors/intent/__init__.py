"""From a sentence to a run (seed 004's front half): matcher, gate, resolver, planner, memory,
and the edge's actors on the kernel (:class:`IntentActor`: the adapter; :class:`PlannerActor`:
the rest, and session memory), which talk over an :class:`EdgeWire` (``protocols.edge``).

Everything here is pure but the adapter's ``classify`` (an LLM adapter waits on a network):
:func:`understand` takes an ``EntryRequest`` and a session memory and returns a plan for the
existing plan engine, or a clarification, and the new memory. :func:`answer_of` reads the
finished plan back as one ``DomainOutput``. The front half never imports the orchestrator:
the composition root (the CLI) runs the plan.
"""

from ontoflow.actors.intent._adapter import IntentAdapter
from ontoflow.actors.intent._adapter_choice import ADAPTERS, RoutedAdapter, adapter_factories, check_choice
from ontoflow.actors.intent._answer import REPORT_KEY, answer_of
from ontoflow.actors.intent._capability_adapter import LlmCapabilityAdapter
from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent._choice import choose, says_cancel
from ontoflow.actors.intent._edge_wire import ENTRY, EdgeWire, WireSink
from ontoflow.actors.intent._eval import EvalCase, EvalReport, GoalFigures, evaluate
from ontoflow.actors.intent._gate import MAX_CANDIDATES, confidence_gate
from ontoflow.actors.intent._intent_actor import ANY_DOMAIN, INTENT, AdapterFactory, IntentActor
from ontoflow.actors.intent._llm_adapter import LlmAdapter, catalogue_view, intent_prompt, intent_schema
from ontoflow.actors.intent._llm_capability import LlmClassify
from ontoflow.actors.intent._loader import MANIFEST_NAMES, DomainSource, find_domain_folders, read_domain
from ontoflow.actors.intent._matcher import Matcher
from ontoflow.actors.intent._memory import MemoryLimits, inject_memory, recall, remember
from ontoflow.actors.intent._pipeline import RUN_FLAG, Understanding, begin, conclude, understand
from ontoflow.actors.intent._planner import Planned, build_plan
from ontoflow.actors.intent._planner_actor import PLANNER, PlannerActor, Sessions
from ontoflow.actors.intent._resolve import Resolution, resolve_goal
from ontoflow.actors.intent.errors import (
    AdapterChoiceError,
    DomainLoadError,
    IntentAdapterFailed,
    IntentError,
    IntentRejected,
)

__all__ = [
    "ADAPTERS",
    "ANY_DOMAIN",
    "ENTRY",
    "INTENT",
    "MANIFEST_NAMES",
    "MAX_CANDIDATES",
    "PLANNER",
    "REPORT_KEY",
    "RUN_FLAG",
    "AdapterChoiceError",
    "AdapterFactory",
    "Catalogue",
    "DomainLoadError",
    "DomainSource",
    "EdgeWire",
    "EvalCase",
    "EvalReport",
    "GoalFigures",
    "IntentActor",
    "IntentAdapter",
    "IntentAdapterFailed",
    "IntentError",
    "IntentRejected",
    "LlmAdapter",
    "LlmCapabilityAdapter",
    "LlmClassify",
    "Matcher",
    "MemoryLimits",
    "Planned",
    "PlannerActor",
    "Resolution",
    "RoutedAdapter",
    "Sessions",
    "Understanding",
    "WireSink",
    "adapter_factories",
    "answer_of",
    "begin",
    "build_plan",
    "catalogue_view",
    "check_choice",
    "choose",
    "conclude",
    "confidence_gate",
    "evaluate",
    "find_domain_folders",
    "inject_memory",
    "intent_prompt",
    "intent_schema",
    "read_domain",
    "recall",
    "remember",
    "resolve_goal",
    "says_cancel",
    "understand",
]
