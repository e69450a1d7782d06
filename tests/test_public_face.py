"""The public face ``ontoflow``: what a capability author imports, and nothing of it missing."""

from __future__ import annotations

import types

import ontoflow
from ontoflow.actors.capability import Capability
from ontoflow.protocols import CapabilityMetadata


def test_the_face_hands_a_capability_author_what_they_need() -> None:
    assert ontoflow.Capability is Capability
    assert ontoflow.CapabilityMetadata is CapabilityMetadata
    # Segment: a Result's payload segments are made of it (seed 002), so a capability needs it too.
    for name in ("Result", "Segment", "TransientError", "PermanentError", "RunResult", "run_manifest", "arun_manifest"):
        assert hasattr(ontoflow, name), name


def test_all_is_sorted_and_complete() -> None:
    # dir, not vars: the face imports its names on first use (a Ctrl-C at the command's start)
    public = {n for n in dir(ontoflow)
              if not n.startswith("_") and n != "annotations" and not isinstance(getattr(ontoflow, n), types.ModuleType)}
    assert set(ontoflow.__all__) - {"__version__"} == public
    isort = lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)  # noqa: E731
    assert ontoflow.__all__ == sorted(ontoflow.__all__, key=isort)


def test_the_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    assert ontoflow.__version__ == version("ontoflow")


_RUN = """
import sys
import structlog
from ontoflow import Capability, CapabilityMetadata, run_manifest
if sys.argv[1] == "configured":
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stdout))
class Greet(Capability):
    metadata = CapabilityMetadata(id="demo.greet", outputs=["demo.greeting"])
    async def execute(self, inputs, context):
        return {"demo.greeting": "hi"}
doc = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.greet"}}}}}
print("RESULT", run_manifest(doc, [Greet]).status)
from structlog.testing import capture_logs
with capture_logs() as logs:  # a test's capture still sees every level afterwards
    run_manifest(doc, [Greet])
print("CAPTURED", sorted({e["log_level"] for e in logs if e["event"] in ("run_completed", "step_dispatched")}))
"""


def test_run_manifest_keeps_stdout_for_the_caller_unless_logging_is_configured(tmp_path) -> None:
    # Unconfigured, structlog prints every event to stdout: a test calling run_manifest got a
    # dozen lines of the runtime's bookkeeping. An application's own configuration is kept, and
    # structlog's capture_logs sees every level after it (the level is a processor it swaps).
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(_RUN)
    quiet = subprocess.run([sys.executable, str(script), "plain"], capture_output=True, text=True, timeout=60,
                           cwd=tmp_path, check=True)
    assert quiet.stdout == "RESULT completed\nCAPTURED ['debug', 'info']\n"
    assert "run_completed" not in quiet.stderr
    configured = subprocess.run([sys.executable, str(script), "configured"], capture_output=True, text=True,
                                timeout=60, cwd=tmp_path, check=True)
    assert "run_completed" in configured.stdout
