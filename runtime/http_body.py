"""An HTTP answer's body read bounded: in pieces, refused past a size, never held whole.

The model endpoint's answers (``actors.llm``) and a bridged domain service's
(``actors.worker``) are read here. The size is the decoded one: a compressed answer (``gzip``,
``deflate``) is inflated a piece at a time with a limit on what each piece may become, so a
small bomb (50 KB of gzip that inflates to 50 MB) costs no more memory than the limit.
httpx's own decoder inflates each piece whole before anything can count it; it is not used
(the raw stream is read). An encoding this cannot inflate (``br``, ``zstd``, anything else) is
refused by name: a caller asks for ``identity`` (:data:`ACCEPT_ENCODING`).
"""

from __future__ import annotations

import zlib

import httpx

from ontoflow.runtime.errors import AnswerEncodingError, AnswerTooLargeError

__all__ = ["ACCEPT_ENCODING", "read_bounded"]

#: The request header a caller of :func:`read_bounded` sends: an answer as it is.
ACCEPT_ENCODING = {"accept-encoding": "identity"}

#: zlib's window bits that read a gzip or a zlib header, whichever comes.
_GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS


async def read_bounded(reply: httpx.Response, most: int) -> bytes:
    """The body of ``reply`` (opened as a stream), decoded, refused past ``most`` bytes.

    Raises:
        AnswerTooLargeError: when its ``content-length`` or what is read passes ``most``.
        AnswerEncodingError: for an encoding that is not read, or a body that is not the
            ``gzip``/``deflate`` it says (the message names the encoding, never the content).
        httpx.HTTPError: when the stream breaks.
    """
    declared = reply.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most:
        raise AnswerTooLargeError(f"{int(declared)} bytes; the most read is {most}", declared=int(declared))
    encoding = reply.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise AnswerEncodingError(f"encoded as {encoding[:32]!r}, which is not read (identity was asked for)")
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
                raise AnswerEncodingError(f"not the {encoding} it says") from None
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
            raise AnswerEncodingError(f"not the {encoding} it says") from None
        if size + len(pieces[-1]) > most:
            _too_large(most)
    return b"".join(pieces)


def _too_large(most: int) -> None:
    raise AnswerTooLargeError(f"larger than {most} bytes, the most read")
