"""Reading a file the user named for its settings (``--config``, ``--input-file``, the labelled
set of ``intents eval``): bounded, and never waiting on something that is no file.

What is read: a regular file; ``/dev/null`` (nothing: ``--config /dev/null`` sets nothing, so
``./ontoflow.toml`` is not read); a pipe a program writes to (``--config <(...)``,
``--input-file /dev/stdin`` with stdin a pipe), read until it ends. What is refused, naming
the file: a folder, a device (``/dev/zero``, a terminal: ``/dev/stdin`` on a terminal waited
for a person who did not know to type), and a named pipe no program has opened to write
(the command waited for ever, printing nothing). Every read stops past its bound.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["read_settings_file"]


def read_settings_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the file at ``path``, at most ``limit``.

    Raises:
        OSError: when the file cannot be opened or read, is no file to read settings from
            (a folder, a device but ``/dev/null``, a pipe nothing writes to), or holds more
            than ``limit`` bytes (``errno.EFBIG``); its ``strerror`` says which in words.
    """
    # O_NONBLOCK: a named pipe opens at once even with no writer (a blocking open waits for one).
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "is a folder, not a file")
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            if os.path.samestat(os.fstat(fd), os.stat(os.devnull)):
                return b""
            raise OSError(errno.ENODEV, "is a device (a terminal, /dev/zero...), not a file")
        first = b""
        if stat.S_ISFIFO(mode):
            try:
                first = os.read(fd, limit + 1)
            except BlockingIOError:  # a writer holds it and has not written yet: wait for it
                pass
            else:
                if not first:  # no writer holds it (and it holds nothing)
                    raise OSError(errno.ENXIO, "is a pipe no program writes to (nothing to read)")
        os.set_blocking(fd, True)
        return _read_rest(fd, first, limit)
    finally:
        os.close(fd)


def _read_rest(fd: int, data: bytes, limit: int) -> bytes:
    chunks = [data]
    size = len(data)
    while size <= limit:
        chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise OSError(errno.EFBIG, f"larger than {_size(limit)}, the most it may be")


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 and limit % 2**20 == 0 else f"{limit:,} bytes"
