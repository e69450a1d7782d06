"""Pipeline synthesis (seed 003): from a request and a discovery summary to an OML pipeline.

Discovery summarises a SQLite database (tables, columns, types, row counts) without a row or a
secret in it; the deterministic synthesiser writes a pipeline of the built-in components from
the request and that summary, the same bytes every time; the contract block and the
regeneration prompt are what a model-backed synthesiser is given.
"""

from ontoflow.actors.synthesis._contract import contract_block, regeneration_prompt
from ontoflow.actors.synthesis._deterministic import WRITERS, SynthesisRequest, render_pipeline, synthesize
from ontoflow.actors.synthesis._discovery import (
    ColumnSummary,
    DiscoverySummary,
    TableSummary,
    discover_sqlite,
    quote_identifier,
)
from ontoflow.actors.synthesis.errors import (
    SourceNotFoundError,
    SynthesisError,
    UnknownTableError,
    UnsupportedFormatError,
)

__all__ = [
    "WRITERS",
    "ColumnSummary",
    "DiscoverySummary",
    "SourceNotFoundError",
    "SynthesisError",
    "SynthesisRequest",
    "TableSummary",
    "UnknownTableError",
    "UnsupportedFormatError",
    "contract_block",
    "discover_sqlite",
    "quote_identifier",
    "regeneration_prompt",
    "render_pipeline",
    "synthesize",
]
