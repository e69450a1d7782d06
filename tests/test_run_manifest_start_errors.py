"""``run_manifest`` with a capability that cannot start raises ``CapabilityInitError``, the
error ``ontoflow run`` prints: the capability named, the text scrubbed, nothing chained. Before,
a constructor's or an ``initialize()``'s own exception reached the caller whole, and a test's
failure output printed a connection URL's password with it."""

from __future__ import annotations

import traceback
from typing import Any

import pytest

import ontoflow
from ontoflow import Capability, CapabilityInitError, CapabilityMetadata, run_manifest

SECRET = "hunter2-pw"
URL = f"postgres://admin:{SECRET}@db/x"


class RaisesInConstructor(Capability):
    metadata = CapabilityMetadata(id="t.start.ctor")

    def __init__(self) -> None:
        super().__init__()
        raise RuntimeError(f"cannot connect to {URL}")

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None


class RaisesInInitialize(Capability):
    metadata = CapabilityMetadata(id="t.start.init")

    async def initialize(self) -> None:
        raise ValueError(f"bad settings for {URL}")

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None


def _doc(capability: str) -> dict[str, Any]:
    return {"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": capability}}}}}


@pytest.mark.parametrize(("cls", "said"), [
    (RaisesInConstructor, "capability 't.start.ctor' could not be made: RuntimeError: cannot connect to postgres://"),
    (RaisesInInitialize, "capability 't.start.init' could not initialise: ValueError: bad settings for postgres://"),
], ids=["constructor", "initialize"])
def test_a_capability_that_cannot_start_raises_the_scrubbed_init_error(cls: type[Capability], said: str) -> None:
    with pytest.raises(CapabilityInitError) as raised:
        run_manifest(_doc(cls.metadata.id), [cls])
    assert str(raised.value).startswith(said)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    printed = "".join(traceback.format_exception(raised.value))
    assert SECRET not in printed and "Traceback" in printed


def test_the_error_is_on_the_public_face() -> None:
    assert ontoflow.CapabilityInitError is CapabilityInitError
