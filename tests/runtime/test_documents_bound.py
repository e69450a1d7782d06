"""A document file is read with a bound: ``--input-file /dev/zero``, ``ontoflow run /dev/zero``
or ``--config /dev/zero`` read without end until a MemoryError traceback (or the OOM killer
took the machine). Past 64 MiB it is a file that cannot be read, and a device is refused before
it is read, exit 2 naming it."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.documents import MAX_DOCUMENT_BYTES, read_bounded, read_document_bytes

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"


def test_a_file_within_the_bound_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b"{}")
    assert read_document_bytes(tmp_path / "a.json") == b"{}"


def test_a_file_past_the_bound_is_refused_at_the_bound(tmp_path: Path) -> None:
    (tmp_path / "big.json").write_bytes(b"x" * 11)
    with pytest.raises(OSError) as caught:
        read_bounded(tmp_path / "big.json", 10)
    assert caught.value.errno == errno.EFBIG and "larger than 10 bytes" in caught.value.strerror


def test_a_device_without_end_is_refused_before_it_is_read() -> None:
    # It was read up to the bound (64 MiB of zeros, then refused); one reader now serves every
    # named file (runtime.documents.read_bounded), and a device is no document.
    with pytest.raises(OSError) as caught:
        read_document_bytes("/dev/zero")
    assert caught.value.errno == errno.ENODEV and "is a device" in caught.value.strerror
    assert MAX_DOCUMENT_BYTES == 64 * 2**20


@pytest.mark.parametrize(
    ("argv", "says"),
    [(["run", "/dev/zero"], "/dev/zero: cannot read the file: is a device"),
     # Every named file refuses a device before reading it (runtime.documents.read_bounded).
     (["run", str(WORKFLOW), "--input-file", "/dev/zero"], "--input-file /dev/zero: cannot read the file: is a device"),
     (["--config", "/dev/zero", "runs"], "config file /dev/zero: cannot read it: is a device"),
     (["check", "/dev/zero"], "/dev/zero: cannot read the file: is a device"),
     # Files the daemon reads at start (probe4 found them unbounded).
     (["daemon", "--bind", "tcp://127.0.0.1:0", "--trigger-workflow", "/dev/zero"],
      "trigger workflow /dev/zero: cannot read the file: is a device"),
     (["daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(REPO / "configs/examples/finance"), "--http-bind",
       "127.0.0.1:0", "--http-token-file", "/dev/zero"],
      "--http-token-file /dev/zero: cannot read the file: is a device"),
     (["daemon", "--bind", "tcp://127.0.0.1:0", "--connections", "/dev/zero"],
      "cannot read the connections file /dev/zero: is a device")],
)
def test_the_cli_exits_2_naming_the_file(tmp_path: Path, argv: list[str], says: str) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}  # nothing shared
    done = subprocess.run([sys.executable, "-m", "ontoflow", *argv], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120, env=env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert says in done.stderr and "Traceback" not in done.stderr
