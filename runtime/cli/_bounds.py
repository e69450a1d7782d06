"""The range of every numeric setting of ``daemon`` and ``worker``, one table for the flag and
the configuration file's key alike.

A value out of range was taken and failed later, or never: ``--max-message-bytes 1`` started a
daemon that could never welcome a worker (its first ``Ready`` is bigger) nor read a client's
request; ``--retention-s 1e300`` stopped the daemon at start with a traceback (SQLite's integer),
``worker --grace-s 1e300`` with another (past ``time_t``). Each setting is checked here against
:data:`BOUNDS`, as the flag is parsed (:func:`bounded`, an argparse ``type``: exit 2 naming the
flag and the range) and as the file is read (:func:`check_section`: a ``ConfigError`` naming the
file, the key and the range). A value of the wrong type in the file (a string for a number) is
refused by the file's reader already, naming the key and the file.

The floor of a message limit, :data:`MIN_MESSAGE_BYTES`, is 64 KiB: a worker's ``Ready`` with the
ten built-in capabilities is about 7.5 KB (a few hundred bytes per capability's metadata, and the
first Ready leaves before the daemon's limit is known), and a step's answer is bounded to the limit
less 64 KiB of envelope (``actors.capability.RESULT_MARGIN_BYTES``; half the limit below that). A
smaller limit has a worker with a few capabilities never welcomed and its steps' answers cut to
nothing; the integration tests' smallest working limit is this one.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from ontoflow.protocols.client import MAX_DEADLINE_MS
from ontoflow.runtime.daemon_config import MIN_PRUNE_EVERY_S
from ontoflow.runtime.errors import ConfigError

__all__ = ["BOUNDS", "MAX_SLOTS", "MIN_MESSAGE_BYTES", "Bound", "bounded", "check_section"]

#: The smallest ``--max-message-bytes`` (see the module docstring).
MIN_MESSAGE_BYTES = 64 * 1024
#: The most steps a worker runs at once (a runner task each: a typo of 100000 takes the machine).
MAX_SLOTS = 10_000
#: Ten years, the longest duration any setting means (a run's deadline is bounded the same).
_TEN_YEARS_S = MAX_DEADLINE_MS / 1000
_DAY_MS = 86_400_000


class Bound(NamedTuple):
    """A setting's range: ``low`` (included unless ``above``) to ``high`` (included; None: no
    bound), a whole number or a number of ``kind``; ``infinite``: ``inf`` is taken too (no
    bound). ``why``: said after the range when it is not plain."""

    kind: type
    low: float
    high: float | None = None
    above: bool = False
    infinite: bool = False
    why: str = ""

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (a number of ``kind``), or None."""
        if self.infinite and value == math.inf:
            return None
        # Written so that NaN fails it too.
        fits = (value > self.low if self.above else value >= self.low) and (self.high is None or value <= self.high)
        if fits and (self.kind is int or math.isfinite(value)):
            return None
        return self.refusal(f"{value:,}" if self.kind is int else f"{value:g}")

    def refusal(self, got: str) -> str:
        """The refusal of a value written ``got``: the range, why, and what was given."""
        return f"must be {self.range()}{f' ({self.why})' if self.why else ''}; got {got}"

    def range(self) -> str:
        """The range in words: ``a whole number from 0 to 19``, ``a number > 0 and at most ...``."""
        what = "a whole number" if self.kind is int else "a finite number"
        if self.high is None:
            text = f"{what} > {_number(self.low)}" if self.above else f"{what} of at least {_number(self.low)}"
        elif self.above:
            text = f"{what} > {_number(self.low)} and at most {_number(self.high)}"
        else:
            text = f"{what} from {_number(self.low)} to {_number(self.high)}"
        return text + (", or inf (no bound)" if self.infinite else "")


def _number(value: float) -> str:
    """``65,536``, ``315,360,000``, ``0.5``: as a person writes it (never ``3.1536e+08``)."""
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


_MESSAGE = Bound(int, MIN_MESSAGE_BYTES, why="64 KiB: a worker's Ready and a step's answer with its envelope must fit")
_MS = Bound(int, 1, MAX_DEADLINE_MS, why="ten years at most")
_SECONDS = Bound(float, 0, _TEN_YEARS_S, why="seconds: ten years at most")
_POSITIVE_SECONDS = Bound(float, 0, _TEN_YEARS_S, above=True, why="seconds: ten years at most")

#: Setting (its ``dest``: the flag without dashes, ``_`` for ``-``) -> its range, by verb.
BOUNDS: dict[str, dict[str, Bound]] = {
    "daemon": {
        "heartbeat_ms": Bound(int, 1, _DAY_MS, why="a day at most"),
        "liveness": Bound(int, 1, 1000),
        "schedule_to_start_ms": Bound(int, 0, MAX_DEADLINE_MS, why="ten years at most"),
        "answer_timeout_ms": _MS,
        "max_message_bytes": _MESSAGE,
        "max_runs": Bound(int, 1),
        "max_value_bytes": Bound(int, 1),
        "grace_s": _SECONDS,
        "retention_s": _POSITIVE_SECONDS,
        "prune_every_s": Bound(float, MIN_PRUNE_EVERY_S, _TEN_YEARS_S, why="seconds: shorter spins the loop; ten years at most"),
        "http_max_connections": Bound(int, 1, 65_536),
        "http_max_connections_per_client": Bound(int, 1, 65_536),
    },
    "worker": {
        "slots": Bound(int, 1, MAX_SLOTS),
        "nice": Bound(int, 0, 19),
        "spin_us": Bound(int, 0, 1_000_000, why="a second at most"),
        "max_message_bytes": _MESSAGE,
        "reconnect_max": Bound(float, 1, 86_400, why="seconds: a day at most"),
        "grace_s": _SECONDS,
        "cancel_grace_s": _SECONDS,
        "init_timeout_s": Bound(float, 0, _TEN_YEARS_S, above=True, infinite=True, why="seconds: ten years at most"),
        "http_timeout_s": _POSITIVE_SECONDS,
        "http_health_interval_s": _POSITIVE_SECONDS,
        # Past a day of a blocked event loop a worker is hung, whatever its steps' timeouts say.
        "max_stall_s": Bound(float, 0, 86_400, above=True, why="seconds: a day at most"),
    },
}


def bounded(verb: str, dest: str) -> Callable[[str], Any]:
    """The argparse ``type`` of ``verb``'s flag stored in ``dest``: the text as a number of its
    kind, in its range; else an ``ArgumentTypeError`` argparse reports with the flag (exit 2)."""
    bound = BOUNDS[verb][dest]

    def parse(text: str) -> Any:
        try:
            value = bound.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(bound.refusal(repr(text))) from None
        problem = bound.problem(value)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = "whole number" if bound.kind is int else "number"  # argparse's "invalid ... value"
    return parse


def check_section(section: str, values: dict[str, Any], source: str) -> None:
    """Check the numbers a configuration file's ``[section]`` sets (``values``: dest -> value,
    None for unset) against :data:`BOUNDS`.

    Raises:
        ConfigError: naming the file, the key (``daemon.max-message-bytes``) and its range.
    """
    for dest, bound in BOUNDS.get(section, {}).items():
        value = values.get(dest)
        if value is None:
            continue
        problem = bound.problem(value)
        if problem is not None:
            raise ConfigError(f"config file {source}: {section}.{dest.replace('_', '-')}: {problem}")
