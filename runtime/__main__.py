"""``python -m runtime``: the ``ontoflow`` command."""

from runtime.cli import main

raise SystemExit(main())
