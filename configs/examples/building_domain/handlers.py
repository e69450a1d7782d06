"""The building domain's handlers: seed 000's pipe capabilities, answering as a domain.

Each handler runs the built-in InfoBIM capabilities (``list_pipes``, ``export_csv``) on the
example building model and wraps what they return in a ``DomainOutput`` for the user. The
model is ``configs/examples/building_report/model.json`` unless the step is given another
``infobim.model.path``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from ontoflow import Capability, CapabilityMetadata, Result, StepContext
from ontoflow.actors.capabilities import ExportCsv, ListPipes

OUT = "ontoflow.domain.output"
MODEL_PATH, LANG = "infobim.model.path", "obdc.base.lang.code"
EXPORT_PATH = "infobim.export.path"
MODEL = str(Path(__file__).resolve().parents[1] / "building_report" / "model.json")
DEFAULT_EXPORT = "out/building/pipes.csv"
_PAGE = 10_000

_WORDS = {
    "en": {"pipes": "{n} pipes, {m:.1f} m in total: {items}", "none": "The model has no pipes.", "csv": "Wrote {n} pipes to {path}."},
    "pt_BR": {"pipes": "{n} tubos, {m:.1f} m no total: {items}", "none": "O modelo não tem tubos.", "csv": "Gravei {n} tubos em {path}."},
}


def _schema(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    props = {
        MODEL_PATH: {"type": "string", "minLength": 1, "default": MODEL},
        LANG: {"type": "string", "enum": ["en", "pt_BR"], "default": "en"},
        **(extra or {}),
    }
    return {"type": "object", "properties": props, "required": []}


async def _pipes(inputs: dict[str, Any], context: StepContext) -> tuple[str, list[dict[str, Any]]]:
    """All the pipes of the model, through the built-in list_pipes (one page of them all)."""
    result = await ListPipes().execute(
        {MODEL_PATH: inputs[MODEL_PATH], LANG: inputs[LANG], "infobim.pipes.page_size": _PAGE,
         "infobim.pipes.cursor": 0, "infobim.pipes": [], "infobim.materials": []},
        context,
    )
    return result.event, list(result.outputs.get("infobim.pipes", []))


def _answer(status: str, explanation: str, result: dict[str, Any]) -> dict[str, Any]:
    return {"status": status, "result": result, "explanation": explanation, "confidence": 1.0, "metadata": {}}


class ListPipesAnswer(Capability):
    """List the pipes of the building model: how many, how long, each with its material."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="building.list_pipes",
        description="List the pipes of the building model.",
        input_schema=_schema(),
        outputs=[OUT],
        timeout_ms=10_000,
        idempotent=True,
        intent_hints={"keywords": ["list", "listar", "liste", "mostre", "show", "quais", "which"], "examples": ["what pipes are in the building?"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """List the pipes (a failure answer when the model cannot be read)."""
        words = _WORDS[inputs[LANG]]
        event, pipes = await _pipes(inputs, context)
        if event == "empty" or not pipes:
            return Result(outputs={OUT: _answer("success", words["none"], {"pipes": []})})
        total = sum(p["length_m"] for p in pipes)
        items = ", ".join(f"{p['id']} ({p['material_name']}, {p['diameter_mm']:g} mm)" for p in pipes)
        text = words["pipes"].format(n=len(pipes), m=total, items=items)
        return Result(outputs={OUT: _answer("success", text, {"pipes": pipes, "total_length_m": round(total, 3)})})


class ExportPipesAnswer(Capability):
    """Export the pipes of the building model to a CSV file (header in the chosen language)."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="building.export_pipes",
        description="Export the pipes of the building model to CSV.",
        input_schema=_schema({EXPORT_PATH: {"type": "string", "minLength": 1, "default": DEFAULT_EXPORT}}),
        outputs=[OUT],
        timeout_ms=30_000,
        idempotent=True,
        intent_hints={"keywords": ["export", "exportar", "exporte", "csv", "planilha", "spreadsheet", "arquivo", "file"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """List the pipes, then write them with the built-in export_csv."""
        words = _WORDS[inputs[LANG]]
        _, pipes = await _pipes(inputs, context)
        columns = ["id", "material_name", "diameter_mm", "length_m", "level"]
        done = await ExportCsv().execute(
            {"infobim.pipes": pipes, LANG: inputs[LANG], EXPORT_PATH: inputs[EXPORT_PATH], "infobim.export.columns": columns}, context
        )
        target, rows = done.outputs["infobim.export.file"], done.outputs["infobim.export.rows"]
        return Result(outputs={OUT: _answer("success", words["csv"].format(n=rows, path=target), {"file": target, "rows": rows})})


CAPABILITIES = [ListPipesAnswer, ExportPipesAnswer]
