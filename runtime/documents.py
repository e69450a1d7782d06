"""Reading a document file (a manifest, a plan, an input file, a config file) with a bound.

A user may name any path: ``--input-file /dev/zero`` or ``ontoflow run /dev/urandom`` read
without end until a MemoryError traceback (or the machine's OOM killer). A document is read up
to :data:`MAX_DOCUMENT_BYTES`, the largest message a daemon takes by default (a bigger one could
not be submitted anyway), and one past it is an ``OSError`` as a file that cannot be read is,
so every caller's ``cannot read the file: ...`` names it.
"""

from __future__ import annotations

import errno
import os

__all__ = ["MAX_DOCUMENT_BYTES", "read_document_bytes"]

#: The largest document file read: 64 MiB (``DEFAULT_MAX_MESSAGE_BYTES``).
MAX_DOCUMENT_BYTES = 64 * 2**20


def read_document_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file at ``path`` (a pipe or a device too), at most :data:`MAX_DOCUMENT_BYTES`.

    Raises:
        OSError: when the file cannot be read, or holds more than :data:`MAX_DOCUMENT_BYTES`
            (``errno.EFBIG``, its ``strerror`` saying the bound).
    """
    with open(path, "rb") as fh:
        data = fh.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_DOCUMENT_BYTES // 2**20} MiB, the most a document may be")
    return data
