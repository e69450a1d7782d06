"""The benchmark floor runs end to end (tiny) and reports the figures it promises."""

from __future__ import annotations

import glob
import os
import tempfile

import pytest

from bench.floor import measure_floor


def _floor_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "ontoflow-floor-*")))


def test_measure_floor_shape(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its own temporary folder: another process making ``ontoflow-floor-*`` folders meanwhile
    # (another test run, a benchmark) must not count as a folder this one left behind.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = _floor_dirs()
    result = measure_floor(n=200, repeats=1)
    assert set(result) == {
        "transport",
        "n",
        "repeats",
        "depth",
        "payload_bytes",
        "sync_rtt_us",
        "async_rtt_us",
        "pipelined_rt_per_s",
        "samples",
    }
    assert (result["transport"], result["n"], result["repeats"]) == ("ipc", 200, 1)
    assert result["payload_bytes"] > 200
    for key in ("sync_rtt_us", "async_rtt_us", "pipelined_rt_per_s"):
        assert isinstance(result[key], float) and result[key] > 0
        assert len(result["samples"][key]) == 1
    # The ipc socket files went with their processes.
    assert _floor_dirs() <= before


def test_measure_floor_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="repeats"):
        measure_floor(n=10, repeats=0)
