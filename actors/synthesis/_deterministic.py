"""The deterministic synthesiser: a request and a discovery summary in, an OML v0.1.0 pipeline out.

The embedded default of seed 003's OML_SYNTHESIS: no model, the same request with the same
discovery always gives the same pipeline, byte for byte (:func:`render_pipeline`). It uses the
built-in components only: one ``sqlite.extractor`` per table, then one writer per table
(``csv.writer`` or ``jsonl.writer``), each writer needing its extractor. A request it cannot
satisfy (a table discovery did not find, a format no writer supports) raises, naming what is
missing, instead of writing a pipeline that would fail later.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import msgspec

from ontoflow.actors.synthesis._discovery import DiscoverySummary, TableSummary, quote_identifier
from ontoflow.actors.synthesis.errors import SynthesisError, UnknownTableError, UnsupportedFormatError
from ontoflow.protocols.oml import OML_VERSION
from ontoflow.protocols.plan import MAX_NAME_CHARS, MAX_PLAN_STEPS

__all__ = ["WRITERS", "SynthesisRequest", "check_request", "render_pipeline", "synthesize"]

#: Output format -> the component that writes it, and the file suffix.
WRITERS: dict[str, tuple[str, str]] = {"csv": ("csv.writer", ".csv"), "jsonl": ("jsonl.writer", ".jsonl")}

_NOT_KEBAB = re.compile(r"[^a-z0-9]+")
# A separator, or a character that is not printable (a table name is the database's to choose:
# a newline or an ESC in a file name breaks scripts and drives the terminal of whoever lists the
# folder, as a C1 control does (U+009B is CSI); a bidirectional control (U+202E) shows a name
# that is not the file's). str.isprintable is False for every control and format character.
def _safe_file_char(ch: str) -> str:
    return "_" if ch in "/\\" or not ch.isprintable() else ch


class SynthesisRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What the person asked for, in the pipelines domain's entities.

    Attributes:
        source: the database as the person named it: a file path, or ``@name`` (a connection
            resolved at run time, never written into the pipeline).
        tables: the tables to export; ``None`` for all of them.
        format: ``csv`` or ``jsonl``.
        destination: the folder the files are written to.
        name: the pipeline's name (kebab-case); derived from the source and format by default.
        hint: the person's words after two invalid pipelines (their answer to the hand-over
            question), for a model-backed synthesiser; the deterministic one has no use for it.
    """

    source: str
    tables: list[str] | None = None
    format: str = "csv"
    destination: str = "./out"
    name: str | None = None
    hint: str | None = None


#: The longest slug of a table or a source in a step id or the pipeline's name: the database
#: chooses its names, and an id is at most 128 characters ("extract-", "write-", "-jsonl" and
#: a "-2" fit around it), a name at most 256.
_SLUG_CHARS = 100
#: The longest file stem, in bytes: a file name is at most 255 bytes (with "-2" and ".jsonl").
_STEM_BYTES = 200


def _kebab(text: str, fallback: str, most: int | None = None) -> str:
    slug = _NOT_KEBAB.sub("-", text.casefold()).strip("-")
    if most is not None:
        slug = slug[:most].rstrip("-")
    return slug or fallback


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _file_name(table: str, suffix: str, taken: set[str]) -> str:
    """A file name for ``table``, unique as a case- and normalisation-insensitive file system
    compares names (tables ``café`` and ``CAFÉ`` are two in SQLite, one file on macOS)."""
    stem = "".join(map(_safe_file_char, table)).encode()[:_STEM_BYTES].decode(errors="ignore")
    if stem.startswith(".") or not stem:
        stem = "_" + stem
    name, n = stem, 2
    while (key := unicodedata.normalize("NFC", name).casefold()) in taken:
        name, n = f"{stem}-{n}", n + 1
    taken.add(key)
    return name + suffix


def _unreadable(discovery: DiscoverySummary, names: list[str]) -> SynthesisError:
    listed = ", ".join(map(repr, names))
    return SynthesisError(f"{discovery.source}: the table{'s' if len(names) > 1 else ''} {listed} cannot be read here "
                          "(a virtual table of a SQLite module this worker lacks): name the tables to export")


