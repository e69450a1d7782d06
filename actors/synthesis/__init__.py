"""Pipeline synthesis (seed 003): from a request and a discovery summary to an OML pipeline.

Discovery summarises a SQLite database (tables, columns, types, row counts) without a row or a
secret in it; the deterministic synthesiser writes a pipeline of the built-in components from
the request and that summary, the same bytes every time; the contract block and the
regeneration prompt are what a model-backed synthesiser is given.
"""

from pathlib import Path

from ontoflow.actors.synthesis._capabilities import (
    CHAT_CAPABILITIES,
    AskForDetails,
    CaptureIntent,
    CompilePipeline,
    DiscoverSource,
    GuardPipeline,
    HandOver,
    RegeneratePipeline,
    ReportProblem,
    SynthesizePipeline,
)
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

#: Seed 003's chat state machine: a workflow manifest shipped with the package.
CHAT_FSM = Path(__file__).with_name("chat_fsm.yaml")

__all__ = [
    "CHAT_CAPABILITIES",
    "CHAT_FSM",
    "WRITERS",
    "AskForDetails",
    "CaptureIntent",
    "ColumnSummary",
    "CompilePipeline",
    "DiscoverSource",
    "DiscoverySummary",
    "GuardPipeline",
    "HandOver",
    "RegeneratePipeline",
    "ReportProblem",
    "SourceNotFoundError",
    "SynthesisError",
    "SynthesisRequest",
    "SynthesizePipeline",
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
