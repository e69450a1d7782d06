"""Pipelines: OML v0.1.0 pipelines compiled into execution plans (seeds 003, 004). Not to be
confused with the plan engine (``actors/orchestrator/plans``) nor the intent planner
(``actors/intent``), which writes plans from sentences.

:func:`compile_pipeline` turns a guarded pipeline into an :class:`~protocols.ExecutionPlan`
(the same pipeline, the same plan, byte for byte with :func:`render_plan`);
:func:`resolve_connections` fills in ``@name`` connections at run time, in memory only.
"""

from ontoflow.actors.pipelines._compile import compile_pipeline, render_plan, setting_keys
from ontoflow.actors.pipelines._connections import (
    ENV_PREFIX,
    connection_names,
    current_connections,
    holds_secret,
    load_connections,
    lookup_connection,
    resolve_connections,
    using_connections,
)
from ontoflow.actors.pipelines.errors import ConnectionResolutionError, PlannerError

__all__ = [
    "ENV_PREFIX",
    "ConnectionResolutionError",
    "PlannerError",
    "compile_pipeline",
    "connection_names",
    "current_connections",
    "holds_secret",
    "load_connections",
    "lookup_connection",
    "render_plan",
    "resolve_connections",
    "setting_keys",
    "using_connections",
]