def _chosen(request: SynthesisRequest, discovery: DiscoverySummary) -> list[TableSummary]:
    if request.tables is None:
        if discovery.unreadable:  # "all tables" cannot be met: say so rather than leave them out
            raise _unreadable(discovery, discovery.unreadable)
        if not discovery.tables:
            raise SynthesisError(f"{discovery.source} holds no table to export")
        return list(discovery.tables)
    if not request.tables:
        raise SynthesisError("the request names no table to export")
    chosen, missing = [], []
    for name in request.tables:
        table = discovery.table(name)
        if table is None:
            missing.append(name)
        elif table not in chosen:
            chosen.append(table)
    skipped = [name for name in missing if name.casefold() in {u.casefold() for u in discovery.unreadable}]
    if skipped:
        raise _unreadable(discovery, skipped)
    if missing:
        known = ", ".join(t.name for t in discovery.tables) or "none"
        raise UnknownTableError(f"{discovery.source} has no table {', '.join(map(repr, missing))} (its tables: {known})")
    return chosen


def check_request(request: SynthesisRequest, discovery: DiscoverySummary) -> list[TableSummary]:
    """The tables ``request`` exports, once it is sure a pipeline can meet it: every synthesiser
    asks this first (a model is not asked for what no pipeline can do).

    Raises:
        UnsupportedFormatError: when no writer handles ``request.format``.
        UnknownTableError: when a requested table is not in ``discovery``.
        SynthesisError: when there is nothing to export, more tables than one pipeline holds, a
            folder or a source with ``${`` in it, or a name past 256 characters.
    """
    if request.format.casefold() not in WRITERS:
        raise UnsupportedFormatError(f"no writer for the format {request.format!r}: use one of {', '.join(WRITERS)}")
    tables = _chosen(request, discovery)
    # A plan reads "${" in any setting as a reference to another step, and SQL cannot spell the
    # name without it: such a table's query and file would be rewritten when the pipeline runs.
    unnamable = [t.name for t in tables if "${" in t.name]
    if unnamable:
        raise SynthesisError(f"{discovery.source}: the table{'s' if len(unnamable) > 1 else ''} "
                             f"{', '.join(map(repr, unnamable))} cannot be exported: a pipeline reads '${{' as a "
                             "reference to another step; name the tables to export")
    # The same for the folder and the source: a pipeline's every path would hold it.
    for what, text in (("the folder", request.destination), ("the source", request.source)):
        if "${" in text:
            raise SynthesisError(f"{what} {text} cannot be written in a pipeline: it reads '${{' as a reference to "
                                 "another step; name it without '${'")
    if request.name is not None and len(name := _kebab(request.name, "pipeline")) > MAX_NAME_CHARS:
        raise SynthesisError(f"the pipeline's name would have {len(name):,} characters; at most {MAX_NAME_CHARS}: "
                             "give a shorter name")
    if 2 * len(tables) > MAX_PLAN_STEPS:  # an extractor and a writer per table: past it, no pipeline is valid
        raise SynthesisError(f"{discovery.source} has {len(tables)} tables; one pipeline exports at most "
                             f"{MAX_PLAN_STEPS // 2}: name the tables to export")
    return tables


def synthesize(request: SynthesisRequest, discovery: DiscoverySummary) -> dict[str, Any]:
    """The pipeline document for ``request`` over what ``discovery`` found.

    Raises:
        SynthesisError: as :func:`check_request`.
    """
    tables = check_request(request, discovery)
    fmt = request.format.casefold()
    writer, suffix = WRITERS[fmt]
    where: dict[str, str] = (
        {"connection": request.source} if request.source.startswith("@") else {"database": request.source}
    )
    destination = request.destination.rstrip("/") or "."
    ids: set[str] = set()
    files: set[str] = set()
    steps: list[dict[str, Any]] = []
    for table in tables:
        slug = _kebab(table.name, "table", _SLUG_CHARS)
        extract = _unique(f"extract-{slug}", ids)
        steps.append({"id": extract, "component": "sqlite.extractor", "mode": "read",
                      "config": {"query": f"SELECT * FROM {quote_identifier(table.name)}", **where}})
        config: dict[str, Any] = {"path": f"{destination}/{_file_name(table.name, suffix, files)}"}
        if fmt == "csv":
            config["header"] = True
        steps.append({"id": _unique(f"write-{slug}-{fmt}", ids), "component": writer, "mode": "write",
                      "needs": [extract], "config": config})
    source_stem = _kebab(request.source.removeprefix("@").rsplit("/", 1)[-1].rsplit(".", 1)[0], "source", _SLUG_CHARS)
    name = request.name or f"{source_stem}-to-{fmt}"
    return {"oml_version": OML_VERSION, "name": _kebab(name, "pipeline"), "steps": steps}


def render_pipeline(document: dict[str, Any]) -> str:
    """The pipeline as YAML text, the same bytes for the same document."""
    return msgspec.yaml.encode(document).decode()
