"""The orchestrator's pure engine: a run's state and a fact in, commands out.

Compile a manifest once with :func:`compile_workflow`, make a :class:`RunState` per run with
:func:`new_run`, and feed every fact to :func:`advance`; carry out the commands it returns.
Nothing here does I/O, reads a clock or draws a random number, so replaying a journal of
facts rebuilds a run exactly. How a step ends (outputs filtered against the declared ones, the
failure record, a lost worker, a timeout, no worker) is decided once, in ``_step_end``, for
this engine and the plan engine alike; which facts a run takes at all (its status gate) once,
in ``_step_end`` too (``admit``); a step's trace entry is built once, by ``trace_entry`` (there too),
but for the usual outcome, which ``_advance`` handles in line (per step; a test holds it to the
general path).
"""

from ontoflow.actors.orchestrator.engine._advance import advance
from ontoflow.actors.orchestrator.engine._commands import CancelStep, Command, Dispatch, RunEnded, Suspended
from ontoflow.actors.orchestrator.engine._contract import ENGINE_FAILED, EndedEngine, RunEngine, RunView, engine_failure
from ontoflow.actors.orchestrator.engine._compile import (
    BlockPlan,
    CapabilityPlan,
    CompiledWorkflow,
    NodePlan,
    Route,
    capability_plan,
    compile_workflow,
    new_run,
)
from ontoflow.actors.orchestrator.engine._facts import (
    Fact,
    RunCancelled,
    RunExpired,
    RunResumed,
    RunSubmitted,
    StepDeadlineExpired,
    StepFinished,
    StepLost,
    StepUnavailable,
)
from ontoflow.actors.orchestrator.engine._state import Frame, PendingStep, RunState
from ontoflow.actors.orchestrator.engine._step_end import (
    FACTS,
    MAX_LOST_ATTEMPTS,
    StepEnd,
    TraceEntry,
    admit,
    at_once_end,
    cancelled_end,
    describe,
    engine_end,
    note_stale,
    outcome_end,
    redispatch,
    split_outputs,
    trace_entry,
)
from ontoflow.actors.orchestrator.engine._steps import LAST_FAILURE_KEY, resolve_inputs
from ontoflow.actors.orchestrator.engine._suspend import ANSWER_KEY, Suspension, check_answer, token_of

__all__ = [
    "ANSWER_KEY",
    "ENGINE_FAILED",
    "FACTS",
    "LAST_FAILURE_KEY",
    "MAX_LOST_ATTEMPTS",
    "BlockPlan",
    "CancelStep",
    "CapabilityPlan",
    "Command",
    "CompiledWorkflow",
    "Dispatch",
    "EndedEngine",
    "Fact",
    "Frame",
    "NodePlan",
    "PendingStep",
    "Route",
    "RunCancelled",
    "RunEnded",
    "RunEngine",
    "RunExpired",
    "RunResumed",
    "RunState",
    "RunSubmitted",
    "RunView",
    "StepDeadlineExpired",
    "StepEnd",
    "StepFinished",
    "StepLost",
    "StepUnavailable",
    "Suspended",
    "Suspension",
    "TraceEntry",
    "admit",
    "advance",
    "at_once_end",
    "cancelled_end",
    "capability_plan",
    "check_answer",
    "compile_workflow",
    "describe",
    "engine_end",
    "engine_failure",
    "new_run",
    "note_stale",
    "outcome_end",
    "redispatch",
    "resolve_inputs",
    "split_outputs",
    "token_of",
    "trace_entry",
]
