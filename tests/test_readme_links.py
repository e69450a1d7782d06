"""The README's and docs/'s links and the files they cite are in the repository.

A reader follows ``[text](path)`` and ``#anchor`` links, and opens the test or example file a
sentence cites as its proof (``tests/integration/test_roles.py``); each must be there.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_resolves() -> None:
    broken = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        anchors = {_anchor(h) for h in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            if path and not (document.parent / path).exists():
                broken.append(f"{document.name}: {target}")
            elif not path and anchor not in anchors:
                broken.append(f"{document.name}: {target} (no such heading)")
    assert not broken, broken


def test_every_cited_test_and_example_file_exists() -> None:
    missing = []
    for document in DOCUMENTS:
        cited = re.findall(r"`((?:tests|configs)/[\w./-]+\.(?:py|ya?ml|json|toml))", document.read_text(encoding="utf-8"))
        missing += [f"{document.name}: {path}" for path in cited if not (REPO / path).exists()]
    assert not missing, missing
