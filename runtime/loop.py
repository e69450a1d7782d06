"""How entry points run their async main: anyio on asyncio, on uvloop when it is installed.

pyzmq's sockets need an asyncio loop; uvloop is an asyncio loop built on libuv whose
per-iteration cost is a fraction of the standard loop's, which is most of a no-op step's cost
(measured in bench/). ``ONTOFLOW_LOOP=asyncio`` forces the standard loop.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

__all__ = ["run", "uses_uvloop"]

T = TypeVar("T")


def uses_uvloop() -> bool:
    """Whether ``run`` will use uvloop (installed and not disabled by ONTOFLOW_LOOP)."""
    if os.environ.get("ONTOFLOW_LOOP", "").lower() == "asyncio":
        return False
    return importlib.util.find_spec("uvloop") is not None


def run(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``func(*args)`` to completion on anyio's asyncio backend (uvloop when available)."""
    return anyio.run(func, *args, backend="asyncio", backend_options={"use_uvloop": uses_uvloop()})
