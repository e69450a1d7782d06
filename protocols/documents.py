"""Reading documents: JSON, YAML or TOML bytes into plain data, with an error that names the
file, the line and the column.

Every document ontoflow reads (a workflow manifest, a plan, a pipeline, a domain manifest, an
input file, a configuration file) comes through :func:`decode_document`, so a syntax error reads
the same whichever it was. :func:`document_kind` tells a decoded run document's kind (one rule
for the client, the checker and the daemon).

A daemon reads a ``Submit``'s document from untrusted bytes with
:func:`decode_submitted_document`, the first time those bytes arrive, and calls
:func:`submit_fingerprint` / :func:`idempotency_conflict` when a submit carries an
``idempotency_key`` that already names a run: the key is a promise that a re-sent submit is
*the same* submit (as a Step Functions execution name is), so one that differs is refused,
never silently answered with the old run. All pure functions (no I/O, no clock).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.protocols._msgpack_keys import duplicate_key
from ontoflow.protocols._yaml import EMPTY_YAML, check_yaml_aliases, decode_yaml
from ontoflow.protocols.errors import ManifestError, Problem

__all__ = [
    "check_kind",
    "decode_document",
    "decode_submitted_document",
    "document_kind",
    "idempotency_conflict",
    "oversized_int_path",
    "refuse_duplicate_keys",
    "submit_fingerprint",
]


def decode_document(data: bytes, fmt: str, *, source: str = "") -> Any:
    """Decode a JSON, YAML or TOML document into plain Python data.

    Args:
        data: the document's bytes.
        fmt: ``json``, ``yaml`` (or ``yml``) or ``toml``.
        source: the file the bytes came from, named in the error.

    Raises:
        ManifestError: when the bytes are not a document of that format (the message gives
            the line and column, counted from 1), a YAML document is empty, a number is an
            integer past 64 bits (no message can carry it), or ``fmt`` is unknown.
    """
    fmt = fmt.lower().lstrip(".")
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM (Windows editors): YAML skipped it, JSON/TOML failed
    try:
        if fmt in ("yaml", "yml"):
            document = decode_yaml(data)
            if document is None:  # no content, only comments, or a bare null: no map to read
                raise ManifestError(Problem(path="", message=EMPTY_YAML), source=source)
            if b"*" in data:  # an alias may share a collection many times, or inside itself
                check_yaml_aliases(document, source)
            return _within_64_bits(document, source, data)
        if fmt == "json":
            document = _within_64_bits(msgspec.json.decode(data), source, data)
            _check_json_keys(data)
            return document
        if fmt == "toml":
            return _within_64_bits(msgspec.toml.decode(data), source, data)
    except msgspec.DecodeError as exc:
        problem = Problem(path="", message=f"not valid {fmt.upper()}{_syntax_error(exc, data)}")
        raise ManifestError(problem, source=source) from None
    except UnicodeDecodeError:  # msgspec's JSON and TOML decoders raise it as it is
        problem = Problem(path="", message=f"not valid {fmt.upper()}{_not_utf8(data)}")
        raise ManifestError(problem, source=source) from None
    except RecursionError:
        problem = Problem(path="", message=f"not valid {fmt.upper()}: nested deeper than the decoder goes")
        raise ManifestError(problem, source=source) from None
    raise ManifestError(Problem(path="", message=f"unknown format {fmt!r}: use json, yaml or toml"), source=source)


def _check_json_keys(data: bytes) -> None:
    """Raise msgspec.DecodeError naming a key an object gives twice (msgspec keeps the last)."""
    import json

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:  # one pass: an object of 40,000 keys took 30 s with list.count
            if key in seen:
                raise msgspec.DecodeError(f"duplicate key {key[:80]!r}")
            seen.add(key)
        return {}  # only the keys are checked: no copy of the values is kept

    json.loads(data, object_pairs_hook=pairs)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _at_offset(data: bytes, offset: int, what: str) -> str:
    """`` at line L, column C: what`` for the byte at ``offset`` (lines and columns from 1)."""
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f" at line {line}, column {column}: {what}"


def _not_utf8(data: bytes) -> str:
    """`` at line L, column C: not UTF-8`` at the first byte that is not (lines and columns from 1)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _at_offset(data, exc.start, "not UTF-8")
    return ": not UTF-8"


#: The integers a message can carry (msgpack: a signed or an unsigned 64-bit integer).
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def oversized_int_path(data: Any) -> str | None:
    """The path (``a.b[2]``; ``""`` for ``data`` itself) of the first integer in ``data`` that no
    message can carry (past 64 bits), or None. Iterative (a deep document cannot exhaust the
    stack) and each collection once (a YAML alias bomb is not expanded).

    Args:
        data: plain decoded data (maps, lists, scalars).
    """
    if not _holds_oversized_int(data):  # the usual answer, found without making a path per value
        return None
    stack: list[tuple[str, Any]] = [("", data)]
    seen: set[int] = set()  # YAML aliases share one collection many times: each is walked once
    while stack:
        path, value = stack.pop()
        if type(value) is int:
            if not _INT_MIN <= value <= _INT_MAX:
                return path
        elif isinstance(value, (dict, list)) and id(value) not in seen:
            seen.add(id(value))
            if isinstance(value, dict):
                stack.extend((f"{path}.{k}" if path else str(k), v) for k, v in reversed(list(value.items())))
            else:
                stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None


