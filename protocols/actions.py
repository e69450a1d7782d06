"""The actions of a workflow's transitions (seed 002): ``JUMP:<block>``, ``CALL:<node>``, ``RETURN``.

Re-exported by ``protocols.manifest``, whose transitions hold them as text.
"""

from __future__ import annotations

import msgspec

__all__ = ["Action", "Call", "Jump", "Return", "parse_action"]


class Jump(msgspec.Struct, frozen=True):
    """Continue at another block of the current node; the return stack is unchanged."""

    block: str


class Call(msgspec.Struct, frozen=True):
    """Push the return address and enter another node at its entry block."""

    node: str


class Return(msgspec.Struct, frozen=True):
    """Pop the return address and continue there; on an empty stack the run completes."""


Action = Jump | Call | Return


def parse_action(text: str) -> Action:
    """Parse an action string.

    Raises:
        ValueError: when ``text`` is not ``JUMP:<block>``, ``CALL:<node>`` or ``RETURN``;
            the message says which form was expected.
    """
    if text == "RETURN":
        return Return()
    verb, sep, target = text.partition(":")
    if sep and target and target.strip() == target:
        if verb == "JUMP":
            return Jump(target)
        if verb == "CALL":
            return Call(target)
    raise ValueError("unknown action: expected JUMP:<block>, CALL:<node> or RETURN")
