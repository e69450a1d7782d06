"""The codes of the client API's ``Error`` reply: what each means and what a client does.

A daemon refuses a request with ``Error(code, message)`` (``protocols.client``): ``code`` is
one of :data:`ERROR_CODES`, ``message`` says why for a person (never a stack trace, never a
parameter's value). ``Error.code`` stays a ``str`` on the wire so that a client older than
its daemon still decodes a code it does not know; :data:`ErrorCode` is the type code writes.

A request the client must change before sending it again:

- ``invalid_request``: an undecodable or unknown request, a reply sent as a request, an
  ``Answer`` naming neither a run nor a token.
- ``invalid_manifest``: the document does not validate, compile or pass the contract check
  (the message names each problem's path).
- ``invalid_inputs``: the inputs do not match their capabilities' input schemas.
- ``invalid_connections``: a pipeline's connections do not fit its capabilities.
- ``invalid_answer``: a choice that is none of the question's candidates, or several
  questions open and no token.
- ``idempotency_conflict``: an idempotency key re-sent with another document, other inputs
  or another deadline.
- ``payload_too_large``: a context value bigger than the daemon's limit (the message names
  the key and the sizes).

A request about something that is not there, or not the client's:

- ``unknown_run``: no such run on this daemon.
- ``not_suspended``: an ``Answer`` to a run that asks nothing, or a stale or wrong token.
- ``no_domains``: an ``Ask`` to a daemon started without ``--domains``.
- ``forbidden``: the client's key may not send this, or the run was submitted by another key.

A refusal that passes:

- ``too_many_waiting``: the client holds too many waits or watches; let one end first.
- ``shutting_down``: the daemon drains after SIGTERM; submit again to its successor.
- ``unavailable``: the daemon cannot take this request now; retry later (the same daemon, or
  its successor). Four causes: it cannot write its journal (a full disk: it still answers
  reads and carries on by itself once it can); too many clients' new documents are being
  checked already (a submit of a new document); it stopped while this request waited on
  a new document's check (the request being checked and those its client sent behind it); or
  this turn of its loop has read as many journal rows for clients as it may (a read).

A record that cannot be read:

- ``journal_damaged``: the journal's record of the run does not decode (a damaged row); the
  message names the run, the daemon's log names the row. Asking again gives the same answer;
  the daemon serves every other run.

- ``internal``: a bug; the daemon logs it, the client sees only the code.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["ERROR_CODES", "ErrorCode"]

ErrorCode = Literal[
    "forbidden",
    "idempotency_conflict",
    "internal",
    "invalid_answer",
    "invalid_connections",
    "invalid_inputs",
    "invalid_manifest",
    "invalid_request",
    "journal_damaged",
    "no_domains",
    "not_suspended",
    "payload_too_large",
    "shutting_down",
    "too_many_waiting",
    "unavailable",
    "unknown_run",
]

#: Every code a daemon sends in an ``Error`` reply.
ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))
