"""Reading a ``Submit`` as a daemon must: its document from untrusted bytes, and whether a
repeated idempotency key asks for the same run.

Pure functions (no I/O, no clock). A daemon calls ``decode_submitted_document`` on the still-encoded
manifest of a ``SubmitRequest`` the first time those bytes arrive, and ``submit_fingerprint``
/ ``idempotency_conflict`` when a submit carries an ``idempotency_key`` that already names a
run: the key is a promise that a re-sent submit is *the same* submit (as a Step Functions
execution name is), so one that differs is refused, never silently answered with the old run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.protocols.errors import ManifestError, Problem

__all__ = ["decode_submitted_document", "idempotency_conflict", "submit_fingerprint"]

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
