"""The five context layers handed to a capability with every step (seed 002)."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["BlockContract", "Segment", "StepContext", "SystemMetadata"]


# gc=False on the context's parts (not on ``StepContext``, see there): frozen, holding strings
# only, never in a cycle (tests/protocols/test_untracked.py).
class Segment(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One ordered piece of the execution payload (seed 002's ContextSegment).

    Attributes:
        id: unique within the run; the engine names segments ``<step_id>.<n>``.
        type: semantic type, e.g. ``SYSTEM_INSTRUCTION``, ``CODE_OUTPUT``.
        content: the text.
        block: the block that produced it (empty for segments the engine made).
    """

    id: str
    type: str
    content: str
    block: str = ""


class BlockContract(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """Layer 2: the block's local instructions and the capability it runs."""

    node: str = ""
    block: str = ""
    worker: str = ""
    instructions: str = ""


class SystemMetadata(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """Layer 5: immutable facts about where the step runs."""

    run_id: str = ""
    node: str = ""
    block: str = ""
    step_id: str = ""
    manifest_hash: str = ""
    worktree: str = ""


class StepContext(msgspec.Struct, frozen=True, array_like=True):
    """All five layers, in the priority order of seed 002.

    Tracked by the cyclic collector, unlike the messages: its dicts and list are handed to a
    capability's code, which may put in them what refers back to it (an exception caught in
    ``execute``, whose traceback holds the frame that holds the context).

    Attributes:
        payload: layer 1, the execution payload assembled by ``payload_merge_strategy``.
        contract: layer 2, the block/worker contract.
        inherited: layer 3, static memory of the node and, while ``context_inheritance``
            allows, of its callers (the nearest node wins on a shared key).
        artifact: layer 4, the primary artifact: file path -> text content.
        system: layer 5, system metadata.
    """

    payload: list[Segment] = []
    contract: BlockContract = BlockContract()
    inherited: dict[str, Any] = {}
    artifact: dict[str, str] = {}
    system: SystemMetadata = SystemMetadata()
