"""Node and block ids are plain names, as a plan's step ids are: letters, digits, ``_`` and
``-``. Anything went: an empty id, a newline or a NUL in one (which broke every text line
naming it), ``a.b`` (ambiguous in the ``node.block`` of a trace), ``a:b`` (in ``JUMP:a:b``),
and a Cyrillic 'а' beside a Latin 'a' (two ids that read the same)."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import manifest_from_data


def _workflow(node: str, block: str) -> dict[str, Any]:
    return {"name": "w", "start": node, "nodes": {node: {"entry_block": block, "blocks": {
        block: {"worker": "x.y", "transitions": [{"on_signal": "success", "action": "RETURN"}]}}}}}


@pytest.mark.parametrize("bad", ["", "a b", "a:b", "a.b", "a\nb", "a\x00b", "\u0430", "a\u200bb", "x" * 129])
@pytest.mark.parametrize("where", ["node", "block"])
def test_an_id_that_is_not_a_plain_name_is_refused_shown_escaped(bad: str, where: str) -> None:
    data = _workflow(bad, "b") if where == "node" else _workflow("main", bad)
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(data)
    [said] = [p.message for p in caught.value.problems if "must be 1-128" in p.message]
    assert said == f"id {ascii(bad[:64])} must be 1-128 letters, digits, _ or -"
    assert said.isascii() and said.isprintable()  # a newline, a NUL, a look-alike: shown escaped


@pytest.mark.parametrize("good", ["main", "list_pipes", "export-csv", "B2", "_x", "x" * 128])
def test_plain_names_pass(good: str) -> None:
    manifest = manifest_from_data(_workflow(good, good))
    assert manifest.start == good and good in manifest.nodes[good].blocks
