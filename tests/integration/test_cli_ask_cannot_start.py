"""``ontoflow ask`` and ``ontoflow chat`` (embedded) with a domain whose handler cannot start for
good say what ``ontoflow run`` says: the capability's scrubbed error, and that its worker is not
restarted. Before, they printed the bare reason, without the suffix ``run`` gives. Real worker
processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration._cli import run_ontoflow
from tests.integration.domain_helpers import WEATHER_GOALS, env_for

SECRET = "hunter2-secret"

HANDLERS = f'''
from ontoflow import Capability, CapabilityMetadata, Result


class Forecast(Capability):
    metadata = CapabilityMetadata(id="weather.forecast", outputs=["ontoflow.domain.output"])

    def __init__(self):
        super().__init__()
        raise RuntimeError("cannot connect to postgres://admin:{SECRET}@db/x")

    async def execute(self, inputs, context):
        return Result(event="success")
'''

SAID = ("capability 'weather.forecast' could not be made: RuntimeError: cannot connect to postgres://<redacted>@db/x"
        " (worker-0 is not restarted: restarts would fail the same way)")


@pytest.mark.parametrize("verb", ["ask", "chat"])
def test_a_handler_that_cannot_start_is_said_as_ontoflow_run_says_it(tmp_path: Path, verb: str) -> None:
    domain = tmp_path / "weather"
    domain.mkdir()
    (domain / "handlers.py").write_text(HANDLERS)
    (domain / "domain.yaml").write_text("handlers: handlers.py\n" + WEATHER_GOALS)
    text = "weather forecast for Lisbon"
    if verb == "ask":
        ran = run_ontoflow(tmp_path, "ask", "--domains", str(domain), text, env=env_for(tmp_path), timeout=120)
        code, stderr = ran.code, ran.stderr
    else:
        done = subprocess.run([sys.executable, "-m", "ontoflow", "chat", "--domains", str(domain)], input=text + "\n",
                              cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True, timeout=120)
        code, stderr = done.returncode, done.stderr
    said = [line for line in stderr.splitlines() if line.startswith("ontoflow:")]
    assert code == 1, stderr[-2000:]
    assert len(said) == 1 and said[0].endswith(SAID), stderr[-2000:]
    assert SECRET not in stderr and "Traceback" not in stderr
