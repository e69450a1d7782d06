"""Reading documents: JSON, YAML or TOML bytes into plain data, with an error that names the
file, the line and the column.

Every document ontoflow reads (a workflow manifest, a plan, a pipeline, a domain manifest, an
input file, a configuration file) comes through :func:`decode_document`, so a syntax error reads
the same whichever it was. :func:`document_kind` tells a decoded run document's kind (one rule
for the client, the checker and the daemon).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.protocols.errors import ManifestError, Problem

__all__ = ["decode_document", "document_kind"]


def decode_document(data: bytes, fmt: str, *, source: str = "") -> Any:
    """Decode a JSON, YAML or TOML document into plain Python data.

    Args:
        data: the document's bytes.
        fmt: ``json``, ``yaml`` (or ``yml``) or ``toml``.
        source: the file the bytes came from, named in the error.

    Raises:
        ManifestError: when the bytes are not a document of that format (the message gives
            the line and column, counted from 1), or ``fmt`` is unknown.
    """
    fmt = fmt.lower().lstrip(".")
    try:
        if fmt == "json":
            return msgspec.json.decode(data)
        if fmt in ("yaml", "yml"):
            return msgspec.yaml.decode(data)
        if fmt == "toml":
            return msgspec.toml.decode(data)
    except msgspec.DecodeError as exc:
        problem = Problem(path="", message=f"not valid {fmt.upper()}{_syntax_error(exc, data)}")
        raise ManifestError(problem, source=source) from None
    raise ManifestError(Problem(path="", message=f"unknown format {fmt!r}: use json, yaml or toml"), source=source)


def document_kind(document: Any) -> str:
    """``pipeline`` when ``document`` has ``oml_version``, ``plan`` when it has ``steps`` and no
    ``nodes``, otherwise ``workflow`` (whose checks then name what is wrong)."""
    if isinstance(document, Mapping):
        if "oml_version" in document:
            return "pipeline"
        if "steps" in document and "nodes" not in document:
            return "plan"
    return "workflow"


def _syntax_error(exc: msgspec.DecodeError, data: bytes) -> str:
    """`` at line L, column C: what`` for a decoder's error (lines and columns from 1)."""
    cause = exc.__context__
    mark = getattr(cause, "problem_mark", None)
    if mark is not None:  # PyYAML's MarkedYAMLError (0-based line and column)
        what = getattr(cause, "problem", None) or str(exc).splitlines()[0]
        return f" at line {mark.line + 1}, column {mark.column + 1}: {what}"
    if getattr(cause, "lineno", None) is not None:  # tomllib's TOMLDecodeError (3.14+)
        what = getattr(cause, "msg", str(cause)).split(" (at ")[0]
        return f" at line {cause.lineno}, column {cause.colno}: {what}"
    text = str(exc)
    found = re.search(r"^(.*?) \(at line (\d+), column (\d+)\)$", text)  # tomllib before 3.14
    if found is not None:
        return f" at line {found[2]}, column {found[3]}: {found[1]}"
    found = re.search(r"^(.*?) \(byte (\d+)\)$", text)  # msgspec.json: a byte offset
    if found is not None:
        offset = min(int(found[2]), len(data))
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        return f" at line {line}, column {column}: {found[1].removeprefix('JSON is malformed: ')}"
    if "truncated" in text:  # msgspec.json at the end of the bytes
        line, column = data.count(b"\n") + 1, len(data) - (data.rfind(b"\n") + 1) + 1
        return f" at line {line}, column {column}: unexpected end of the document"
    return f": {text}"
