"""Built-in data capabilities: ``sqlite.extractor``, ``table.transform``, ``csv.writer``,
``jsonl.writer``.

They meet through the ``data.*`` ontology keys. Rows never travel through the orchestrator:
each producing step spools them in bounded batches to a file in the run's work folder and
outputs a *dataset reference* (``data.dataset``) that the next step streams from (see
``_dataset``), so a table larger than memory is never loaded whole.
"""

from ontoflow.actors.capabilities.data._dataset import (
    BATCH_BYTES,
    DATASET_FORMAT,
    MAX_FRAME_BYTES,
    DatasetSpool,
    check_ref,
    dataset_ref,
    read_batches,
    remove_run_spool,
    remove_runs_spools,
    run_spool_folder,
    spool_path,
)
from ontoflow.actors.capabilities.data._expression import MAX_DEPTH, ExpressionError, compile_filter
from ontoflow.actors.capabilities.data._sqlite import SqliteExtractor
from ontoflow.actors.capabilities.data._transform import TableTransform
from ontoflow.actors.capabilities.data._writers import CsvWriter, JsonlWriter

__all__ = [
    "BATCH_BYTES",
    "DATASET_FORMAT",
    "MAX_DEPTH",
    "MAX_FRAME_BYTES",
    "CsvWriter",
    "DatasetSpool",
    "ExpressionError",
    "JsonlWriter",
    "SqliteExtractor",
    "TableTransform",
    "check_ref",
    "compile_filter",
    "dataset_ref",
    "read_batches",
    "remove_run_spool",
    "remove_runs_spools",
    "run_spool_folder",
    "spool_path",
]
