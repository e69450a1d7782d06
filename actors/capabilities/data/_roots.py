"""The folders a worker's data steps may read and write: ``ONTOFLOW_DATA_ROOTS``.

A pipeline or plan names its files (``data.path``, ``data.database``, ``data.work_dir``), and
on a daemon others submit to, whoever submits names them: without a bound, a plan wrote any
file the worker's user may (``data.path: ~/.bashrc``) and read any database it may. Set on a
worker, ``ONTOFLOW_DATA_ROOTS`` (folders separated by ``os.pathsep``, ``:`` on POSIX) is that
bound: a data step refuses a file outside them, symbolic links followed (a writer's target as
the file it will replace: the folder's links followed, a link at the target itself replaced,
not followed). Unset, the data steps go where their settings say, as the user who runs them
would. Spool folders (``data.work_dir``) may also be under the system's temporary folder, where
the default one is and ``ontoflow pipeline run`` makes its own: a spool holds only
``<run>/<step>.rows`` files in owner-only folders. Errors name the setting, never its value.
"""

from __future__ import annotations

import os
from pathlib import Path

from ontoflow.actors.errors import PermanentError

__all__ = ["ROOTS_ENV", "check_inside_roots", "data_roots"]

ROOTS_ENV = "ONTOFLOW_DATA_ROOTS"


def data_roots() -> list[str] | None:
    """The resolved folders of ``ONTOFLOW_DATA_ROOTS``, or None when it is unset or empty."""
    raw = os.environ.get(ROOTS_ENV, "")
    roots = [os.path.realpath(os.path.expanduser(part)) for part in raw.split(os.pathsep) if part.strip()]
    return roots or None


def check_inside_roots(path: Path, setting: str, *, target: bool = False, also: str | None = None) -> None:
    """Refuse ``path`` when data roots are set and it lies outside every one.

    Args:
        path: the file or folder a step will use.
        setting: the input that named it (``data.path``), for the message.
        target: ``path`` is a file the step replaces: its folder's links are followed, not its own.
        also: one more folder allowed besides the roots.

    Raises:
        PermanentError: naming ``setting`` and ``ONTOFLOW_DATA_ROOTS``, never the path.
    """
    roots = data_roots()
    if roots is None:
        return
    if also:
        roots.append(os.path.realpath(also))
    try:
        place = os.path.join(os.path.realpath(path.parent), path.name) if target else os.path.realpath(path)
    except (OSError, ValueError):
        place = None
    if place is None or not any(Path(place).is_relative_to(root) for root in roots):
        raise PermanentError(f"{setting} is outside the folders this worker's data steps may use ({ROOTS_ENV})")
