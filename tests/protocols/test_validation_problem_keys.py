"""A map key that is not a string (YAML's ``1:`` or ``true:``): msgspec places it as
``- at `key` in `$.blocks```, which the path rule cut into ``nodes.mainey` in `$.blocks``.
The problem names the map holding the key, and says it is a key."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols.errors import ManifestError, validation_problem
from ontoflow.protocols.manifest import manifest_from_data


class _Blocks(msgspec.Struct):
    blocks: dict[str, int]


def test_a_key_that_is_not_a_string_names_its_map() -> None:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert({"blocks": {1: 2}}, _Blocks)
    problem = validation_problem(caught.value, "nodes.main")
    assert problem.path == "nodes.main.blocks"
    assert problem.message == "a key: Expected `str`, got `int`"


def test_a_manifest_with_an_integer_block_id_is_refused_at_its_node() -> None:
    data = {"name": "w", "start": "main",
            "nodes": {"main": {"entry_block": "a", "blocks": {1: {"worker": "x.y"}}}}}
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(data)
    paths = [p.path for p in caught.value.problems]
    assert "nodes.main.blocks" in paths, paths
    assert "`" not in "".join(paths)
