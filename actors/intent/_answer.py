"""Reading a finished plan back as one answer for the user (a ``DomainOutput``).

Each answering step's ``DomainOutput`` (under ``ontoflow.domain.output``) is read from the
plan's report, in step order; a pre step that asked a question (two tickers for "Nordea")
is read too. The first clarification wins (the user must choose before anything else makes
sense); otherwise the run's status decides between success and failure, and the
explanations are joined in step order. A step whose capability does not speak DomainOutput
answers with its outputs as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY, DomainOutput
from ontoflow.protocols.errors import decode_failure

__all__ = ["REPORT_KEY", "answer_of"]

#: The plan engine's report key (``combine_mode: report``), read here by its value so the
#: front half does not import the orchestrator.
REPORT_KEY = "ontoflow.plan.report"


def _output(record: Mapping[str, Any]) -> DomainOutput | str | None:
    raw = (record.get("outputs") or {}).get(DOMAIN_OUTPUT_KEY)
    if raw is None:
        return None
    try:
        return msgspec.convert(raw, DomainOutput)
    except msgspec.ValidationError as exc:  # the field, never the value (msgspec quotes an unknown status)
        return f"step {record.get('step')!r} answered a malformed DomainOutput: {decode_failure(exc, 'DomainOutput')}"


def answer_of(status: str, error: str | None, context: Mapping[str, Any], answer_steps: Sequence[str]) -> DomainOutput:
    """The user's answer from a finished plan run.

    Args:
        status: the run's status (``completed``, ``failed``, ``cancelled``).
        error: the run's error, if any.
        context: the run's final context (it holds the report).
        answer_steps: the steps that answer (the planner's ``answer_steps``).
    """
    report: Mapping[str, Any] = context.get(REPORT_KEY) or {}
    for name, record in report.items():
        out = _output(record)
        if isinstance(out, DomainOutput) and out.status == "clarification":
            return msgspec.structs.replace(out, metadata={**out.metadata, "step": name})
    answers: list[dict[str, Any]] = []
    lines: list[str] = []
    step_errors: list[str] = []
    failed = status != "completed"
    for name, record in report.items():
        out = _output(record)
        answering = name in answer_steps or "+" in name
        if isinstance(out, str):
            failed = True
            lines.append(out)
        elif isinstance(out, DomainOutput) and out.status == "failure":
            # A pre step's failure ("no ticker for ...") is the reason its served step never ran.
            failed = True
            lines.append(out.explanation or f"step {name} failed")
            if answering:
                answers.append({"step": name, "capability": record.get("capability"), "status": out.status, "result": out.result})
        elif not answering:
            continue
        elif out is None:
            if record.get("status") != "succeeded":
                failed = True
                step_errors.append(f"step {name} ({record.get('capability')}) ended with {record.get('event')!r}: {record.get('error') or 'no detail'}")
            else:
                answers.append({"step": name, "capability": record.get("capability"), "status": "success", "result": record.get("outputs") or {}})
        else:
            answers.append({"step": name, "capability": record.get("capability"), "status": out.status, "result": out.result})
            if out.explanation:
                lines.append(out.explanation)
    # A step that never got the value a failed pre step was to give it ("no ticker for ...")
    # failed for that reason, already said: its engine error is plumbing
    # ("reference ${1-resolve_symbol...} does not resolve"), not news for the person.
    explained = [name for name, record in report.items()
                 if isinstance(o := _output(record), DomainOutput) and o.status == "failure" and o.explanation]
    lines.extend(e for e in step_errors if not any(f"${{{name}." in e for name in explained))
    if failed and not lines and error:
        lines.append(error)
    return DomainOutput(
        status="failure" if failed else "success",
        result={"answers": answers},
        explanation="\n".join(lines),
        confidence=1.0,
        metadata={"run_status": status},
    )
