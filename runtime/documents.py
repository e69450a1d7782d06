"""Reading a file a user named (a manifest, a plan, an input file, a config file, a key or token
file) with a bound, and never waiting for ever on something that is no file.

A user may name any path: ``--input-file /dev/zero`` or ``ontoflow run /dev/urandom`` read
without end until a MemoryError traceback (or the machine's OOM killer); ``ontoflow run FIFO``
on a named pipe nothing writes to waited for ever, printing nothing. One reader,
:func:`read_bounded`, serves every such file:

- a regular file is read up to its bound; one past it is an ``OSError`` (``errno.EFBIG``) as a
  file that cannot be read is, so every caller's ``cannot read the file: ...`` names it;
- ``/dev/null`` is read as empty (``--config /dev/null`` sets nothing);
- a pipe a program writes to (``--config <(...)``, ``/dev/stdin`` with stdin a pipe) is read
  until it ends; a named pipe no program has opened yet is waited on for a writer for at most
  :data:`PIPE_WRITER_WAIT_S` (a writer started beside ontoflow opens it a moment later;
  ``ONTOFLOW_PIPE_WAIT_S`` sets another, 0 to 3600 seconds), then refused;
- a folder and any other device (``/dev/zero``, a terminal: ``/dev/stdin`` on a terminal
  waited for a person who did not know to type) are refused without reading.

A file written to (``--log-file``) is opened by :func:`open_to_write`, whose named pipe waits
the same way for its reader.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import time

__all__ = ["MAX_DOCUMENT_BYTES", "PIPE_WAIT_ENV", "PIPE_WRITER_WAIT_S", "document_format", "open_to_write",
           "pipe_wait_s", "read_bounded", "read_document_bytes"]

#: The largest document file read: 64 MiB (``DEFAULT_MAX_MESSAGE_BYTES``).
MAX_DOCUMENT_BYTES = 64 * 2**20

#: How long a named pipe no program has opened to write is waited on for one. Long enough for
#: a writer started with the command (``mkfifo p; gen > p & ontoflow --config p``, a shell's
#: process substitution through a named pipe), short enough that a forgotten one is said soon.
PIPE_WRITER_WAIT_S = 5.0
#: The environment variable that sets another wait (seconds, 0 to 3600).
PIPE_WAIT_ENV = "ONTOFLOW_PIPE_WAIT_S"

#: How often a pipe still without its other end is looked at again: a writer that opens it and
#: says nothing for a while wakes no ``poll``, but a read tells its presence (EAGAIN, not end of
#: file); a reader's open wakes nothing on the writing side, whose open is tried again.
_PIPE_LOOK_S = 0.05


def document_format(path: str | os.PathLike[str], data: bytes) -> str:
    """The format to decode the document at ``path`` in: its suffix (``yaml``, ``.json``...);
    for a name without one (``/dev/stdin``, ``<(...)``'s ``/dev/fd/63``), JSON when its text
    starts as JSON does (``{`` or ``[``), else YAML. A YAML manifest piped in was decoded as
    JSON and refused at line 1, column 1, though the same text in a ``.yaml`` file runs."""
    suffix = os.path.splitext(os.fspath(path))[1]
    if suffix:
        return suffix
    return "json" if data.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] in (b"{", b"[") else "yaml"


def read_document_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the document at ``path``, at most :data:`MAX_DOCUMENT_BYTES` (see :func:`read_bounded`).

    Raises:
        OSError: as :func:`read_bounded`.
    """
    return read_bounded(path, MAX_DOCUMENT_BYTES)


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the file at ``path``, at most ``limit`` (what is read and refused: see the
    module docstring).

    Raises:
        OSError: when the file cannot be opened or read, is no file to read (a folder, a device
            but ``/dev/null``, a named pipe no program opened to write within
            :data:`PIPE_WRITER_WAIT_S`), or holds more than ``limit`` bytes (``errno.EFBIG``);
            its ``strerror`` says which in words.
    """
    # O_NONBLOCK: a named pipe opens at once even with no writer (a blocking open waits for one).
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:  # a socket fails as "No such device or address": say what it is
        if exc.errno == errno.ENXIO and _is_socket(path):
            raise OSError(errno.ENXIO, "is a socket, not a file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "is a folder, not a file")
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            if os.path.samestat(os.fstat(fd), os.stat(os.devnull)):
                return b""
            raise OSError(errno.ENODEV, "is a device (a terminal, /dev/zero...), not a file")
        first = _first_of_pipe(fd, limit) if stat.S_ISFIFO(mode) else b""
        os.set_blocking(fd, True)
        return _read_rest(fd, first, limit)
    finally:
        os.close(fd)


def open_to_write(path: str | os.PathLike[str]) -> int:
    """A descriptor open to write on ``path`` (a file to log to), never blocking: a named pipe
    no program reads yet is tried again for :func:`pipe_wait_s` (a reader started with the
    command, ``--log-file p & cat p``, opens it a moment later), as a document's pipe is waited
    on for its writer.

    Raises:
        OSError: as ``os.open`` does (``ENXIO`` for a socket, or a device with nothing behind
            it); ``ENXIO`` for a named pipe no program opened to read within the wait, its
            ``strerror`` saying so; ``EINVAL`` naming :data:`PIPE_WAIT_ENV` when it is no wait.
    """
    deadline: float | None = None
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # only a FIFO's open can wait
        except OSError as exc:
            if exc.errno != errno.ENXIO or not _is_fifo(path):  # O_NONBLOCK: ENXIO, not a wait, for no reader
                raise
        if deadline is None:
            wait_s = pipe_wait_s()
            deadline = time.monotonic() + wait_s
        if time.monotonic() >= deadline:
            raise OSError(errno.ENXIO, f"a pipe no program reads (none opened it within {wait_s:g} s; "
                                       "start its reader first)")
        time.sleep(_PIPE_LOOK_S)


def _is_fifo(path: str | os.PathLike[str]) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _is_socket(path: str | os.PathLike[str]) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _first_of_pipe(fd: int, limit: int) -> bytes:
    """What a pipe holds at once, once a writer holds it (b"" when it holds it and has not
    written yet, or came and went without a word).

    Raises:
        OSError: ``ENXIO`` when no program opened it to write within :data:`PIPE_WRITER_WAIT_S`.
    """
    wait_s = pipe_wait_s()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + wait_s
    heard = False
    while True:
        try:
            data = os.read(fd, limit + 1)
        except BlockingIOError:  # a writer holds it and has not written yet: the blocking read waits
            return b""
        if data or heard:  # what it wrote; or a writer came and went (poll said so) without a word
            return data
        left = deadline - time.monotonic()
        if left <= 0:
            raise OSError(errno.ENXIO, f"is a pipe no program writes to (none opened it within {wait_s:g} s)")
        # Linux: a hang-up is reported only for a writer that came after this open, so an
        # event here means one did (data, or a close).
        heard = bool(poller.poll(min(left, _PIPE_LOOK_S) * 1000))


def pipe_wait_s() -> float:
    """How long a pipe is waited on for a writer (or, for ``--log-file``, a reader):
    :data:`PIPE_WAIT_ENV`, else :data:`PIPE_WRITER_WAIT_S`.

    Raises:
        OSError: ``EINVAL`` naming the variable when it is not a number of seconds from 0 to 3600.
    """
    given = os.environ.get(PIPE_WAIT_ENV, "").strip()
    if not given:  # unset, or set empty (a common way to unset it)
        return PIPE_WRITER_WAIT_S
    try:
        wait_s = float(given)
    except ValueError:
        wait_s = -1.0
    if not 0 <= wait_s <= 3600:  # nan and inf too
        raise OSError(errno.EINVAL, f"{PIPE_WAIT_ENV} must be a number of seconds from 0 to 3600")
    return wait_s


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
