"""The entry points' loop runner: uvloop choice and the collector's thresholds."""

from __future__ import annotations

import gc

import pytest

from ontoflow.runtime.loop import GC_THRESHOLDS, run, tune_gc


@pytest.fixture
def restore_gc():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_tune_gc_raises_the_thresholds(restore_gc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ONTOFLOW_GC", raising=False)
    gc.set_threshold(700, 10, 10)
    tune_gc()
    assert gc.get_threshold() == GC_THRESHOLDS


def test_ontoflow_gc_default_keeps_cpythons_thresholds(restore_gc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONTOFLOW_GC", "default")
    gc.set_threshold(700, 10, 10)
    tune_gc()
    assert gc.get_threshold() == (700, 10, 10)


def test_run_returns_the_result(restore_gc) -> None:
    async def answer(x: int) -> int:
        return x * 2

    assert run(answer, 21) == 42
