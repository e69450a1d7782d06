"""Starting a capability in a worker host: its ``initialize()``, whose error a worker prints."""

from __future__ import annotations

from ontoflow.actors.capability import Capability, must_propagate, scrub
from ontoflow.actors.errors import CapabilityInitError

__all__ = ["initialize"]


async def initialize(cap: Capability) -> None:
    """Run ``cap.initialize()``; what it raises becomes a :class:`CapabilityInitError` naming
    the capability, its text scrubbed (a connection URL's password, a token): a worker process
    prints it on stderr, where a traceback would show the text whole.

    Raises:
        CapabilityInitError: when ``initialize()`` raises, exits or is interrupted (only a
            cancellation of the caller propagates as itself); the original is its ``__cause__``.
    """
    try:
        await cap.initialize()
    except BaseException as exc:  # a sys.exit too: it ended the worker (or run_manifest's caller) with its code
        if must_propagate(exc):
            raise
        try:
            text = str(exc)
        except Exception:  # noqa: BLE001 - an unprintable error still names its type
            text = "<unprintable message>"
        raise CapabilityInitError(f"capability {type(cap).metadata.id!r} could not initialise: "
                                  f"{type(exc).__name__}: {scrub(text, secrets=cap.secrets)}") from exc
