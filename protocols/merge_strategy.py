"""The ``payload_merge_strategy`` instruction language.

A block's ``payload_merge_strategy`` is an ordered list of instructions; the engine runs them
in order to assemble the execution payload (a list of context segments) handed to the
capability. Each instruction appends segments; a segment already appended (same id) is not
appended twice, so the first instruction that selects a segment fixes its position.

=========================  ===============================================================
instruction                appends
=========================  ===============================================================
``all``                    every segment of the run so far, oldest first
``last:N``                 the N most recent segments of the run
``type:T``                 every segment whose ``type`` is T
``block:B``                every segment produced by block B
``memory:K``               static memory key K (inherited as usual) as a STATIC_MEMORY segment
``context:K``              context-bus key K as a CONTEXT segment (skipped when K is unset)
``text:T``                 a literal INSTRUCTION segment with content T
=========================  ===============================================================

An empty strategy means ``["all"]``.
"""

from __future__ import annotations

import msgspec

__all__ = ["DEFAULT_STRATEGY", "MAX_INSTRUCTIONS", "MergeInstruction", "parse_merge_instruction"]

_KINDS = ("all", "last", "type", "block", "memory", "context", "text")

DEFAULT_STRATEGY: tuple[str, ...] = ("all",)

#: The most instructions one block's strategy may have. Every instruction but ``text:T`` scans
#: the run's payload on every step of the block: 20,000 ``all`` over 1,050 segments took the
#: engine 0.8 s a step (the daemon serving nothing else meanwhile), and a document may be 64 MiB.
MAX_INSTRUCTIONS = 100

_ARG_NAMES = {"type": "T", "block": "B", "memory": "K", "context": "K"}


class MergeInstruction(msgspec.Struct, frozen=True):
    """One parsed instruction: its kind and its argument (``""`` for ``all``)."""

    kind: str
    arg: str = ""
    count: int = 0


def parse_merge_instruction(text: str) -> MergeInstruction:
    """Parse one instruction of the language above.

    Raises:
        ValueError: naming the expected forms when ``text`` is not an instruction.
    """
    kind, sep, arg = text.partition(":")
    if kind == "all" and not sep:
        return MergeInstruction("all")
    if kind == "last" and sep:
        # ASCII only: str.isdigit() also says yes to '²' (int() then refused it with its own
        # message) and to other scripts' digits; 18 digits keep int() off Python's digit limit.
        if arg.isascii() and arg.isdigit() and len(arg) <= 18 and int(arg) > 0:
            return MergeInstruction("last", count=int(arg))
        raise ValueError("last:N needs a positive whole number N (ASCII digits, at most 18)")
    if kind in _KINDS and kind not in ("all", "last") and sep and arg:
        if kind != "text" and arg.strip() != arg:  # 'type: CODE' selected nothing, silently
            raise ValueError(f"{kind}:{_ARG_NAMES[kind]} takes its name with no space around it")
        return MergeInstruction(kind, arg)
    raise ValueError(
        "unknown merge instruction: expected all, last:N, type:T, block:B, memory:K, context:K or text:T"
    )
