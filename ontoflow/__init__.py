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

import typing as _typing

if _typing.TYPE_CHECKING:
    from ontoflow._run import arun_manifest, run_manifest
    from ontoflow.actors.capability import Capability, PermanentError, Result, TransientError
    from ontoflow.actors.errors import CapabilityInitError
    from ontoflow.actors.orchestrator import AnswerRefused, RunResult
    from ontoflow.protocols import CapabilityMetadata, Observation, Segment, StepContext
    from ontoflow.protocols.errors import ManifestError

# Imported on first use (PEP 562), not here: every ``ontoflow.*`` module, the command line's
# ``ontoflow.runtime.cli`` first, is imported under this package, and its eager imports took
# 0.45 s in which a Ctrl-C printed a KeyboardInterrupt traceback before ``main`` could catch it.
_WHERE = {
    "arun_manifest": "ontoflow._run", "run_manifest": "ontoflow._run",
    "Capability": "ontoflow.actors.capability", "PermanentError": "ontoflow.actors.capability",
    "Result": "ontoflow.actors.capability", "TransientError": "ontoflow.actors.capability",
    "CapabilityInitError": "ontoflow.actors.errors", "RunResult": "ontoflow.actors.orchestrator",
    "AnswerRefused": "ontoflow.actors.orchestrator", "ManifestError": "ontoflow.protocols.errors",
    "CapabilityMetadata": "ontoflow.protocols", "Observation": "ontoflow.protocols",
    "Segment": "ontoflow.protocols", "StepContext": "ontoflow.protocols",
}


def __getattr__(name: str) -> _typing.Any:
    """A name of :data:`__all__`, imported (and kept) at its first use.

    Raises:
        AttributeError: for a name the face does not export.
    """
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: _typing.Any = version("ontoflow")
        except PackageNotFoundError:  # run from a source tree that was never installed
            value = "0.0.0+unknown"
    elif name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(_WHERE[name]), name)
    elif name in ("protocols", "runtime", "actors"):  # ``import ontoflow`` then ontoflow.protocols.X
        import importlib

        value = importlib.import_module(f"ontoflow.{name}")
    else:
        raise AttributeError(f"module 'ontoflow' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
