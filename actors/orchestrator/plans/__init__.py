"""The pure DAG engine of execution plans (seed 004), beside the workflow engine.

Compile a plan once with :func:`compile_plan`; the :class:`CompiledPlan` is what the
orchestrator shell submits: ``new_run(run_id)`` gives a :class:`PlanState` and
``advance(state, fact)`` speaks the workflow engine's facts and commands (several
``Dispatch`` commands may come out of one fact). Nothing here does I/O or reads a clock.

How a step's params meet its capability's inputs: params are keyed by ontology keys (the
capability's ``input_schema`` property names), references resolved first. Each input key
then resolves like a workflow step's, first layer wins: the step's params -> the run's
context, which for a plan step is the submitted inputs overlaid with the outputs of the step's
*ancestors* (only them, farthest first, by dependency edges then step order, so a nearer
ancestor wins and the result never depends on arrival order) -> the orchestrator's defaults
-> the schema's ``default``. A required key found nowhere ends the step ``invalid`` without dispatching it.
A param its capability does not take is a compile error (except a fan-out list parameter).

Step outputs: the declared keys of the outcome; a capability that declares no outputs
contributes none (the outputs rule of ``engine._step_end``, the same for workflows; the other
keys are listed in the trace entry's ``dropped_outputs``).
A fan-out (``decomposition.array_params``: a list under ``param_name``, in the params or the
context layer) runs one child per element with ``single_param_name`` set to it, at most the
rule's ``max_concurrency`` at once; the gathered step's output maps each output key to the
list of the children's values, in element order. Ids seen by workers: ``<step>`` for a step,
``<step>[<n>]`` for a fan-out child, ``<step>+<role>`` for a follow-up.

A step whose dependency did not succeed is skipped (event ``skipped``, reason
``dependency_failed``, the error names the dependency); so is a step whose reference names a
step that did not succeed. In a sequential plan the step before is an order, not a need: an
optional step's failure lets the next step run, a required step's skips every step after it. The run completes when every
required plan step succeeded, fails otherwise, and in both cases its context gets the
combined output of ``combine_mode`` (see ``_combine``).
"""

from ontoflow.actors.orchestrator.plans._advance import advance
from ontoflow.actors.orchestrator.plans._combine import REPORT_KEY, STEPS_KEY, combine, step_order
from ontoflow.actors.orchestrator.plans._compile import MAX_FAN_OUT, CompiledPlan, FollowUp, StepPlan, compile_plan
from ontoflow.actors.orchestrator.plans._schedule import SKIPPED_EVENT
from ontoflow.actors.orchestrator.plans._state import FanOut, PlanState, Running, StepResult, Unit

__all__ = [
    "MAX_FAN_OUT",
    "REPORT_KEY",
    "SKIPPED_EVENT",
    "STEPS_KEY",
    "CompiledPlan",
    "FanOut",
    "FollowUp",
    "PlanState",
    "Running",
    "StepPlan",
    "StepResult",
    "Unit",
    "advance",
    "combine",
    "compile_plan",
    "step_order",
]