def _holds_oversized_int(data: Any) -> bool:
    stack: list[Any] = [data]
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        if type(value) is int:
            if not _INT_MIN <= value <= _INT_MAX:
                return True
        elif isinstance(value, (dict, list)) and id(value) not in seen:
            seen.add(id(value))
            stack.extend(value.values() if isinstance(value, dict) else value)
    return False


#: Text an integer past 64 bits needs: 17 or more digits (decimal, hex; with TOML's and YAML's
#: "_" separators, YAML's "0x"/"0o" prefixes and its sexagesimal "1:0:0:...") in a row. A
#: document without such a run is not walked at all (the walk costs as much as the decoding).
_LONG_NUMBER = re.compile(rb"[0-9A-Fa-f_:xXoO]{17,}")


def _within_64_bits(document: Any, source: str, data: bytes) -> Any:
    """``document``, or a ManifestError naming where it holds an integer past 64 bits (which
    failed later, with a traceback, as the run's first message was encoded)."""
    if _LONG_NUMBER.search(data) is None and b"\x00" not in data:  # UTF-16 YAML puts a NUL between digits
        return document
    where = oversized_int_path(document)
    if where is not None:
        raise ManifestError(Problem(path=where, message="an integer past 64 bits (no message can carry it)"), source=source)
    return document


def document_kind(document: Any) -> str:
    """``pipeline`` when ``document`` has ``oml_version``, ``plan`` when it has ``steps`` and no
    ``nodes``, otherwise ``workflow`` (whose checks then name what is wrong)."""
    if isinstance(document, Mapping):
        if "oml_version" in document:
            return "pipeline"
        if "steps" in document and "nodes" not in document:
            return "plan"
    return "workflow"


#: The verb that runs each kind of document (the CLI's; ``ontoflow submit`` takes all three).
_RUN_VERB = {"workflow": "ontoflow run", "plan": "ontoflow plan run", "pipeline": "ontoflow pipeline run"}


def check_kind(document: Any, want: str, *, source: str = "") -> None:
    """Refuse a document that is plainly another kind than ``want`` (a plan given to
    ``ontoflow run``), naming what it is and the verb that runs it: the wanted kind's checks
    would call its own fields unknown. A document that says nothing of its kind passes, and
    so does a plan where a pipeline is wanted (the OML guard names what such a one lacks).

    Raises:
        ManifestError: when :func:`document_kind` finds another kind (a workflow only by its
            ``nodes``).
    """
    kind = document_kind(document)
    if kind == want or (kind == "workflow" and not (isinstance(document, Mapping) and "nodes" in document)) or (
            kind == "plan" and want == "pipeline"):
        return
    message = f"this is a {kind}, not a {want}: run it with `{_RUN_VERB[kind]}` (or `ontoflow submit`)"
    raise ManifestError(Problem(path="", message=message), source=source)


def _syntax_error(exc: msgspec.DecodeError, data: bytes) -> str:
    """`` at line L, column C: what`` for a decoder's error (lines and columns from 1)."""
    cause = exc.__context__
    mark = getattr(cause, "problem_mark", None)
    if mark is not None:  # PyYAML's MarkedYAMLError (0-based line and column)
        what = getattr(cause, "problem", None) or str(exc).splitlines()[0]
        return f" at line {mark.line + 1}, column {mark.column + 1}: {what}"
    if getattr(cause, "position", None) is not None and hasattr(cause, "reason"):
        # PyYAML's ReaderError (a byte that is not UTF-8, a control character): it gave a
        # position in a two-line message ("in "<byte string>", position 8"), no line.
        if b"\0" in data or not _is_utf8(data):
            return _not_utf8(data) if not _is_utf8(data) else _at_offset(data, data.index(b"\0"), "a NUL character")
        text = data.decode("utf-8")
        offset = len(text[:cause.position].encode("utf-8"))
        return _at_offset(data, offset, f"a character YAML does not allow (#x{cause.character:04x})")
    if getattr(cause, "lineno", None) is not None:  # tomllib's TOMLDecodeError (3.14+)
        what = getattr(cause, "msg", str(cause)).split(" (at ")[0]
        return f" at line {cause.lineno}, column {cause.colno}: {what}"
    text = str(exc)
    found = re.search(r"^(.*?) \(at line (\d+), column (\d+)\)$", text)  # tomllib before 3.14
    if found is not None:
        return f" at line {found[2]}, column {found[3]}: {found[1]}"
    found = re.search(r"^(.*?) \(at end of document\)$", text)  # tomllib: the last line, past its end
    if found is not None:
        return _at_offset(data, len(data), found[1])
    found = re.search(r"^(.*?) \(byte (\d+)\)$", text)  # msgspec.json: a byte offset
    if found is not None:
        return _at_offset(data, min(int(found[2]), len(data)), found[1].removeprefix("JSON is malformed: "))
    if "truncated" in text:  # msgspec.json at the end of the bytes
        line, column = data.count(b"\n") + 1, len(data) - (data.rfind(b"\n") + 1) + 1
        return f" at line {line}, column {column}: unexpected end of the document"
    return f": {text}"


