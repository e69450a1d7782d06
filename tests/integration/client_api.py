"""The client socket helpers for the tests of this branch, wherever the CLI keeps them.

``open_client`` and ``request`` live in ``runtime.cli_daemon`` before the CLI became a package
and in ``runtime.cli`` after; the tests import them from here so they run on either side of
that change (once merged, import ``ontoflow.runtime.cli`` directly and remove this module).
"""

from __future__ import annotations

try:
    from ontoflow.runtime.cli import open_client, request
except ImportError:  # the CLI as single modules
    from ontoflow.runtime.cli_daemon import open_client, request

__all__ = ["open_client", "request"]
