"""The InfoBIM example capabilities (seed 000): small, real work over a building model file.

They meet only through ontology keys on the context bus, never by calling each other::

    list_materials  infobim.model.path, lang            -> infobim.materials
    list_pipes      infobim.model.path, lang, page      -> infobim.pipes, infobim.pipes.cursor
    export_csv      infobim.pipes, lang, export path    -> infobim.export.file, infobim.export.rows
    summarize       pipes, materials, export file, lang -> infobim.report.summary
    report_error    ontoflow.last_failure, lang         -> infobim.report.error

``lang`` is ``obdc.base.lang.code`` (``en`` or ``pt_BR``). Every one of them is idempotent: its
outputs are a function of its inputs and the files it reads, and ``export_csv`` replaces its file
atomically, so re-running any of them after a lost worker is safe.
"""

from __future__ import annotations

import contextlib
import csv
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import anyio
import structlog

from ontoflow.actors.capabilities._building import (
    CSV_COLUMNS,
    DEFAULT_LANG,
    LANG_KEY,
    LANGUAGES,
    column_header,
    format_number,
    load_model,
    localized,
    model_file,
    text,
)
from ontoflow.actors.capability import Capability, PermanentError, Result
from ontoflow.protocols import CapabilityMetadata, Segment, StepContext

__all__ = ["ExportCsv", "ListMaterials", "ListPipes", "ReportError", "Summarize"]

log = structlog.get_logger()

_PREFIX = "infobim.capability.base."
MODEL_PATH = "infobim.model.path"
MATERIALS = "infobim.materials"
PIPES = "infobim.pipes"
PAGE_SIZE = "infobim.pipes.page_size"
CURSOR = "infobim.pipes.cursor"
EXPORT_PATH = "infobim.export.path"
EXPORT_COLUMNS = "infobim.export.columns"
EXPORT_FILE = "infobim.export.file"
EXPORT_ROWS = "infobim.export.rows"
SUMMARY = "infobim.report.summary"
ERROR_LINE = "infobim.report.error"
LAST_FAILURE = "ontoflow.last_failure"

_LANG = {"type": "string", "enum": list(LANGUAGES), "default": DEFAULT_LANG}
_MODEL = {"type": "string", "minLength": 1, "description": "path of the building model JSON file"}
_OBJECTS = {"type": "array", "items": {"type": "object"}}


