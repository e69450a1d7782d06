"""What a block's ``artifacts`` may name: files inside the manifest's folder, read by the daemon
into the step's context (``actors/orchestrator/_artifacts.py``) from the worktree a client sends.

A name is relative, without ``..``, without a NUL (no file is named with one: opening it raised
``ValueError``), and at most :data:`MAX_ARTIFACT_NAME_CHARS` long; a block names at most
:data:`MAX_ARTIFACTS`. Unbounded, a block naming one big file by a thousand spellings had the
daemon hold gigabytes, and each refused name was logged whole.
"""

from __future__ import annotations

from pathlib import PurePath

from ontoflow.protocols.errors import Problem

__all__ = ["MAX_ARTIFACTS", "MAX_ARTIFACT_NAME_CHARS", "artifact_problems"]

#: The most artifacts one block names.
MAX_ARTIFACTS = 64
#: The longest artifact name (a path); Linux's own limit on a path is 4,096 bytes.
MAX_ARTIFACT_NAME_CHARS = 1024


def artifact_problems(path: str, names: list[str]) -> list[Problem]:
    """The problems of a block's ``artifacts`` (``path``: the field's path in the manifest),
    each naming its entry by position, never echoing it."""
    if len(names) > MAX_ARTIFACTS:
        return [Problem(path=path, message=f"{len(names):,} artifacts; a block names at most {MAX_ARTIFACTS}")]
    problems = []
    for i, name in enumerate(names):
        if (not name or len(name) > MAX_ARTIFACT_NAME_CHARS or name[0] in "/\\" or "\x00" in name
                or PurePath(name).is_absolute() or ".." in PurePath(name.replace("\\", "/")).parts):
            problems.append(Problem(path=f"{path}[{i}]", message="must be a path inside the manifest's folder "
                                    f"(relative, no '..', no NUL, at most {MAX_ARTIFACT_NAME_CHARS:,} characters)"))
    return problems
