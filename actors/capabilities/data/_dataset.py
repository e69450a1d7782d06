"""Dataset references: how rows travel between data steps without travelling through the context.

A step's outputs go through the orchestrator and into later steps' inputs, so a table must
not: a data capability writes its rows to a *spool file* in the run's work folder and outputs
a small **dataset reference** instead::

    {"format": "ontoflow.rows.v1", "path": "<work_dir>/<run_id>/<step_id>.rows",
     "columns": ["id", "name"], "rows": 1000000}

The spool file is a sequence of frames, each a 4-byte little-endian length then a msgpack array
of rows (each row an array of values, in ``columns`` order). Writers append one batch at a
time and readers yield one batch at a time, so memory holds one batch, never the table. The
reference is plain data (JSON-safe), so it shows in traces and reports and can be followed by
any later step on the same host (or a shared file system). The work folder is the input
``data.work_dir`` (default: ``<system temp>/ontoflow-spool-<uid>``, one per user); whoever runs
the plan removes ``<work_dir>/<run_id>`` when the run is over (``ontoflow pipeline run`` does,
and a daemon does for the runs it ends: ``remove_run_spool``).

Spooled rows are a run's data at rest: the folders are created readable by their owner only
(0700), the files 0600, and a run id becomes a folder name only once made safe (a client may
choose its run id: ``../x`` must not lead out of the work folder).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import struct
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio.from_thread
import msgspec

from ontoflow.actors.capabilities.data._roots import check_inside_roots
from ontoflow.actors.errors import PermanentError
from ontoflow.protocols.context import StepContext

__all__ = [
    "BATCH_BYTES",
    "DATASET_FORMAT",
    "MAX_FRAME_BYTES",
    "DatasetSpool",
    "check_ref",
    "dataset_ref",
    "read_batches",
    "remove_run_spool",
    "remove_runs_spools",
    "run_spool_folder",
    "spool_path",
]

DATASET_FORMAT = "ontoflow.rows.v1"
#: The largest frame of a spool file (a batch past it is split; one row past it is refused).
MAX_FRAME_BYTES = 256 * 2**20
#: The bytes a producing step aims a batch at: it fetches fewer rows when they are large.
BATCH_BYTES = 32 * 2**20
_LEN = struct.Struct("<I")
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[list[Any]]).decode


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _safe_name(name: str) -> str:
    """``name`` as one harmless path component (no separator, never ``.`` or ``..``)."""
    safe = _UNSAFE.sub("_", name)
    return safe if safe.strip(".") else safe.replace(".", "_") or "_"


def run_spool_folder(work_dir: str | None, run_id: str) -> Path:
    """The folder of a run's spool files: ``<work_dir>/<run_id>`` (not created).

    Args:
        work_dir: the ``data.work_dir`` input; None for the per-user default under the
            system's temporary folder.
        run_id: the run (made a safe folder name).
    """
    return Path(work_dir or _default_root(), _safe_name(run_id or "adhoc"))


_root_cache: tuple[str, str] = ("", "")  # (temporary folder, default root under it)


def _default_root() -> str:
    # Cached: a daemon asks at every run end, and building it costs more than the lookup.
    global _root_cache
    tmp = tempfile.gettempdir()
    if _root_cache[0] != tmp:
        _root_cache = (tmp, os.path.join(tmp, f"ontoflow-spool-{os.getuid()}"))
    return _root_cache[1]


def _private_folder(path: Path, *, check_owner: bool) -> None:
    """Create ``path`` owner-only (0700), or tighten it when it is ours and more open.

    Raises:
        PermanentError: when ``path`` is a symbolic link or no folder, or when ``check_owner``
            and the folder belongs to someone else.
    """
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    # lstat: a link planted where the folder goes (``<work_dir>/<run_id>`` chosen ahead by
    # whoever can write the work folder) pointed at a folder of ours and passed the owner check,
    # so the spool files were written wherever the link led.
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise PermanentError(f"spool folder {path} is a symbolic link or no folder; remove it or set data.work_dir")
    if info.st_uid != os.getuid():
        if check_owner:
            raise PermanentError(f"spool folder {path} belongs to another user; set data.work_dir")
        return
    if stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(0o700)


def spool_path(work_dir: str | None, context: StepContext) -> Path:
    """The spool file of this step: ``<work_dir>/<run_id>/<step_id>.rows`` (folders created
    owner-only; the default work folder must belong to this user)."""
    system = context.system
    if work_dir:  # the default folder is the worker's own, as the temporary folder is
        check_inside_roots(Path(work_dir), "data.work_dir", also=tempfile.gettempdir())
    folder = run_spool_folder(work_dir, system.run_id)
    if not work_dir:
        _private_folder(folder.parent, check_owner=True)
    _private_folder(folder, check_owner=True)
    return folder / f"{_safe_name(system.step_id or 'step')}.rows"


def remove_runs_spools(run_ids: list[str]) -> int:
    """Remove the default spool folders of ended runs, in one sweep; returns how many went.

    Made to be called now and then from a thread with the runs that ended meanwhile: the sweep
    lists the default work folder once (nothing when it does not exist) and looks only at the
    runs that have a folder there, not a ``stat`` per run (thousands a second on a busy daemon,
    each holding the interpreter's lock the event loop needs).
    """
    if not run_ids:
        return 0
    try:
        present = set(os.listdir(_default_root()))
    except OSError:  # no default work folder: nothing was ever spooled on this host
        return 0
    if not present:
        return 0
    return sum(remove_run_spool(run_id) for run_id in run_ids if _safe_name(run_id or "adhoc") in present)


def remove_run_spool(run_id: str, work_dir: str | None = None) -> bool:
    """Remove a run's spool folder, if there is one (call it when the run has ended).

    Args:
        run_id: the run.
        work_dir: its ``data.work_dir``; None for the default.

    Returns:
        Whether a folder was removed.
    """
    folder = os.path.join(work_dir or _default_root(), _safe_name(run_id or "adhoc"))
    if not os.path.isdir(folder) or os.path.islink(folder):  # the common case: nothing spooled
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def dataset_ref(path: Path, columns: Sequence[str], rows: int) -> dict[str, Any]:
    """The reference a step outputs for the rows it spooled."""
    return {"format": DATASET_FORMAT, "path": str(path), "columns": list(columns), "rows": rows}


class DatasetSpool:
    """Writes row batches to a spool file; use as a context manager, then read ``ref``.

    The file is written under a temporary name and renamed when the context exits cleanly,
    so a reader never sees half a dataset.
    """

    def __init__(self, path: Path, columns: Sequence[str]) -> None:
        self.path = path
        self.columns = list(columns)
        self.rows = 0
        self._tmp = path.with_name(path.name + ".part")
        # Owner-only from the first byte (a chmod after open would leave a window).
        self._fh = os.fdopen(os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600), "wb")

    def write(self, batch: list[Any]) -> int:
        """Append one batch of rows (a list of row sequences); returns the bytes it took.

        A batch larger than :data:`MAX_FRAME_BYTES` is written as several frames (a frame's
        length is 4 bytes: 5000 rows of 1 MB BLOBs had ``struct.error`` end the step).

        Raises:
            PermanentError: when one row alone is larger than a frame may be.
        """
        if not batch:
            return 0
        data = _encode(batch)
        if len(data) > MAX_FRAME_BYTES:
            if len(batch) == 1:
                raise PermanentError(f"a row is larger than {MAX_FRAME_BYTES >> 20} MiB, the most one row may be")
            half = len(batch) // 2
            return self.write(batch[:half]) + self.write(batch[half:])
        self._fh.write(_LEN.pack(len(data)))
        self._fh.write(data)
        self.rows += len(batch)
        return len(data)

    def __enter__(self) -> DatasetSpool:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._fh.close()
        if exc_type is None:
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)

    @property
    def ref(self) -> dict[str, Any]:
        """The dataset reference of what was written."""
        return dataset_ref(self.path, self.columns, self.rows)


def check_ref(ref: Any, run_id: str | None = None) -> tuple[Path, list[str]]:
    """The path and columns of a dataset reference.

    Args:
        ref: the ``data.dataset`` input.
        run_id: the reading step's run: the reference must then name a spool file of that run
            (``<work_dir>/<run_id>/<step>.rows``, a regular file, not a link). A reference is
            plain data a plan may also write by hand: on a daemon, one naming another run's
            spool had its rows (another client's table) written where the plan said.

    Raises:
        PermanentError: when ``ref`` is not a dataset reference, names no spool file of the
            run, or its file is gone (the message never names the path).
    """
    if not isinstance(ref, dict) or ref.get("format") != DATASET_FORMAT:
        raise PermanentError(f"data.dataset is not a dataset reference ({DATASET_FORMAT})")
    path = Path(str(ref.get("path", "")))
    columns = ref.get("columns")
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise PermanentError("data.dataset has no column list")
    if run_id is not None and (path.parent.name != _safe_name(run_id or "adhoc") or path.suffix != ".rows"):
        raise PermanentError("data.dataset names no spool file of this run: a dataset comes from a step this one needs")
    try:
        info = path.lstat()
    except (OSError, ValueError):
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):  # gone, a link, a FIFO (a read would wait)
        raise PermanentError("the spool file of data.dataset does not exist (was the run's work folder removed?)")
    return path, columns


def read_batches(path: Path) -> Iterator[list[list[Any]]]:
    """Yield the spool file's batches, one at a time; checks for cancellation between batches
    when called from a worker thread started by anyio."""
    in_thread = True
    with path.open("rb") as fh:
        while True:
            head = fh.read(4)
            if not head:
                return
            if len(head) < 4:
                raise PermanentError("the spool file of data.dataset is truncated")
            (size,) = _LEN.unpack(head)
            data = fh.read(size)
            if len(data) < size:
                raise PermanentError("the spool file of data.dataset is truncated")
            yield _decode(data)
            if in_thread:
                try:
                    anyio.from_thread.check_cancelled()
                except RuntimeError:  # not in an anyio worker thread (a direct call)
                    in_thread = False
