"""``python -m ontoflow``: the ``ontoflow`` command."""

from ontoflow.runtime.cli import main

raise SystemExit(main())
