"""Run ids: random 128-bit identifiers in UUID4 hex form, cheap enough for every submit.

``uuid.uuid4()`` asks the kernel for 16 random bytes per call (a system call, microseconds on
a virtual machine) and builds a ``UUID`` object; a daemon starting tens of thousands of runs a
second pays that on its one serial thread. Run ids only need to be unique, not secret (they
appear in logs and answers), so they are drawn from a generator seeded once from the kernel's
randomness and re-seeded in a forked child, formatted like ``uuid4().hex``.
"""

from __future__ import annotations

import os
import random

__all__ = ["new_run_id"]

_random = random.Random(os.urandom(32))
_VERSION_BITS = 0x4 << 76  # the UUID4 version and variant bits, so ids look like uuid4().hex
_VARIANT_BITS = 0x2 << 62
_CLEAR = ~((0xF << 76) | (0x3 << 62))


def _reseed() -> None:
    _random.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def new_run_id() -> str:
    """A fresh run id: 32 lowercase hex digits, a valid UUID4 (version and variant set)."""
    value = (_random.getrandbits(128) & _CLEAR) | _VERSION_BITS | _VARIANT_BITS
    return f"{value:032x}"
