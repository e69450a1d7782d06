"""bench.client_instructions keeps a daemon's real replies to its client and runs each counted
part over them (the callgrind count itself is left to the bench)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from bench.client_instructions import PARTS, _part, capture
from ontoflow.protocols.client import CLIENT_HEADER, RunStatus, replies_from_frames

pytestmark = pytest.mark.timeout(60)


def test_the_kept_replies_end_every_run_and_each_part_runs_over_them(tmp_path: Path) -> None:
    path = str(tmp_path / "kept.pickle")
    capture(path, "inputs", runs=30, warm=10)
    with open(path, "rb") as f:
        kept = pickle.load(f)
    statuses = [m for bodies in kept["bodies"] for b in bodies for m in replies_from_frames([CLIENT_HEADER, b])
                if type(m) is RunStatus]
    assert sum(kept["ended"]) == len(statuses) >= 30
    assert all(s.status == "completed" and len(s.trace) == 3 for s in statuses)
    for part in PARTS:
        assert _part(path, part, 1) >= 0
