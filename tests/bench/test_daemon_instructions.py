"""bench.daemon_instructions drives the daemon's composition in-process: every run it keeps in
flight completes, for both workloads (the callgrind count itself is left to the bench)."""

from __future__ import annotations

import pytest

from bench.daemon_instructions import Driver

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("workload", ["inputs", "plain"])
def test_the_driver_completes_every_run_it_submits(workload: str) -> None:
    driver = Driver(workload, workers=2, slots=4)
    driver.drive(40, in_flight=8)  # raises if a run ends otherwise or the runs stall
    assert driver.orchestrator.runs_in_flight == 0
    assert driver.orchestrator.pool.steps_in_flight() == 0
