"""The ontology keys the data capabilities read and write (one place, so they meet by key)."""

from __future__ import annotations

__all__ = [
    "BATCH_ROWS",
    "COMMON_INPUTS",
    "CONNECTION",
    "DATABASE",
    "DATASET",
    "DELIMITER",
    "FILE",
    "FILTER",
    "HEADER",
    "PATH",
    "QUERY",
    "RENAME",
    "ROWS",
    "SELECT",
    "WORK_DIR",
]

CONNECTION = "data.connection"
DATABASE = "data.database"
QUERY = "data.query"
DATASET = "data.dataset"
PATH = "data.path"
DELIMITER = "data.delimiter"
HEADER = "data.header"
SELECT = "data.select"
RENAME = "data.rename"
FILTER = "data.filter"
FILE = "data.file"
ROWS = "data.rows"
BATCH_ROWS = "data.batch_rows"
WORK_DIR = "data.work_dir"

#: Inputs every spooling capability takes.
COMMON_INPUTS = {
    BATCH_ROWS: {"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 5000},
    WORK_DIR: {"type": "string", "minLength": 1, "description": "root of the runs' spool folders"},
}
