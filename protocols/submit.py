"""Reading a ``Submit`` as a daemon must: an import path kept for its callers; the functions
live in ``protocols.documents`` with the rest of reading documents."""

from ontoflow.protocols.documents import decode_submitted_document, idempotency_conflict, submit_fingerprint

__all__ = ["decode_submitted_document", "idempotency_conflict", "submit_fingerprint"]
