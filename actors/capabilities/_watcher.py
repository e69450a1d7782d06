"""``fs.directory_watcher``: perceives new files in a folder (seed 001's perceiving capability).

The folder is ``ONTOFLOW_WATCH_DIR`` (the worker host builds capabilities without arguments);
it is polled every ``ONTOFLOW_WATCH_INTERVAL_MS`` (default 500). Each new file becomes an
Observation of kind ``file_created`` whose id is ``name:mtime_ns:size`` (a rewritten file is a
new observation) and whose data holds ``fs.file.path``, ``fs.file.name`` and
``fs.file.size``. Files already there when the worker starts are reported too, and every
file present is reported again every ``ONTOFLOW_WATCH_REANNOUNCE`` polls (default 20), so an
observation the host dropped while cut off is not lost; the daemon starts no second run for
an id it has seen. As a step, it lists the folder's files (``fs.files``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import structlog

from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata, StepContext
from ontoflow.protocols.messages import Observation

__all__ = ["DirectoryWatcher", "FILE_CREATED"]

log = structlog.get_logger()

#: The observation kind a workflow's trigger names.
FILE_CREATED = "file_created"


class DirectoryWatcher(Capability):
    """Reports new files in ``ONTOFLOW_WATCH_DIR`` as observations (see module docstring)."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="fs.directory_watcher",
        outputs=["fs.files"],
        idempotent=True,
        perceive_interval_ms=int(os.environ.get("ONTOFLOW_WATCH_INTERVAL_MS", "500") or 500),
    )

    def __init__(self) -> None:
        super().__init__()
        folder = os.environ.get("ONTOFLOW_WATCH_DIR", "")
        self.folder = Path(folder) if folder else None
        self._seen: set[str] = set()
        self._polls = 0
        self._every = max(int(os.environ.get("ONTOFLOW_WATCH_REANNOUNCE", "20") or 20), 1)

    def _files(self) -> list[tuple[str, Path, os.stat_result]]:
        if self.folder is None:
            return []
        found = []
        try:
            entries = list(os.scandir(self.folder))
        except OSError as exc:
            log.warning("watch_folder_unreadable", error=type(exc).__name__)
            return []
        for entry in entries:
            if entry.is_file() and not entry.name.startswith("."):
                st = entry.stat()
                found.append((f"{entry.name}:{st.st_mtime_ns}:{st.st_size}", Path(entry.path), st))
        return sorted(found)

    async def perceive(self) -> list[Observation]:
        """New files since the last poll (all present ones every few polls)."""
        self._polls += 1
        again = self._polls % self._every == 0
        out = []
        for oid, path, st in self._files():
            if oid in self._seen and not again:
                continue
            self._seen.add(oid)
            out.append(Observation(capability=self.metadata.id, kind=FILE_CREATED, id=oid,
                                   data={"fs.file.path": str(path), "fs.file.name": path.name, "fs.file.size": st.st_size}))
        return out

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"fs.files": [str(path) for _, path, _ in self._files()]}
