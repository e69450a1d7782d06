"""``csv.writer`` and ``jsonl.writer``: stream a dataset into a file (write mode).

Both read the spool one batch at a time and write the file under a temporary name, renamed
into place at the end, so a reader never sees half a file and re-running is safe
(idempotent).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any, ClassVar

import anyio
import msgspec

from ontoflow.actors.capabilities.data._dataset import check_ref, read_batches
from ontoflow.actors.capabilities.data._keys import DATASET, DELIMITER, FILE, HEADER, PATH, ROWS
from ontoflow.actors.capability import Capability, PermanentError
from ontoflow.protocols import CapabilityMetadata, RetryPolicy, StepContext

__all__ = ["CsvWriter", "JsonlWriter"]

_DATASET_INPUT = {"type": "object", "description": "a dataset reference (see actors.capabilities.data)"}


def _target(inputs: dict[str, Any]) -> tuple[Path, Path]:
    path = Path(inputs[PATH]).expanduser()
    if path.is_dir():
        raise PermanentError(f"{PATH} names a folder, not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path, path.with_name(f".{path.name}.{os.getpid()}.part")


def _write_csv(spool: Path, columns: list[str], target: Path, tmp: Path, delimiter: str, header: bool) -> int:
    rows = 0
    try:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, delimiter=delimiter)
            if header:
                writer.writerow(columns)
            for batch in read_batches(spool):
                writer.writerows(batch)
                rows += len(batch)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return rows


def _write_jsonl(spool: Path, columns: list[str], target: Path, tmp: Path) -> int:
    rows = 0
    encoder = msgspec.json.Encoder()
    try:
        with tmp.open("wb") as fh:
            for batch in read_batches(spool):
                fh.write(encoder.encode_lines([dict(zip(columns, row, strict=False)) for row in batch]))
                rows += len(batch)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return rows


class CsvWriter(Capability):
    """Write a dataset to a CSV file.

    Inputs: ``data.dataset``, ``data.path``, ``data.delimiter`` (one character, default
    ``,``), ``data.header`` (default true). Outputs: ``data.file`` (the path written) and
    ``data.rows``.
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="csv.writer",
        description="Write a dataset to a CSV file, streaming it batch by batch.",
        events=["success", "failure"],
        input_schema={
            "type": "object",
            "properties": {
                DATASET: _DATASET_INPUT,
                PATH: {"type": "string", "minLength": 1},
                DELIMITER: {"type": "string", "minLength": 1, "maxLength": 1, "default": ","},
                HEADER: {"type": "boolean", "default": True},
            },
            "required": [DATASET, PATH],
        },
        outputs=[FILE, ROWS],
        retry=RetryPolicy(max_retries=2),
        timeout_ms=600_000,
        idempotent=True,
        flow={"modes": ["write"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        spool, columns = check_ref(inputs[DATASET])
        target, tmp = _target(inputs)
        rows = await anyio.to_thread.run_sync(_write_csv, spool, columns, target, tmp, inputs[DELIMITER], inputs[HEADER])
        return {FILE: str(target), ROWS: rows}


class JsonlWriter(Capability):
    """Write a dataset to a JSON Lines file: one object per row, keyed by column.

    Inputs: ``data.dataset``, ``data.path``. Outputs: ``data.file`` and ``data.rows``.
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="jsonl.writer",
        description="Write a dataset to a JSON Lines file, streaming it batch by batch.",
        events=["success", "failure"],
        input_schema={
            "type": "object",
            "properties": {DATASET: _DATASET_INPUT, PATH: {"type": "string", "minLength": 1}},
            "required": [DATASET, PATH],
        },
        outputs=[FILE, ROWS],
        retry=RetryPolicy(max_retries=2),
        timeout_ms=600_000,
        idempotent=True,
        flow={"modes": ["write"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        spool, columns = check_ref(inputs[DATASET])
        target, tmp = _target(inputs)
        rows = await anyio.to_thread.run_sync(_write_jsonl, spool, columns, target, tmp)
        return {FILE: str(target), ROWS: rows}
