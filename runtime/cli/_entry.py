"""``main``, the ``ontoflow`` command's entry point, light to import.

The console script imports it before anything else of ours: the verbs' modules (0.45 s of
imports) are imported inside it, where a Ctrl-C ends the command quietly with 130. Imported at
the script's top, a Ctrl-C in those first moments printed a ``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]

#: Ctrl-C's exit code (``_shared.EXIT_INTERRUPTED``, not imported: it is what is being guarded).
_EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ontoflow`` command line (``_main.main``); returns the exit code.

    A Ctrl-C while the command's modules are imported returns 130 and prints nothing.
    """
    try:
        from ontoflow.runtime.cli._main import main as run
    except KeyboardInterrupt:
        return _EXIT_INTERRUPTED
    return run(argv)
