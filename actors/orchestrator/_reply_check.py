"""Replies built from journal rows, checked as a client decodes them before they go.

A journal row may hold what no run of ours writes (edited by hand, damaged on disk) and still
be of the types its columns promise: a run ``completed`` with no end time (``ended_ms`` NULL)
replayed into a ``RunStatus`` whose ``ended_ms`` is None, which the client's decoder refuses:
it dropped the reply and ``ontoflow status`` timed out, the daemon silent (red team, session
21). So a reply made from the journal (a run replayed, a list of its rows) is encoded and
decoded as the client does (``protocols.client``); one that fails is refused ``journal_damaged``
naming the run, and the daemon's log names the field (never a value). Replies made from memory
are not checked: the daemon's own runs, on the hot path.
"""

from __future__ import annotations

import msgspec
import structlog

from ontoflow.protocols.client import ClientMessage, Error, RunSummary, client_from_frames, client_to_frames
from ontoflow.protocols.errors import ProtocolError
from ontoflow.runtime.journal import JournalCorruptError

__all__ = ["checked_list", "checked_reply"]

log = structlog.get_logger()

_summary_decoder = msgspec.msgpack.Decoder(RunSummary)
_list_decoder = msgspec.msgpack.Decoder(list[RunSummary])
_encoder = msgspec.msgpack.Encoder()


def checked_reply(reply: ClientMessage, run_id: str) -> None:
    """Check ``reply``, made from the journal's record of ``run_id``, as a client decodes it.

    Raises:
        runtime.journal.JournalCorruptError: naming the run and what the protocol refuses.
    """
    try:
        client_from_frames(client_to_frames(reply))
    except ProtocolError as exc:  # names the field, never the value
        raise JournalCorruptError(f"the journal's record of run {run_id[:128]!r} makes a {type(reply).__name__} "
                                  f"the protocol refuses ({exc}); the journal is damaged") from None


def checked_list(summaries: list[RunSummary]) -> Error | None:
    """The ``journal_damaged`` refusal of a list whose first summary a client would refuse
    (the run named; the log says why), or None when every one decodes."""
    try:  # the list at once (10,000 rows: one call), each summary only when it fails
        _list_decoder.decode(_encoder.encode(summaries))
        return None
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    for summary in summaries:
        try:
            _summary_decoder.decode(_encoder.encode(summary))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            log.error("journal_row_refused", run_id=summary.run_id[:128], reply="RunList", problem=str(exc))
            return Error(code="journal_damaged", message=f"the journal's record of run {summary.run_id[:128]} "
                                                         "is damaged (the daemon's log names the row)")
    return None
