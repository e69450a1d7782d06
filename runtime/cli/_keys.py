"""``ontoflow keys generate DIR [--name NAME]``: a CURVE key pair (``NAME.key``, ``NAME.key_secret``);
and the check that a secret key file's setting names a file, not the key pasted in its place."""

from __future__ import annotations

import argparse
import os
from typing import Any

import zmq

from ontoflow.runtime.cli._shared import EXIT_OK, common_options, fail
from ontoflow.runtime.curve import generate_keys
from ontoflow.runtime.errors import ConfigError

__all__ = ["refuse_a_pasted_key", "register"]


def register(subparsers: Any) -> None:
    """Add ``keys generate`` to the ``ontoflow`` parser."""
    k = subparsers.add_parser("keys", help="CURVE keys")
    ksub = k.add_subparsers(dest="keys_command", required=True)
    g = ksub.add_parser("generate", help="create NAME.key and NAME.key_secret (0600) in DIR")
    g.add_argument("directory")
    g.add_argument("--name", default="ontoflow")
    common_options(g)
    g.set_defaults(handler=_cmd_generate)


def _cmd_generate(args: argparse.Namespace) -> int:
    try:
        public, secret = generate_keys(args.directory, args.name)
    except ConfigError as exc:
        return fail(str(exc))
    print(public)
    print(secret)
    return EXIT_OK


def refuse_a_pasted_key(value: str | None, flag: str) -> None:
    """Refuse a secret key file's setting that holds a secret key instead of a file's name.

    ``ONTOFLOW_CURVE_SECRET`` reads as "the secret", and a key pasted there (or after
    ``--curve-secret``, or as ``curve-secret`` in the config file, where it is taken from the
    file's folder) was echoed whole, twice: "cannot read key file KEY (from the environment:
    ONTOFLOW_CURVE_SECRET=KEY)", on a terminal, in a CI log. The key is never shown.

    Args:
        value: the setting (None: not set).
        flag: how the message names it (``--curve-secret (or ONTOFLOW_CURVE_SECRET)``).

    Raises:
        ConfigError: when no file of that name exists and the name (its last 40 characters,
            after a folder) decodes as a 32-byte z85 key.
    """
    if value is None or len(value) < 40 or (len(value) > 40 and value[-41] != "/"):
        return
    try:
        if len(zmq.utils.z85.decode(value[-40:].encode("ascii"))) != 32 or os.path.lexists(value):
            return
    except (ValueError, UnicodeEncodeError, KeyError, OSError):  # not z85 (KeyError: a character out of its alphabet)
        return
    raise ConfigError(f"{flag}: names no file and is a z85 key itself: give the secret key's FILE "
                      "(NAME.key_secret, made by ontoflow keys generate), not the key (not shown here)")
