"""The OML guard's search for a secret URL in a description is linear in the description."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

from ontoflow.protocols.oml import _url_secret_in_text, check_oml

#: The pattern the guard searched with before: ``[A-Za-z][A-Za-z0-9+.-]*://`` tried at every
#: letter scanned the whole word each time (16,384 letters: 1.3 s; a pipeline's description is
#: unbounded, and the daemon checks a submitted pipeline in its loop).
_BEFORE = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://([^/@\s:]*:[^/@\s]+@|\S*[?&](pass(word|wd)?|pwd|secret|token|api[_-]?key|apikey)=)",
    re.IGNORECASE)


def test_the_search_finds_what_the_pattern_found() -> None:
    rng = random.Random(7)
    alphabet = "ab:/@?&=. \tP-1+xsecretpwdtoken"
    for _ in range(50_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.3:
            text = text.replace(" ", "h://", 1)
        if rng.random() < 0.2:
            text += rng.choice(["?pwd=", "&token=x", "u:p@h", "?api-key=", "?APIKEY=", "?password="])
        assert _url_secret_in_text(text) == bool(_BEFORE.search(text)), text
    assert _url_secret_in_text("see https://me:hunter2@db.example/x") and _url_secret_in_text("x https://h/p?token=1")
    assert not _url_secret_in_text("see https://db.example/x?page=2 and mailto:me@example.org")


def test_a_description_of_a_million_letters_is_searched_at_once() -> None:
    # Run apart, so that a search as slow as before is killed by the hang guard, not left running.
    # (A pipeline's own description is now bounded before it is scanned, at 64 KiB: the search
    # itself is what is timed here.)
    code = ("from ontoflow.protocols.oml import _url_secret_in_text; "
            "print(_url_secret_in_text('d' * 1_000_000 + ' ' + 'a://' * 250_000))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[2])
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr[-2000:]
    assert check_oml({"oml_version": "0.1.0", "name": "p", "description": "https://u:pw@h",
                      "steps": [{"id": "s", "component": "c", "mode": "read", "config": {}}]})