# -- a submitted document ------------------------------------------------------------------------

_document_decoder = msgspec.msgpack.Decoder(dict[str, Any])
_canonical = msgspec.msgpack.Encoder(order="deterministic")


def decode_submitted_document(body: bytes | memoryview) -> dict[str, Any]:
    """The submitted document of a ``SubmitRequest`` (its ``manifest``, still encoded).

    Total on untrusted bytes: whatever the decoder raises (a ``DecodeError``, a string that is
    not UTF-8, nesting deeper than the stack) is the client's mistake, reported as such.

    Args:
        body: the encoded document.

    Returns:
        The document, a map with string keys.

    Raises:
        ManifestError: naming the path ``manifest`` and what is wrong (never the bytes).
    """
    try:
        return _document_decoder.decode(body)
    except UnicodeDecodeError:
        message = "holds a string that is not valid UTF-8"
    except RecursionError:
        message = "is nested too deeply"
    except Exception:  # DecodeError, ValidationError, MemoryError: not a readable map
        message = "expected an object with string keys"
    raise ManifestError(Problem(path="manifest", message=message), source="submitted document")


def refuse_duplicate_keys(body: bytes, document: Any) -> None:
    """Refuse a submitted document one of whose maps gives a key twice (msgpack keeps the last
    silently; a YAML or JSON file with it is refused), naming the map's path and the key, never
    a value. Ask once per document (its cost: ``protocols._msgpack_keys``).

    Args:
        body: the encoded document, as :func:`decode_submitted_document` decoded it.
        document: what it decoded to.

    Raises:
        ManifestError: at ``manifest.<path of the map>``: ``duplicate key 'k'``.
    """
    found = duplicate_key(body, document)
    if found is not None:
        path, key = found
        where = f"manifest.{path}" if path and not path.startswith("[") else f"manifest{path}"
        raise ManifestError(Problem(path=where, message=f"duplicate key {key!r}: a map gives it twice (only one may be meant)"),
                            source="submitted document")


def submit_fingerprint(document: bytes | Mapping[str, Any], inputs: Mapping[str, Any], *,
                       manifest_hash: str = "", deadline_ms: int | None = None) -> str:
    """A digest of what a submit asks for: the document, its inputs and its deadline.

    Two submits with equal fingerprints ask for the same run. Inputs are encoded in a
    deterministic key order, so a client that builds the same map in another order gets the
    same fingerprint; the document counts by its encoded bytes when it is given encoded (a
    client re-sending a submit sends the same bytes) and canonically encoded otherwise.

    Args:
        document: the manifest, encoded (as a ``SubmitRequest`` carries it) or decoded.
        inputs: the submitted inputs.
        manifest_hash: the client's hash of the document's source, if it sent one.
        deadline_ms: the submit's deadline.

    Returns:
        A hex digest (SHA-256), safe to journal and to log (it reveals no value).
    """
    digest = hashlib.sha256()
    body = bytes(document) if isinstance(document, (bytes, bytearray, memoryview)) else _canonical.encode(document)
    for part in (body, _canonical.encode(dict(inputs)), manifest_hash.encode(), repr(deadline_ms).encode()):
        digest.update(len(part).to_bytes(8, "big"))  # length-prefixed: no two splits collide
        digest.update(part)
    return digest.hexdigest()


def idempotency_conflict(key: str, recorded: str | None, submitted: str) -> str | None:
    """Whether a submit re-using ``key`` asks for something else than the run it names.

    Args:
        key: the idempotency key (named in the message: the client chose it, it is no value).
        recorded: the fingerprint recorded with the key's run (None when the run predates
            fingerprints: it is then taken as the same submit, as before).
        submitted: the fingerprint of the submit now received.

    Returns:
        None when it is the same submit (answer with the existing run), else the message of
        the ``idempotency_conflict`` error to answer with.
    """
    if recorded is None or recorded == submitted:
        return None
    return (f"idempotency key {key!r} was already used for a run with a different manifest, inputs or "
            "deadline; use a new key for a new run, or re-send exactly the first submit")
