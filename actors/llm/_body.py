"""An endpoint's answer read bounded: in pieces, refused past a size, never held whole.

The size is the decoded one: a compressed answer (``gzip``, ``deflate``) is inflated here a
piece at a time with a limit on what each piece may become, so a small bomb (50 KB of gzip
that inflates to 50 MB) costs no more memory than the limit. httpx's own decoder inflates
each piece whole before anything can count it; it is not used (the raw stream is read). An
encoding this cannot inflate (``br``, ``zstd``, anything else) is refused by name: the request
asked for ``identity``.
"""

from __future__ import annotations

import zlib

import httpx

from ontoflow.actors.llm.errors import LlmAnswerError

__all__ = ["read_bounded"]

#: zlib's window bits that read a gzip or a zlib header, whichever comes.
_GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS


async def read_bounded(reply: httpx.Response, most: int) -> bytes:
    """The body of ``reply``, decoded, refused past ``most`` bytes.

    Raises:
        LlmAnswerError: naming the size or the encoding, never the content.
    """
    declared = reply.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most:
        raise LlmAnswerError(f"the model endpoint's answer is {int(declared)} bytes; the most read is {most} "
                             "(max_answer_bytes)")
    encoding = reply.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise LlmAnswerError(f"the model endpoint's answer is encoded as {encoding[:32]!r}, which is not read "
                             "(identity was asked for)")
    inflate = zlib.decompressobj(_GZIP_OR_ZLIB) if encoding not in ("", "identity") else None
    pieces: list[bytes] = []
    size = read = 0
    async for raw in reply.aiter_raw():
        read += len(raw)
        if read > most:
            _too_large(most)
        piece = raw
        if inflate is not None:
            try:
                piece = inflate.decompress(raw, most - size + 1)
            except zlib.error:
                raise LlmAnswerError(f"the model endpoint's answer is not the {encoding} it says") from None
            if inflate.unconsumed_tail:  # it would inflate past the limit
                _too_large(most)
        size += len(piece)
        if size > most:
            _too_large(most)
        pieces.append(piece)
    if inflate is not None:
        try:
            pieces.append(inflate.flush())
        except zlib.error:
            raise LlmAnswerError(f"the model endpoint's answer is not the {encoding} it says") from None
        if size + len(pieces[-1]) > most:
            _too_large(most)
    return b"".join(pieces)


def _too_large(most: int) -> None:
    raise LlmAnswerError(f"the model endpoint's answer is larger than {most} bytes, the most read (max_answer_bytes)")
