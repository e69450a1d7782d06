"""Block fields a hostile manifest can abuse: artifact paths outside the worktree, endless timeouts."""

from __future__ import annotations

import pytest

from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import manifest_from_data


def _doc(**block: object) -> dict:
    return {"start": "main", "nodes": {"main": {"entry_block": "a", "blocks": {"a": {"worker": "t.x", **block}}}}}


@pytest.mark.parametrize("name", ["/etc/passwd", "../../etc/passwd", "notes/../../x", "\\\\server\\share", "", "a\x00b"])
def test_an_artifact_outside_the_manifests_folder_is_refused(name: str) -> None:
    # Artifacts are read from the run's worktree into the step's context: "/etc/passwd" read
    # the daemon host's file for whoever submitted the manifest.
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(_doc(artifacts=["ok.txt", name]))
    assert [p.path for p in caught.value.problems] == ["nodes.main.blocks.a.artifacts[1]"]


def test_an_artifact_inside_the_folder_is_taken() -> None:
    manifest = manifest_from_data(_doc(artifacts=["notes/spec.md", "./a..b.txt"]))
    assert manifest.nodes["main"].blocks["a"].artifacts == ["notes/spec.md", "./a..b.txt"]


@pytest.mark.parametrize("timeout_ms", [2**63 - 1, 2**64 - 1, 10 * 365 * 86_400_000 + 1])
def test_a_timeout_past_ten_years_is_refused(timeout_ms: int) -> None:
    # It was taken: a step's deadline is now + timeout_ms, past what a 64-bit time holds.
    with pytest.raises(ManifestError, match="ten years") as caught:
        manifest_from_data(_doc(timeout_ms=timeout_ms))
    assert [p.path for p in caught.value.problems] == ["nodes.main.blocks.a.timeout_ms"]
    assert manifest_from_data(_doc(timeout_ms=10 * 365 * 86_400_000)).nodes["main"].blocks["a"].timeout_ms


def test_a_block_names_at_most_64_artifacts_of_at_most_1024_characters() -> None:
    # Unbounded, 1,500 spellings of one 1 MiB file had the daemon hold 4.6 GB (review18b).
    with pytest.raises(ManifestError, match="65 artifacts; a block names at most 64") as caught:
        manifest_from_data(_doc(artifacts=[f"./{'/' * i}f.txt" for i in range(65)]))
    assert [p.path for p in caught.value.problems] == ["nodes.main.blocks.a.artifacts"]
    with pytest.raises(ManifestError) as caught:
        manifest_from_data(_doc(artifacts=["ok.txt", "a" * 1025]))
    assert [p.path for p in caught.value.problems] == ["nodes.main.blocks.a.artifacts[1]"]
    assert "a" * 100 not in str(caught.value)  # the name is not echoed
    manifest_from_data(_doc(artifacts=["f.txt"] * 64))
    manifest_from_data(_doc(artifacts=["a" * 1024]))
