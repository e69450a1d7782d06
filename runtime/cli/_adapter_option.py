"""``--intent-adapter``: which intent adapter reads a sentence, on ``daemon``, ``ask`` and ``chat``.

    --intent-adapter matcher|llm            every domain (default: matcher)
    --intent-adapter DOMAIN=matcher|llm     that domain's own (repeatable)

The flags add to (and win over) the ``[edge]`` section of the configuration file (``adapter``,
``[edge.adapters]``). ``llm`` reads its endpoint from the environment: ``ONTOFLOW_LLM_URL``,
``ONTOFLOW_LLM_MODEL``, and the API key from the variable ``ONTOFLOW_LLM_API_KEY_ENV`` names
(``OPENAI_API_KEY`` by default) or the file ``ONTOFLOW_LLM_API_KEY_FILE`` names. A name that is
no adapter is a usage error (exit 2) naming the flag.
"""

from __future__ import annotations

import argparse

from ontoflow.runtime.cli._config import ADAPTER_NAMES
from ontoflow.runtime.cli._shared import note

__all__ = ["ANY_DOMAIN", "adapter_choice", "adapter_option", "ignored_with_connect"]

#: The key of every other domain in a choice (``actors.intent.ANY_DOMAIN``).
ANY_DOMAIN = "*"


def _one(value: str) -> tuple[str, str]:
    domain, sep, name = value.rpartition("=")
    if sep and not domain.strip():
        raise argparse.ArgumentTypeError(f"{value!r}: give DOMAIN=NAME or NAME")
    name = name.strip()
    if name not in ADAPTER_NAMES:
        raise argparse.ArgumentTypeError(f"unknown intent adapter {name!r} (choose {' or '.join(ADAPTER_NAMES)})")
    return (domain.strip() if sep else ANY_DOMAIN), name


def adapter_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--intent-adapter`` (and the verb's ``[edge]`` defaults slot) to ``parser``."""
    parser.add_argument("--intent-adapter", action="append", default=[], type=_one, metavar="[DOMAIN=]matcher|llm",
                        dest="intent_adapter",
                        help="the intent adapter of every domain, or of DOMAIN (repeatable; or [edge] in the config "
                             "file); llm reads ONTOFLOW_LLM_URL, ONTOFLOW_LLM_MODEL and the key's variable or file")
    parser.set_defaults(edge_adapters={})


def adapter_choice(args: argparse.Namespace) -> dict[str, str]:
    """The choice of the file's ``[edge]`` and the flags (flags win): ``{domain or "*": name}``."""
    choice = dict(getattr(args, "edge_adapters", None) or {})
    choice.update(dict(getattr(args, "intent_adapter", None) or []))
    return choice


def ignored_with_connect(args: argparse.Namespace) -> None:
    """Say on stderr that ``--intent-adapter`` given with ``--connect`` does nothing: the
    daemon's own choice reads the sentence (the file's ``[edge]`` is quietly the daemon's too)."""
    if getattr(args, "intent_adapter", None):
        note("--intent-adapter is ignored with --connect: the daemon's choice reads the sentence")
