"""``csv.writer`` and ``jsonl.writer``: stream a dataset into a file (write mode).

Both read the spool one batch at a time and write the file under a temporary name, renamed
into place at the end, so a reader never sees half a file and re-running is safe
(idempotent). The temporary file is created new (``O_EXCL``, never through a symbolic link) under
a random name beside the target: a predictable name let whoever can write the folder plant a
link there and have the export written through it into any file the worker may write. An
existing target is replaced whole, never written into: a link or a FIFO at the target is
replaced by the file, not followed (nor blocked on).

Values are written as they are: a BLOB as its base64 text (as JSON Lines writes it; Python's
``b'...'`` spelling was no data), ``NULL`` as an empty field. A text starting with ``=``, ``+``,
``-`` or ``@`` is not altered: the file is data, not a spreadsheet (prefixing a quote would
change the values); open an untrusted export in a spreadsheet as text, not as formulas.
"""

from __future__ import annotations

import base64
import csv
import os
import secrets
from pathlib import Path
from typing import Any, ClassVar

import anyio
import msgspec

from ontoflow.actors.capabilities.data._dataset import check_ref, read_batches
from ontoflow.actors.capabilities.data._roots import check_inside_roots
from ontoflow.actors.capabilities.data._keys import DATASET, DELIMITER, FILE, HEADER, PATH, ROWS
from ontoflow.actors.capability import Capability, PermanentError
from ontoflow.protocols import CapabilityMetadata, RetryPolicy, StepContext

__all__ = ["CsvWriter", "JsonlWriter"]

# A quote as the delimiter, or a line break, writes a file no CSV reader splits back into the
# same fields (values silently merged or cut).
_NOT_DELIMITERS = frozenset('"\r\n')
_DATASET_INPUT = {"type": "object", "description": "a dataset reference (see actors.capabilities.data)"}


def _target(inputs: dict[str, Any]) -> tuple[Path, Path]:
    path = Path(inputs[PATH]).expanduser()
    check_inside_roots(path, PATH, target=True)
    if path.is_dir():
        raise PermanentError(f"{PATH} names a folder, not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path, path.with_name(f".{path.name}.{secrets.token_hex(8)}.part")


def _create(tmp: Path) -> int:
    """A new file at ``tmp``, never an existing one nor through a link (the umask applies)."""
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)


def _cell(value: Any) -> Any:
    return base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value


def _write_csv(spool: Path, columns: list[str], target: Path, tmp: Path, delimiter: str, header: bool) -> int:
    rows = 0
    fd = _create(tmp)  # before the try: a file not created here is not removed either
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, delimiter=delimiter)
            if header:
                writer.writerow(columns)
            for batch in read_batches(spool):
                writer.writerows([_cell(v) for v in row] for row in batch)
                rows += len(batch)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return rows


def _write_jsonl(spool: Path, columns: list[str], target: Path, tmp: Path) -> int:
    rows = 0
    encoder = msgspec.json.Encoder()
    fd = _create(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
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
        if inputs[DELIMITER] in _NOT_DELIMITERS:  # the file would not read back as the rows written
            raise PermanentError(f"{DELIMITER} may not be a double quote or a line break")
        spool, columns = check_ref(inputs[DATASET], context.system.run_id)
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
        spool, columns = check_ref(inputs[DATASET], context.system.run_id)
        seen: dict[str, int] = {}
        for i, column in enumerate(columns, 1):  # an object keeps one value per key: the other was lost
            if column in seen:
                raise PermanentError(f"{DATASET} has two columns of one name (columns {seen[column]} and {i}): "
                                     "name them apart (AS in the query, or data.rename)")
            seen[column] = i
        target, tmp = _target(inputs)
        rows = await anyio.to_thread.run_sync(_write_jsonl, spool, columns, target, tmp)
        return {FILE: str(target), ROWS: rows}
