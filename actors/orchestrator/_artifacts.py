"""The artifacts a step names (layer 4 of its context), read from its run's worktree.

A block's ``artifacts`` are paths relative to the manifest's folder (the manifest check refuses
an absolute one, a ``..`` and a NUL). The folder itself is the ``worktree`` its client sent
(``Submit.worktree``), and a client may send any folder: with no bound on it, whoever could
submit read any file the daemon can, ``worktree="/"`` and ``artifacts: [etc/passwd]``. So:

- a path is resolved (its symbolic links followed) and read only when it stays inside its
  worktree: a link in the folder pointing out of it reads nothing;
- with ``roots``, a worktree is read from only when it lies inside one of them. A daemon that
  others can submit to (tcp, an abstract or group-writable ipc socket) reads no artifact unless
  ``--artifact-root`` names the folders it may (:func:`artifact_roots_for`); when only its own
  user can, that user may read those files anyway.

Only a regular file is read (a FIFO, a device or a folder is not: opening a FIFO had blocked
the daemon's loop). What is not read becomes ``""``, as a file that cannot be opened always
did, with a warning naming the artifact (never its text); the step still runs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import structlog

from ontoflow.actors.orchestrator.engine import Dispatch

__all__ = ["ARTIFACT_LIMIT_BYTES", "STEP_ARTIFACT_BUDGET_BYTES", "ArtifactReader", "artifact_roots_for"]

log = structlog.get_logger()

#: Largest artifact file read into a step's context (layer 4); larger ones are truncated.
ARTIFACT_LIMIT_BYTES = 1 << 20
#: The most a step's artifacts bring together: past it the rest are "" (a block naming one big
#: file by a thousand spellings had the daemon hold gigabytes; the manifest bounds the names).
STEP_ARTIFACT_BUDGET_BYTES = 8 * ARTIFACT_LIMIT_BYTES


def artifact_roots_for(bind: str, roots: list[str], umask: int | None = None) -> list[str] | tuple[()] | None:
    """The roots a daemon bound on ``bind`` reads artifacts under: ``roots`` when given; else
    any (``None``) when only its own user can submit (inproc; ipc on a socket file the umask
    leaves writable by its owner alone: libzmq gives it no mode of its own), none (``()``)
    when others can (tcp; an abstract ``ipc://@`` socket, which has no file mode at all)."""
    if roots:
        return roots
    if umask is None:
        umask = os.umask(0o077)  # read it: no call only reads it
        os.umask(umask)
    private = bind.startswith("inproc://") or (
        bind.startswith("ipc://") and not bind.startswith("ipc://@") and umask & 0o022 == 0o022)
    return None if private else ()


class ArtifactReader:
    """Reads the artifacts of a Dispatch within its worktree and the allowed roots.

    Args:
        roots: the folders a worktree must lie inside (resolved once, here); ``None``: any
            worktree (a daemon whose submitters are its own user).
    """

    def __init__(self, roots: Iterable[str | Path] | None = None) -> None:
        self.roots = None if roots is None else tuple(Path(root).expanduser().resolve() for root in roots)

    def read(self, d: Dispatch) -> dict[str, str]:
        """Each artifact ``d`` names and its text (UTF-8, invalid bytes replaced, cut at
        :data:`ARTIFACT_LIMIT_BYTES`); ``""`` for one outside its worktree or the roots, or
        that cannot be read. Raises nothing: a step is not lost to a file."""
        contents: dict[str, str] = {}
        try:
            base = Path(d.context.system.worktree or ".").resolve()
        except (OSError, ValueError, RuntimeError):  # a NUL in it, a loop of links
            base = None
        allowed = base is not None and (self.roots is None or any(base.is_relative_to(root) for root in self.roots))
        budget = STEP_ARTIFACT_BUDGET_BYTES
        for name in d.artifacts:
            contents[name] = ""
            if budget <= 0:
                log.warning("artifact_refused", run_id=d.run_id, step_id=d.step_id, artifact=name,
                            reason=f"the step's artifacts reached {STEP_ARTIFACT_BUDGET_BYTES:,} bytes")
                continue
            if not allowed:
                log.warning("artifact_refused", run_id=d.run_id, step_id=d.step_id, artifact=name,
                            reason="its worktree is outside the daemon's --artifact-root folders")
                continue
            try:
                path = (base / name).resolve()
                if not path.is_relative_to(base):
                    log.warning("artifact_refused", run_id=d.run_id, step_id=d.step_id, artifact=name,
                                reason="it resolves outside its worktree")
                    continue
                data = _read_regular(path, base, min(budget, ARTIFACT_LIMIT_BYTES))
                budget -= len(data)
                contents[name] = data.decode("utf-8", errors="replace")
            except (OSError, ValueError, RuntimeError) as exc:  # ValueError: a NUL; RuntimeError: a loop of links
                log.warning("artifact_unreadable", run_id=d.run_id, step_id=d.step_id, artifact=name,
                            error=type(exc).__name__)
        return contents


def _read_regular(path: Path, base: Path, limit: int) -> bytes:
    """The first ``limit`` bytes of ``path`` if it is a regular file inside ``base``.

    Opened without blocking and without following a last link, then checked on the open file:
    a FIFO's ``open`` had blocked the daemon's loop until a writer came, ``/dev/zero`` was read
    as a file. And where the file opened really is (``/proc/self/fd``, on Linux) is checked
    against ``base`` again: a folder of the path swapped for a link between the resolve and the
    open was followed out of the worktree.

    Raises:
        OSError: it cannot be opened, is not a regular file, or was opened outside ``base``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        try:
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # no /proc: the resolve above is the check
            opened = path
        if not opened.is_relative_to(base):
            raise OSError("opened outside its worktree")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    finally:
        os.close(fd)
