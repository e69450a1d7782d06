"""``ontoflow graph -o FILE`` on a full disk leaves the picture that was there whole (a real
1 MiB tmpfs the test mounts): the new one is written beside it and put in its place only once
it is whole."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.actors.replay.recording import workflow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(disk)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def _fill(path: Path) -> None:
    with open(path, "wb", buffering=0) as fh:
        for size in (65536, 4096, 512, 1):
            try:
                while fh.write(b"\0" * size):
                    pass
            except OSError:
                continue


def _long_workflow(blocks: int) -> dict:
    chain = {f"b{i}": {"worker": "t.load", "transitions": [{"on_signal": "success", "action": f"JUMP:b{i + 1}"}]}
             for i in range(blocks - 1)}
    chain[f"b{blocks - 1}"] = {"worker": "t.load"}
    return {"name": "long", "start": "main", "nodes": {"main": {"entry_block": "b0", "blocks": chain}}}


def _graph(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ontoflow", "graph", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def test_a_picture_that_cannot_be_written_whole_leaves_the_previous_one(tmp_path: Path, small_disk: Path) -> None:
    # The picture was written over the old one in place: on a full disk the old one was
    # truncated to nothing and the new one not written, both lost.
    (tmp_path / "w.json").write_text(json.dumps(workflow()))
    (tmp_path / "big.json").write_text(json.dumps(_long_workflow(300)))  # a picture of many pages
    picture = small_disk / "w.mmd"
    assert _graph(tmp_path, "w.json", "--no-builtins", "-o", str(picture)).returncode == 0
    before = picture.read_bytes()
    _fill(small_disk / "filler")
    done = _graph(tmp_path, "big.json", "--no-builtins", "-f", "dot", "-o", str(picture))
    assert done.returncode == 1, done.stderr  # the disk, not the flag: as stdout on a full disk
    assert "Traceback" not in done.stderr and "No space left on device" in done.stderr
    assert picture.read_bytes() == before
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "w.mmd"]  # nothing left beside it
    (small_disk / "filler").unlink()
    assert _graph(tmp_path, "big.json", "--no-builtins", "-f", "dot", "-o", str(picture)).returncode == 0
    assert picture.read_text().startswith("digraph") and "b299" in picture.read_text()
