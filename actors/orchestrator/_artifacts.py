"""The artifacts a step names (layer 4 of its context), read from its run's worktree.

A block's ``artifacts`` are paths relative to the manifest's folder (the manifest check refuses
an absolute one, a ``..`` and a NUL). The folder itself is the ``worktree`` its client sent
(``Submit.worktree``), and a client may send any folder: with no bound on it, whoever could
submit read any file the daemon can, ``worktree="/"`` and ``artifacts: [etc/passwd]``. So:

- a path is resolved (its symbolic links followed) and read only when it stays inside its
  worktree: a link in the folder pointing out of it reads nothing;
- with ``roots``, a worktree is read from only when it lies inside one of them. A daemon bound
  on TCP takes its submits from other hosts and reads no artifact unless ``--artifact-root``
  names the folders it may; over ipc (a socket file only its own user can open) and inproc
  the submitter is the daemon's own user, who may read those files anyway.

Only a regular file is read (a FIFO, a device or a folder is not: opening a FIFO had blocked
the daemon's loop). What is not read becomes ``""``, as a file that cannot be opened always did, with a warning
naming the artifact (never its text); the step still runs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import structlog

from ontoflow.actors.orchestrator.engine import Dispatch

__all__ = ["ARTIFACT_LIMIT_BYTES", "ArtifactReader"]

log = structlog.get_logger()

#: Largest artifact file read into a step's context (layer 4); larger ones are truncated.
ARTIFACT_LIMIT_BYTES = 1 << 20


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
        for name in d.artifacts:
            contents[name] = ""
            if base is None or not allowed:
                log.warning("artifact_refused", run_id=d.run_id, step_id=d.step_id, artifact=name,
                            reason="its worktree is outside the daemon's --artifact-root folders")
                continue
            try:
                path = (base / name).resolve()
                if not path.is_relative_to(base):
                    log.warning("artifact_refused", run_id=d.run_id, step_id=d.step_id, artifact=name,
                                reason="it resolves outside its worktree")
                    continue
                contents[name] = _read_regular(path).decode("utf-8", errors="replace")
            except (OSError, ValueError, RuntimeError) as exc:  # ValueError: a NUL; RuntimeError: a loop of links
                log.warning("artifact_unreadable", run_id=d.run_id, step_id=d.step_id, artifact=name,
                            error=type(exc).__name__)
        return contents


def _read_regular(path: Path) -> bytes:
    """The first :data:`ARTIFACT_LIMIT_BYTES` of ``path`` if it is a regular file.

    Opened without blocking and without following a last link (the path was resolved: a link
    there now was put between the two), then checked on the open file: a FIFO's ``open`` had
    blocked the daemon's loop until a writer came, and ``/dev/zero`` was read as a file.

    Raises:
        OSError: it cannot be opened, or it is not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path.name}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(ARTIFACT_LIMIT_BYTES)
    finally:
        os.close(fd)
