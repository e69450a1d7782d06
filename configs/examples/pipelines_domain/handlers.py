"""The pipelines domain's handler: seed 003's chat state machine behind one capability.

``pipelines.export_tables`` runs the state machine shipped with ontoflow (``CHAT_FSM``, a
workflow manifest) on ontoflow's own engine, in this worker, with the request's entities as its
input; answers the pipeline YAML (saved to the file the person named, if any) and, when asked,
runs the compiled pipeline and answers how many rows each file got. A request the machine
cannot meet answers what is missing.

A second invalid pipeline (possible only with the model's synthesiser) is a question for a
person through the runtime's clarification: the step ends with the reserved event
``clarification``, its run is *suspended* with a resume token, and the person's answer (the
session's next sentence, or ``ontoflow answer RUN TEXT``) dispatches this step again with the
answer under ``pipelines.hint``: ``cancel`` ends it with no pipeline, ``builtin`` lets the
deterministic synthesiser write it, any other text is a hint the model is given on a fresh
synthesis (which again may regenerate once, and no more, before asking again).

Which synthesiser writes pipelines is the worker's choice: ``ONTOFLOW_PIPELINES_SYNTHESIZER``
(``deterministic``, the default, or ``llm``: the model of ``ONTOFLOW_LLM_URL``).
This file imports only the public face and the synthesis package: a domain is a worker and its
manifest, with nothing changed in the core.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar

from ontoflow import Capability, CapabilityMetadata, Result, StepContext, arun_manifest
from ontoflow.actors.capabilities import CAPABILITIES as BUILTINS
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM

OUT = "ontoflow.domain.output"
SOURCE, FORMAT, DESTINATION = "pipelines.source", "pipelines.format", "pipelines.destination"
TABLES = "pipelines.tables"
_SPLIT = re.compile(r"\s*(?:,|\band\b|\be\b)\s*")
_ALL = {"all", "todas", "all the", "every", "todas as"}
_FORMATS = {"json lines": "jsonl", "ndjson": "jsonl"}
PIPELINE_FILE, RUN = "pipelines.pipeline_file", "pipelines.run"
#: Where the person's answer to the hand-over question comes back (the clarification's answer_param).
HINT = "pipelines.hint"
SYNTHESIZER_ENV = "ONTOFLOW_PIPELINES_SYNTHESIZER"
_CANCEL = {"cancel", "stop", "abort", "cancelar", "parar", "no", "não", "nao"}
_BUILTIN = {"builtin", "built-in", "deterministic", "padrão", "padrao"}


def _answer(status: str, explanation: str, result: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"status": status, "explanation": explanation, "result": result or {}, "confidence": 1.0, "metadata": {}}


class ExportTables(Capability):
    """Write (and optionally run) the pipeline that exports a SQLite database's tables."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="pipelines.export_tables",
        description="Write an OML pipeline exporting a SQLite database's tables, and run it if asked.",
        input_schema={
            "type": "object",
            "properties": {
                SOURCE: {"type": "string", "minLength": 1},
                FORMAT: {"type": "string", "minLength": 1, "default": "csv"},
                TABLES: {"type": "string", "minLength": 1},
                DESTINATION: {"type": "string", "minLength": 1, "default": "./out"},
                PIPELINE_FILE: {"type": "string", "minLength": 1},
                RUN: {"type": "boolean", "default": False},
                HINT: {"type": "string"},
            },
            "required": [SOURCE],
        },
        outputs=[OUT],
        timeout_ms=600_000,
        idempotent=True,
        intent_hints={"keywords": ["export", "exportar", "pipeline", "sqlite"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        fmt = inputs[FORMAT].strip().lower()
        request: dict[str, Any] = {"source": inputs[SOURCE], "format": _FORMATS.get(fmt, fmt),
                                   "destination": inputs[DESTINATION]}
        named = [t for t in _SPLIT.split(inputs.get(TABLES, "").strip()) if t and t.lower() not in _ALL]
        if named:  # the tables as the person named them; discovery says whether they exist
            request["tables"] = named
        synthesizer = os.environ.get(SYNTHESIZER_ENV, "deterministic").strip() or "deterministic"
        hint = (inputs.get(HINT) or "").strip()  # the person's answer to the hand-over question
        if hint.casefold() in _CANCEL:
            return Result(outputs={OUT: _answer("failure", "Stopped at your word: no pipeline was made.",
                                                {"cancelled": True})})
        if hint.casefold() in _BUILTIN:
            synthesizer = "deterministic"
        elif hint:
            request["hint"] = hint
        machine = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                      inputs={"pipelines.request": request, "pipelines.synthesizer": synthesizer})
        ended_in = machine.trace[-1].block if machine.trace else ""
        message = machine.context.get("pipelines.message", "")
        if ended_in == "hand_over":
            # Seed 003's concise human-in-the-loop message, as the runtime's clarification: the
            # run suspends here and the answer dispatches this step again under HINT.
            question = {"status": "clarification", "explanation": message, "result": {"candidates": []},
                        "confidence": 1.0, "metadata": {"answer_param": HINT, "resolution": "invalid_pipeline"}}
            return Result(event="clarification", outputs={OUT: question})
        if ended_in != "compile" or machine.status != "completed":
            return Result(outputs={OUT: _answer("failure", message or f"the pipeline could not be made ({machine.error})")})
        text: str = machine.context["pipelines.yaml"]
        lines = []
        result: dict[str, Any] = {"pipeline_yaml": text}
        saved = inputs.get(PIPELINE_FILE)
        if saved:
            target = Path(saved)
            if not target.parent.is_dir():
                return Result(outputs={OUT: _answer("failure", f"cannot save the pipeline: the folder {target.parent} "
                                                               "does not exist")})
            target.write_text(text)
            result["pipeline_file"] = saved
            lines.append(f"Pipeline saved to {saved}:")
        lines.append(text.rstrip())
        if inputs[RUN]:
            ran = await arun_manifest(machine.context["pipelines.document"], BUILTINS)
            rows = {e.block: e.event for e in ran.trace}
            report = ran.context.get("ontoflow.plan.report") or {}
            files = [{"file": r["outputs"]["data.file"], "rows": r["outputs"].get("data.rows")}
                     for r in report.values() if isinstance(r, dict) and "data.file" in (r.get("outputs") or {})]
            result["run"] = {"status": ran.status, "error": ran.error, "steps": rows, "files": files}
            lines.append(f"Ran it: {ran.status}" + (f" ({ran.error})" if ran.error else "") + ".")
            lines += [f"  {f['file']}: {f['rows']} row{'' if f['rows'] == 1 else 's'}" for f in files]
            if ran.status != "completed":
                return Result(outputs={OUT: _answer("failure", "\n".join(lines), result)})
        return Result(outputs={OUT: _answer("success", "\n".join(lines), result)})


CAPABILITIES = [ExportTables]
