"""One writer per journal: an OS lock on a file beside it, and files only their owner reads.

Two daemons driving one journal would both replay its live runs and both dispatch every step,
so the writer takes ``flock(LOCK_EX | LOCK_NB)`` on ``<journal>.lock`` for as long as it has
the journal open. The kernel releases the lock when the holder's file descriptor closes, which
a ``kill -9`` does too: a restart is never blocked by a stale lock (a pid file could go stale).
The holder writes its pid into the lock file so that the refused one can name it.

A path is not the only name of a file: a hard link names the same journal under another path
(and a lock file of its own), and SQLite keeps a WAL and an index per name, so two daemons
through two names corrupt it. The writer therefore also takes ``flock`` on the journal file
itself (:meth:`JournalLock.hold_file`): whatever names it, one inode has one writer. (SQLite
locks with ``fcntl``, which ``flock`` does not touch.)

A lock file this open created is removed again when the open fails (a path that names a file
that is no journal leaves nothing beside it). Removing it is safe against a process waiting on
the old file: a lock is held only once the file locked is still the one at the path
(:func:`held_file_is_current`), else it is taken again on the new file.

The journal holds every input and output of every run: it, its WAL and its shared-memory
index are created readable by their owner only (SQLite gives the ``-wal`` and ``-shm`` files
the mode of the database file), and a journal found more open than that is tightened.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

import structlog

from ontoflow.runtime.journal.errors import JournalError, JournalLockedError, JournalPathError

__all__ = ["JournalLock", "check_folder", "held_file_is_current", "lock_journal", "open_lock_file", "prepare_journal_file",
           "tighten_journal_files"]

log = structlog.get_logger()

#: Owner read/write: the mode of the journal and of every file beside it.
FILE_MODE = 0o600


class JournalLock:
    """The held lock of one journal; released by :meth:`release` or by the process's death.

    Attributes:
        path: the lock file.
        created: whether this lock's open created the file.
    """

    __slots__ = ("_fd", "_file_fd", "created", "path")

    def __init__(self, fd: int | None, path: Path, *, created: bool = False) -> None:
        self._fd: int | None = fd
        self._file_fd: int | None = None
        self.path = path
        self.created = created

    def hold_file(self, journal: Path, *, shared: bool = False) -> JournalLock:
        """Also lock the journal file itself (its inode: every name of it, see the module
        docstring), for as long as this lock is held: alone (a daemon's journal) or ``shared``
        (the journal several ``ask`` processes write, ``_shared.py``: never a daemon's).
        Returns this lock.

        Raises:
            JournalLockedError: when another process holds it through another name, or (shared)
                a daemon holds it.
            JournalError: when it cannot be opened or locked.
        """
        try:  # non-blocking: a FIFO given as the journal is not waited on (refused later)
            fd = os.open(journal, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise JournalError(f"journal {journal}: cannot open: {exc.strerror}") from None
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if shared:
                raise JournalLockedError(
                    f"journal {journal} is a daemon's journal, in use by another process; the session memory "
                    "needs a file of its own", path=str(journal), pid=None) from None
            raise JournalLockedError(
                f"journal {journal} is in use by another process through another name of the same file (a hard "
                "link), or as the session memory of `ontoflow ask`; one process per daemon journal: stop it "
                "first or choose another journal", path=str(journal), pid=None) from None
        except OSError as exc:
            os.close(fd)
            raise JournalError(f"journal {journal}: cannot lock it: {exc.strerror}") from None
        self._file_fd = fd
        return self

    def keep_file_only(self) -> JournalLock:
        """Release ``<journal>.lock`` and hand back a lock holding only the journal file's lock
        (:meth:`hold_file`), released in its turn by its :meth:`release`."""
        kept = JournalLock(None, self.path)
        kept._file_fd, self._file_fd = self._file_fd, None
        self.release()
        return kept

    def release(self, *, failed_open: bool = False) -> None:
        """Release the lock (closing the descriptor releases it; the file stays, harmlessly).

        Args:
            failed_open: the open this lock was for failed: a lock file it created is removed
                (still held while it goes, so nobody locks it in between).
        """
        if self._file_fd is not None:
            os.close(self._file_fd)
            self._file_fd = None
        if self._fd is not None:
            if failed_open and self.created:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass  # left as it would have been: harmless
            os.close(self._fd)
            self._fd = None


def open_lock_file(path: Path, lock_path: Path) -> tuple[int, bool]:
    """Open (or create, owner-only) the lock file ``lock_path`` of the journal ``path``.

    Returns:
        Its descriptor, and whether this call created it.

    Raises:
        JournalError: when it cannot be opened, or is a link (symbolic or hard) or not a file.
    """
    # Never through a link: the holder writes its pid into the file, and a symbolic (or hard)
    # link planted at the lock's path (a folder others can write) had it overwrite the file
    # linked to, whatever that was.
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        try:
            return os.open(lock_path, flags | os.O_EXCL, FILE_MODE), True
        except FileExistsError:
            fd = os.open(lock_path, flags, FILE_MODE)
    except OSError as exc:
        why = "it is a symbolic link (ontoflow makes this file itself: remove it)" if exc.errno == errno.ELOOP \
            else exc.strerror
        raise JournalError(f"journal {path}: cannot open its lock file {lock_path}: {why}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise JournalError(f"journal {path}: its lock file {lock_path} is not a plain file of its own (a link to "
                           "another file, or no file at all); ontoflow makes this file itself: remove it")
    return fd, False


def held_file_is_current(fd: int, lock_path: Path) -> bool:
    """Whether the file locked through ``fd`` is still the one at ``lock_path`` (a failed open
    may have removed it while this process waited: that lock guards nothing)."""
    try:
        here, there = os.fstat(fd), os.stat(lock_path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def check_folder(path: Path) -> None:
    """Check that the journal's folder exists (a wrong path is a configuration error, not damage).

    Raises:
        JournalPathError: when the folder does not exist, is not a folder, or cannot be looked
            at (a name too long).
    """
    folder = path.parent
    try:
        present = folder.is_dir()
    except OSError as exc:  # a name too long, no permission to look: stat raises, not False (a traceback)
        raise JournalPathError(f"journal {path}: cannot look at its folder: {exc.strerror}") from None
    if not present:
        raise JournalPathError(f"journal {path}: the folder {folder} does not exist; create it or choose another path")
    # A symbolic link is followed (by the lock and by SQLite): the folder of the file it names
    # must exist too, else the lock file could not be made ('cannot open its lock file', exit 3).
    target = Path(os.path.realpath(path)).parent
    try:
        missing = target != folder and not target.is_dir()
    except OSError as exc:
        raise JournalPathError(f"journal {path}: cannot look at the folder it links into: {exc.strerror}") from None
    if missing:
        raise JournalPathError(f"journal {path}: it is a link into the folder {target}, which does not exist; "
                               "create it or choose another path")


def prepare_journal_file(path: Path) -> None:
    """Create the journal file owner-only when it does not exist (an existing one is left as it
    is until it proved to be a journal: :func:`tighten_journal_files`).

    Raises:
        JournalError: when the file cannot be created.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise JournalError(f"journal {path}: cannot open: {exc.strerror}") from None
    os.close(fd)


def tighten_journal_files(path: Path) -> None:
    """Make the journal, its WAL and its index readable by their owner only (called once the
    file opened as a journal: a path naming someone's other file, refused, keeps its mode)."""
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        _tighten(name, None)


def _tighten(path: Path, fd: int | None) -> None:
    try:
        mode = os.fstat(fd).st_mode if fd is not None else os.stat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_IMODE(mode) & 0o077:
        try:
            os.fchmod(fd, FILE_MODE) if fd is not None else os.chmod(path, FILE_MODE)
        except OSError as exc:  # not ours to change: say so, and go on
            log.warning("journal_mode_not_tightened", path=str(path), error=exc.strerror)
            return
        log.info("journal_mode_tightened", path=str(path), was=oct(stat.S_IMODE(mode)))


def lock_journal(path: Path) -> JournalLock:
    """Take the journal's writer lock without waiting.

    Args:
        path: the journal file (the lock is ``<path>.lock`` beside the file it names, links
            followed: a symbolic link to a journal names the journal's own lock, so a second
            daemon given the link is refused as one given the journal is).

    Returns:
        The held lock.

    Raises:
        JournalLockedError: when another process holds it (the message names the journal and
            that process's pid).
        JournalError: when the lock file cannot be opened.
    """
    # Links followed: SQLite follows them too, so a daemon given a link to another's journal
    # would write the same file (and its WAL) beside it under a lock file of its own.
    lock_path = Path(f"{os.path.realpath(path)}.lock")
    while True:
        fd, created = open_lock_file(path, lock_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"process {holder}" if holder else "another process"
            raise JournalLockedError(
                f"journal {path} is in use by {who} (lock {lock_path}); one daemon per journal: stop it first "
                "or choose another journal", path=str(path), pid=holder) from None
        except OSError as exc:
            os.close(fd)
            raise JournalError(f"journal {path}: cannot lock {lock_path}: {exc.strerror}") from None
        if held_file_is_current(fd, lock_path):
            break
        os.close(fd)  # removed by an open that failed meanwhile: lock the file at the path now
    try:  # the pid only names the holder to a refused open: a full disk must not stop this one
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # (its OSError left the journal's errors: "cannot write the answer to stdout")
        pass
    return JournalLock(fd, lock_path, created=created)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
