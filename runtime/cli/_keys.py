"""``ontoflow keys generate DIR [--name NAME]``: a CURVE key pair (``NAME.key``, ``NAME.key_secret``)."""

from __future__ import annotations

import argparse
from typing import Any

from ontoflow.runtime.cli._shared import EXIT_OK, common_options, fail
from ontoflow.runtime.curve import generate_keys
from ontoflow.runtime.errors import ConfigError

__all__ = ["register"]


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
