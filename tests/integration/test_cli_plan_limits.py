"""``ontoflow plan run`` with references that would multiply a value: real worker processes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration._cli import run_ontoflow

CAPS = Path(__file__).with_name("plan_limit_capabilities.py")


def test_a_plan_multiplying_an_output_fails_its_step_cleanly_and_the_worker_stays(tmp_path: Path) -> None:
    plan = {"combine_mode": "report", "steps": [
        {"id": "a", "capability": "t.big", "params": {"t.n": 900_000}},
        {"id": "b", "capability": "t.eat", "depends_on": ["a"], "required": False, "params": {"t.in": ["${a.t.blob}"] * 100}},
        {"id": "c", "capability": "t.eat", "depends_on": ["a"], "params": {"t.in": "${a.t.blob}"}},
    ]}
    (tmp_path / "amp.json").write_text(json.dumps(plan))
    ran = run_ontoflow(tmp_path, "plan", "run", "amp.json", "--json", "--no-builtins", "-c", str(CAPS))
    doc = ran.json()
    # Before: a 90 MB Invoke; the worker's socket dropped the orchestrator, b was lost
    # ("worker_lost") and the worker had to reconnect.
    events = {t["step_id"]: (t["event"], t["reason"]) for t in doc["trace"]}
    assert events == {"a": ("success", None), "b": ("invalid", "params_too_large"), "c": ("success", None)}
    assert doc["context"]["ontoflow.plan.report"]["c"]["outputs"] == {"t.size": 900_000}
    assert ran.code == 0 and doc["status"] == "completed"
    assert "worker_lost" not in ran.stderr and "xxxx" not in ran.stderr
