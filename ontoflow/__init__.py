"""ontoflow: deterministic capability orchestration.

The public face for capability authors. Everything a capability and its tests need is here::

    from ontoflow import Capability, CapabilityMetadata, Result, TransientError, PermanentError

    class Greet(Capability):
        metadata = CapabilityMetadata(id="acme.capability.greet", ...)

        async def execute(self, inputs, context):
            return Result(outputs={"acme.greeting": "Hello"})

and :func:`run_manifest` runs a workflow manifest (or a plan, or a pipeline) in this process,
with the capabilities given, and returns its :class:`RunResult` — what a test of a capability
or a manifest calls; a capability that cannot start (its constructor or ``initialize()``
raised) raises :class:`CapabilityInitError`, naming it, its text scrubbed; a document that does
not compile raises :class:`ManifestError`, and an answer that is none of a question's candidates
:class:`AnswerRefused`, both here so that a test can catch them. The runtime's own packages are ``ontoflow.protocols`` (what is said),
``ontoflow.runtime`` (what runs it) and ``ontoflow.actors`` (who says it).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from ontoflow._run import arun_manifest, run_manifest
from ontoflow.actors.capability import Capability, PermanentError, Result, TransientError
from ontoflow.actors.errors import CapabilityInitError
from ontoflow.actors.orchestrator import AnswerRefused, RunResult
from ontoflow.protocols import CapabilityMetadata, Observation, Segment, StepContext
from ontoflow.protocols.errors import ManifestError

try:
    __version__ = _version("ontoflow")
except _PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "AnswerRefused",
    "Capability",
    "CapabilityInitError",
    "CapabilityMetadata",
    "ManifestError",
    "Observation",
    "PermanentError",
    "Result",
    "RunResult",
    "Segment",
    "StepContext",
    "TransientError",
    "__version__",
    "arun_manifest",
    "run_manifest",
]
