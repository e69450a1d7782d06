"""Writing ``ontoflow graph -o FILE``: the new picture whole, or the old file as it was.

Written in place, a picture that did not fit (a full disk, a quota) truncated the one that was
there and left a part of the new one: both lost. A regular file (or the file a link names) is
replaced only once its successor is written and flushed beside it; a device or a FIFO
(``/dev/stdout``, a pipe) is written as a shell's ``>`` would.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["write_whole"]


def write_whole(output: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``output`` whole, or leave ``output`` as it was.

    The new file takes an existing file's permission bits; a link keeps pointing where it did.
    A folder that cannot take a new file (no write permission) gets the picture in place.

    Raises:
        OSError: when it cannot be written (``strerror`` says why); no temporary file is left.
    """
    try:
        mode: int | None = os.stat(output).st_mode  # through links (/dev/stdout is one to a pipe)
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        Path(output).write_bytes(data)  # a device, a FIFO (or a folder: its own error)
        return
    target = Path(os.path.realpath(output))  # a link's file is replaced, the link kept
    try:
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".ontoflow-graph-")
    except PermissionError:
        Path(output).write_bytes(data)
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
