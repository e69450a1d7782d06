"""A ``memory:K`` of a map keyed by ``null`` (YAML ``{null: 1}``), through the public face:
``ontoflow.arun_manifest`` with a real capability and worker host over ``inproc://``."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow import Capability, CapabilityMetadata, Result, StepContext, arun_manifest
from ontoflow.protocols.documents import decode_document

pytestmark = pytest.mark.anyio

SEEN: list[list[tuple[str, str]]] = []


class Look(Capability):
    """Records the payload it is handed."""

    metadata = CapabilityMetadata(id="t.capability.look")

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        SEEN.append([(s.type, s.content) for s in context.payload])
        return Result()


async def test_a_static_memory_map_with_a_null_key_reaches_the_capability_as_json() -> None:
    document = decode_document(b"""
start: main
nodes:
  main:
    entry_block: a
    static_memory: {t.map: {null: 1, true: no, k: [1]}}
    blocks:
      a: {worker: t.capability.look, payload_merge_strategy: ["memory:t.map"]}
""", "yaml")
    SEEN.clear()
    result = await arun_manifest(document, [Look])
    assert (result.status, result.error) == ("completed", None)
    assert SEEN == [[("STATIC_MEMORY", '{"null":1,"true":false,"k":[1]}')]]
