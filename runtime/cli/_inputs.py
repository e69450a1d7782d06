"""A run's inputs from the command line: ``--input KEY=VALUE`` pairs (:func:`parse_inputs`)
over ``--input-file``'s map (:func:`gather_inputs`). Re-exported by ``_shared``.

A key given twice by ``--input`` is refused naming the key and both positions (never a value):
the last one won silently, so a script that appended ``--input a=2`` to a line that already
held ``--input a=1`` ran with a value nobody saw chosen; a JSON, YAML or TOML document with a
key twice is refused the same way. ``--input`` over ``--input-file`` for the same key is no
duplicate: it is the documented way to change one value of a file.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

import msgspec

from ontoflow.protocols.documents import oversized_int_path
from ontoflow.runtime.cli._options import KEY, read_input_file
from ontoflow.runtime.errors import ConfigError

__all__ = ["gather_inputs", "parse_inputs"]


def gather_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The run's inputs: ``--input-file``'s map, then the ``--input`` pairs over it.

    Raises:
        ConfigError: naming the file or the pair that is malformed (never a value).
    """
    # ``is not None``: an empty --input-file (an unset variable, ``--input-file "$F"``) was
    # silently no file at all, and the run went on without the inputs the user meant.
    inputs = read_input_file(args.input_file) if args.input_file is not None else {}
    inputs.update(parse_inputs(args.input))
    return inputs


def parse_inputs(pairs: Iterable[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` pairs; a VALUE that is valid JSON (a number, ``true``, a list...)
    is taken as that JSON value, anything else as a string.

    Args:
        pairs: the ``--input`` arguments in the order given.

    Returns:
        The inputs by ontology key.

    Raises:
        ConfigError: naming the malformed pair by position (not by value), the bad key, or a
            key given twice (with both positions).
    """
    inputs: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for i, pair in enumerate(pairs, start=1):
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--input #{i}: expected KEY=VALUE")
        if not KEY.match(key):
            raise ConfigError(f"--input #{i}: {key!r} is not an ontology key (dotted words, e.g. obdc.base.lang.code)")
        if key in seen:
            raise ConfigError(f"--input #{i}: {key!r} is given twice (also --input #{seen[key]}): give each key once")
        seen[key] = i
        try:
            raw.encode()
        except UnicodeEncodeError:  # argv keeps bytes that are not UTF-8 as surrogates
            raise ConfigError(f"--input #{i}: the value of {key!r} is not UTF-8") from None
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            if "out of range" in str(exc):  # 1e999: JSON for an infinity, which no run carries (as --input-file's)
                raise ConfigError(f"--input #{i}: the value of {key!r} is a number out of range") from None
            value = raw
        except RecursionError:
            raise ConfigError(f"--input #{i}: the value of {key!r} is JSON nested deeper than the decoder goes") from None
        if oversized_int_path(value) is not None:  # it failed as the run's first message was encoded
            raise ConfigError(f"--input #{i}: the value of {key!r} holds an integer past 64 bits (no message can carry it)")
        inputs[key] = value
    return inputs
