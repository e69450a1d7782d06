"""Every test of the benchmark harness carries the ``bench`` marker: ``make test`` runs them,
``pytest -m "not bench"`` leaves them out (they start real daemons, workers and echo
processes, about a quarter of the suite's time)."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the items collected from this folder (new test files included) with ``bench``."""
    for item in items:
        if _HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.bench)