def _schema(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


class ListMaterials(Capability):
    """List the materials of a building model, named in the requested language.

    Events: ``success`` (at least one material), ``empty`` (the model declares none),
    ``failure`` (the model file is missing, unreadable or invalid: not retried).
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=_PREFIX + "list_materials",
        description="List the materials of a building model with their localized names.",
        events=["success", "empty", "failure"],
        input_schema=_schema({MODEL_PATH: _MODEL, LANG_KEY: _LANG}, required=[MODEL_PATH]),
        outputs=[MATERIALS],
        timeout_ms=10_000,
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Read the model and return ``infobim.materials`` as ``[{id, name}]``.

        Raises:
            PermanentError: when the model file is missing, unreadable or invalid.
        """
        model = await load_model(model_file(inputs[MODEL_PATH], context.system.worktree))
        lang = inputs[LANG_KEY]
        materials = [{"id": m.id, "name": localized(m.names, lang, m.id)} for m in model.materials]
        return Result(event="success" if materials else "empty", outputs={MATERIALS: materials})


class ListPipes(Capability):
    """List the pipes of a building model one page at a time, accumulating them.

    Each call reads the page at ``infobim.pipes.cursor`` and appends it to the pipes listed so
    far (the ``infobim.pipes`` input; a cursor of 0 starts afresh, so a re-run is harmless).
    Events: ``paginated`` (more pages remain: route it back to this block), ``success`` (the
    last page was read; the cursor is then the number of pipes), ``empty`` (the model has no
    pipes), ``failure`` (the model cannot be read: not retried).
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=_PREFIX + "list_pipes",
        description="List the pipes of a building model, paginated, with localized material names.",
        events=["success", "paginated", "empty", "failure"],
        requires=[_PREFIX + "list_materials"],
        input_schema=_schema(
            {
                MODEL_PATH: _MODEL,
                LANG_KEY: _LANG,
                PAGE_SIZE: {"type": "integer", "minimum": 1, "maximum": 10_000, "default": 5},
                CURSOR: {"type": "integer", "minimum": 0, "default": 0},
                PIPES: {**_OBJECTS, "description": "pipes listed by earlier pages"},
                MATERIALS: {**_OBJECTS, "default": [], "description": "[{id, name}] from list_materials"},
            },
            required=[MODEL_PATH],
        ),
        outputs=[PIPES, CURSOR],
        timeout_ms=10_000,
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Read one page of pipes and return all the pipes listed so far and the next cursor.

        Raises:
            PermanentError: when the model file is missing, unreadable or invalid.
        """
        model = await load_model(model_file(inputs[MODEL_PATH], context.system.worktree))
        total = len(model.pipes)
        if total == 0:
            return Result(event="empty", outputs={PIPES: [], CURSOR: 0})
        lang = inputs[LANG_KEY]
        names = {m.get("id"): m.get("name") for m in inputs[MATERIALS]}
        # Names the materials list lacks (list_materials ran in another language, or not at
        # all) come from the model itself, then fall back to the material id.
        own = {m.id: localized(m.names, lang, m.id) for m in model.materials}
        cursor, size = inputs[CURSOR], inputs[PAGE_SIZE]
        end = min(cursor + size, total)
        page = [
            {
                "id": p.id,
                "material": p.material,
                "material_name": names.get(p.material) or own.get(p.material, p.material),
                "diameter_mm": p.diameter_mm,
                "length_m": p.length_m,
                "level": p.level,
            }
            for p in model.pipes[cursor:end]
        ]
        listed = list(inputs.get(PIPES) or []) if cursor > 0 else []
        listed.extend(page)
        next_cursor = max(end, cursor)
        event = "paginated" if next_cursor < total else "success"
        return Result(event=event, outputs={PIPES: listed, CURSOR: next_cursor})


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    """Write the CSV next to ``path`` and move it into place, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class ExportCsv(Capability):
    """Write the listed pipes to a CSV file whose header is in the requested language.

    The file is written to a temporary file in the same folder and renamed over the target
    (atomic on POSIX), and the folder is created when missing. Events: ``success``,
    ``failure`` (the file cannot be written: not retried).
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=_PREFIX + "export_csv",
        description="Export pipes to a CSV file with a localized header.",
        events=["success", "failure"],
        input_schema=_schema(
            {
                PIPES: _OBJECTS,
                LANG_KEY: _LANG,
                EXPORT_PATH: {"type": "string", "minLength": 1, "description": "where to write the CSV"},
                EXPORT_COLUMNS: {
                    "type": "array",
                    "items": {"type": "string", "enum": list(CSV_COLUMNS)},
                    "minItems": 1,
                    "uniqueItems": True,
                    "default": list(CSV_COLUMNS),
                },
            },
            required=[PIPES, EXPORT_PATH],
        ),
        outputs=[EXPORT_FILE, EXPORT_ROWS],
        timeout_ms=30_000,
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Write the CSV; return its path (as given) and its number of data rows.

        Raises:
            PermanentError: when the file or its folder cannot be written.
        """
        lang, columns, target = inputs[LANG_KEY], inputs[EXPORT_COLUMNS], inputs[EXPORT_PATH]
        header = [column_header(c, lang) for c in columns]
        rows = [[pipe.get(c, "") for c in columns] for pipe in inputs[PIPES]]
        try:
            await anyio.to_thread.run_sync(_write_csv, Path(target), header, rows)
        except OSError as exc:
            name = os.path.basename(target) or target
            raise PermanentError(f"cannot write CSV {name!r}: {exc.strerror or type(exc).__name__}") from None
        log.debug("csv_exported", rows=len(rows), columns=len(columns))
        return Result(outputs={EXPORT_FILE: target, EXPORT_ROWS: len(rows)})


class Summarize(Capability):
    """Write a short report in the requested language: how many pipes, how long, per material.

    With no pipes it says so (the ``no_pipes`` block of the example uses it that way).
    Events: ``success``.
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=_PREFIX + "summarize",
        description="Summarize the pipes (count, total length, per material) in the requested language.",
        events=["success"],
        input_schema=_schema(
            {
                PIPES: {**_OBJECTS, "default": []},
                MATERIALS: {**_OBJECTS, "default": []},
                EXPORT_FILE: {"type": "string"},
                EXPORT_ROWS: {"type": "integer", "minimum": 0},
                LANG_KEY: _LANG,
            }
        ),
        outputs=[SUMMARY],
        timeout_ms=5_000,
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Return ``infobim.report.summary`` and the same text as a ``REPORT`` segment."""
        lang, pipes = inputs[LANG_KEY], inputs[PIPES]
        summary = _summary(pipes, inputs[MATERIALS], lang, inputs.get(EXPORT_FILE), inputs.get(EXPORT_ROWS))
        segment = Segment(id=f"{context.system.step_id or 'summary'}.report", type="REPORT", content=summary)
        return Result(outputs={SUMMARY: summary}, segments=[segment])


def _count(n: int, lang: str) -> str:
    return f"{n} {text('pipe' if n == 1 else 'pipes', lang)}"


def _summary(pipes: list[dict[str, Any]], materials: list[dict[str, Any]], lang: str, file: str | None, rows: int | None) -> str:
    if not pipes:
        return text("no_pipes", lang)
    names = {m.get("id"): m.get("name") for m in materials}
    # Materials in the model's order first, then any the list does not know, in pipe order.
    order = [m.get("id") for m in materials]
    totals: dict[Any, list[float]] = {}
    for pipe in pipes:
        count_length = totals.setdefault(pipe.get("material"), [0, 0.0])
        count_length[0] += 1
        count_length[1] += float(pipe.get("length_m") or 0.0)
        if pipe.get("material") not in order:
            order.append(pipe.get("material"))
    total_length = sum(length for _, length in totals.values())
    parts = []
    for mat in order:
        if mat in totals:
            count, length = totals[mat]
            name = names.get(mat) or next((p.get("material_name") for p in pipes if p.get("material") == mat), None) or str(mat)
            parts.append(f"{name}: {_count(int(count), lang)}, {format_number(length, lang)} m")
    out = f"{_count(len(pipes), lang)}, {format_number(total_length, lang)} m {text('in_total', lang)}. "
    out += f"{text('by_material', lang)}: {'; '.join(parts)}."
    if file:
        out += f" {text('csv', lang)}: {file}"
        out += f" ({rows} {text('rows', lang)})." if rows is not None else "."
    return out


class ReportError(Capability):
    """Turn the run's last failure into one line a person can read.

    Reads ``ontoflow.last_failure`` (the record the orchestrator keeps of the step that failed:
    ``capability``, ``block``, ``event``, ``reason``, ``error``; any may be missing).
    Events: ``success``.
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id=_PREFIX + "report_error",
        description="Describe the run's last failure in one line.",
        events=["success"],
        input_schema=_schema({LAST_FAILURE: {"type": "object"}, LANG_KEY: _LANG}, required=[LAST_FAILURE]),
        outputs=[ERROR_LINE],
        timeout_ms=5_000,
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Return ``infobim.report.error``: who failed, with which event and why, on one line."""
        failure, lang = inputs[LAST_FAILURE], inputs[LANG_KEY]
        who = failure.get("block") or failure.get("capability") or text("unknown_step", lang)
        event = failure.get("event") or "failure"
        line = f"{who} {text('failed', lang)}" if event == "failure" else f"{who} {text('ended_with', lang)} {event}"
        if failure.get("reason"):
            line += f" ({failure['reason']})"
        if failure.get("error"):
            line += f": {failure['error']}"
        return Result(outputs={ERROR_LINE: " ".join(str(line).split())})
