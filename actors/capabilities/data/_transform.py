"""``table.transform``: filter, select and rename a dataset's columns (transform mode).

The order is fixed: ``data.filter`` (an expression over the *input* columns, see
``_expression``), then ``data.select`` (the columns kept, in that order), then
``data.rename`` (old name -> new name). The result is a new spooled dataset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capabilities.data._dataset import DatasetSpool, check_ref, read_batches, spool_path
from ontoflow.actors.capabilities.data._expression import ExpressionError, compile_filter
from ontoflow.actors.capabilities.data._keys import COMMON_INPUTS, DATASET, FILTER, RENAME, ROWS, SELECT, WORK_DIR
from ontoflow.actors.capability import Capability, PermanentError, Result
from ontoflow.protocols import CapabilityMetadata, StepContext

__all__ = ["TableTransform"]


def _plan(inputs: dict[str, Any], columns: list[str]) -> tuple[Any, list[int], list[str]]:
    keep = None
    if FILTER in inputs:
        try:
            keep = compile_filter(inputs[FILTER], columns)
        except ExpressionError as exc:
            raise PermanentError(f"{FILTER}: {exc}") from None
    select = inputs.get(SELECT) or columns
    # Named by position, not by the name given: an input's value never reaches an error (and
    # a name of a megabyte made one of that size).
    known = {name: i for i, name in reversed(list(enumerate(columns)))}
    for n, name in enumerate(select):
        if name not in known:
            raise PermanentError(f"{SELECT}[{n}] names a column the dataset does not have")
    positions = [known[name] for name in select]
    rename = inputs.get(RENAME, {})
    chosen = set(select)
    for n, old in enumerate(rename):
        if old not in chosen:
            raise PermanentError(f"{RENAME}: its key #{n + 1} renames a column that is not selected")
    out = [rename.get(name, name) for name in select]
    if len(set(out)) != len(out):
        raise PermanentError("the selected and renamed columns are not unique")
    return keep, positions, out


def _transform(spool: Path, keep: Any, positions: list[int], width: int, columns: list[str], target: Path) -> dict[str, Any]:
    identity = positions == list(range(width))
    with DatasetSpool(target, columns) as out:
        for batch in read_batches(spool):
            if keep is not None:
                batch = [row for row in batch if keep(row)]
            if not identity:
                batch = [[row[p] for p in positions] for row in batch]
            out.write(batch)
    return out.ref


class TableTransform(Capability):
    """Filter, select and rename the columns of a dataset, streaming it batch by batch.

    Inputs: ``data.dataset``; optional ``data.filter`` (expression), ``data.select`` (list
    of columns), ``data.rename`` (map). Outputs: ``data.dataset`` and ``data.rows``.
    Events: ``success``, ``empty`` (no row left).
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="table.transform",
        description="Filter, select and rename the columns of a dataset.",
        events=["success", "empty", "failure"],
        input_schema={
            "type": "object",
            "properties": {
                DATASET: {"type": "object"},
                FILTER: {"type": "string", "minLength": 1},
                SELECT: {"type": "array", "items": {"type": "string"}, "minItems": 1},
                RENAME: {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
                **COMMON_INPUTS,
            },
            "required": [DATASET],
        },
        outputs=[DATASET, ROWS],
        timeout_ms=600_000,
        idempotent=True,
        flow={"modes": ["transform"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        spool, columns = check_ref(inputs[DATASET], context.system.run_id)
        keep, positions, out_columns = _plan(inputs, columns)
        target = spool_path(inputs.get(WORK_DIR), context)
        ref = await anyio.to_thread.run_sync(_transform, spool, keep, positions, len(columns), out_columns, target)
        return Result(event="success" if ref["rows"] else "empty", outputs={DATASET: ref, ROWS: ref["rows"]})
