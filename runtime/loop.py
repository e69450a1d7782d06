"""How entry points run their async main: anyio on asyncio, on uvloop when it is installed.

pyzmq's sockets need an asyncio loop; uvloop is an asyncio loop built on libuv whose
per-iteration cost is a fraction of the standard loop's, which is most of a no-op step's cost
(measured in bench/). ``ONTOFLOW_LOOP=asyncio`` forces the standard loop.

They also make the cyclic garbage collector run less often (``tune_gc``): a daemon holds every
run in flight and thousands of finished results, and with CPython's default thresholds (a
young-generation pass every 700 allocations, a full pass soon after) collecting took a quarter
of its time (measured through the daemon with ``bench.multihost_bench``). Reference counting
frees almost everything a step allocates; the collector is only there for cycles.
``ONTOFLOW_GC=default`` keeps CPython's thresholds.

``stop_signals`` are the signals the daemon and a worker drain on.

``yield_now`` is the hot paths' checkpoint (``anyio.lowlevel.checkpoint`` on asyncio, without
the backend lookup it goes through each time).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import signal
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

import anyio

__all__ = ["GC_THRESHOLDS", "entry_options", "run", "stop_signals", "tune_gc", "uses_uvloop", "yield_now"]

#: Allocations between young passes, and young (then middle) passes between older ones.
GC_THRESHOLDS = (20_000, 20, 20)

T = TypeVar("T")


def uses_uvloop() -> bool:
    """Whether ``run`` will use uvloop (installed and not disabled by ONTOFLOW_LOOP)."""
    if os.environ.get("ONTOFLOW_LOOP", "").lower() == "asyncio":
        return False
    return importlib.util.find_spec("uvloop") is not None


def tune_gc() -> None:
    """Set the collector's thresholds to ``GC_THRESHOLDS`` (process-wide: entry points only),
    unless ``ONTOFLOW_GC=default``."""
    if os.environ.get("ONTOFLOW_GC", "").lower() != "default":
        gc.set_threshold(*GC_THRESHOLDS)


def entry_options() -> dict[str, Any]:
    """Tune the collector (``tune_gc``) and return ``anyio.run``'s keyword arguments: the
    asyncio backend, on uvloop when ``uses_uvloop``. What ``run`` does first, for an entry
    point that does it once at start-up (the CLI's ``main``)."""
    tune_gc()
    return {"backend": "asyncio", "backend_options": {"use_uvloop": uses_uvloop()}}


def run(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``func(*args)`` to completion on anyio's asyncio backend (uvloop when available),
    with the collector tuned by ``tune_gc``."""
    return anyio.run(func, *args, **entry_options())


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals a long-running entry point (the daemon, a worker) drains on: SIGTERM,
    SIGINT, and SIGHUP (a closed terminal, a dropped ssh session: its default action killed
    the process without its drain) unless it is ignored, as under ``nohup``."""
    hangup = () if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN else (signal.SIGHUP,)
    return (signal.SIGTERM, signal.SIGINT, *hangup)


@types.coroutine
def yield_now() -> Generator[None, None, None]:
    """Let the event loop run once, then go on: what ``anyio.lowlevel.checkpoint`` does on
    the asyncio backend (``asyncio.sleep(0)``: the task is scheduled again at once, and a
    cancellation is delivered here), without its backend lookup and the frames of
    ``sleep(0)``: about 7,000 instructions less per call (``await yield_now()``; asyncio only,
    as is everything on the actor kernel's sockets)."""
    yield
