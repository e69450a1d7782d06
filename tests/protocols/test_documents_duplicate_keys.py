"""A YAML map that names a key twice: the second silently replaced the first (a manifest's
``start`` written twice ran from the last one, an input file's key took its last value).
It is a syntax error naming the key and both lines, as TOML's decoder already does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.protocols.documents import decode_document
from ontoflow.protocols.errors import ManifestError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("data", "key", "line", "first"),
    [
        (b"name: a\nstart: main\nname: b\n", "name", 3, 1),
        (b"nodes:\n  main:\n    x: 1\n    x: 2\n", "x", 4, 3),
        (b"steps:\n  - {id: a, id: b}\n", "id", 2, 2),
        (b'"obdc.base.lang.code": en\n\'obdc.base.lang.code\': pt_BR\n', "obdc.base.lang.code", 2, 1),
    ],
)
def test_a_key_given_twice_is_named_with_its_lines(data: bytes, key: str, line: int, first: int) -> None:
    with pytest.raises(ManifestError) as caught:
        decode_document(data, "yaml", source="m.yaml")
    text = str(caught.value)
    assert "m.yaml" in text and f"at line {line}," in text
    assert f"duplicate key {key!r}" in text and f"first at line {first}" in text


def test_a_long_duplicate_key_is_cut_and_no_value_is_quoted() -> None:
    key = "k" * 1_000  # YAML takes a plain key up to 1024 characters
    data = f"{key}: s3cret-one\n{key}: s3cret-two\n".encode()
    with pytest.raises(ManifestError) as caught:
        decode_document(data, "yaml", source="m.yaml")
    text = str(caught.value)
    assert "duplicate key" in text and len(text) < 400 and "s3cret" not in text


@pytest.mark.parametrize(
    "data",
    [
        b"a: 1\nb: {a: 2}\nc: [{a: 3}, {a: 4}]\n",  # the same key in different maps
        b"base: &b {x: 1}\none: {<<: *b, x: 2}\ntwo: {<<: *b, y: 3}\n",  # merge keys override
        b"? [a, b]\n: 1\nc: 2\n",  # a complex key is skipped, the map goes on
        b"- {a: 1}\n- {a: 2}\n",
    ],
)
def test_maps_without_a_repeated_key_decode_as_before(data: bytes) -> None:
    try:
        decode_document(data, "yaml", source="m.yaml")
    except ManifestError as exc:  # only the unhashable complex key may be refused, not as a duplicate
        assert "duplicate" not in str(exc)


def test_a_manifest_with_start_twice_is_exit_2_naming_the_key(tmp_path: Path) -> None:
    manifest = (REPO / "configs/examples/building_report/workflow.yaml").read_text()
    twice = manifest.replace("\nstart: main\n", "\nstart: main\nstart: export\n", 1)
    assert twice != manifest
    (tmp_path / "w.yaml").write_text(twice)
    done = subprocess.run([sys.executable, "-m", "ontoflow", "check", str(tmp_path / "w.yaml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "duplicate key 'start'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("data", "key"),
    [(b'{"name": "a", "start": "main", "name": "b"}', "name"),
     (b'{"nodes": {"main": {"x": 1, "x": 2}}}', "x"),
     (b'[{"id": "a"}, {"id": "b", "id": "c"}]', "id")],
)
def test_a_json_object_naming_a_key_twice_is_refused(data: bytes, key: str) -> None:
    with pytest.raises(ManifestError) as caught:
        decode_document(data, "json", source="m.json")
    assert "m.json: not valid JSON" in str(caught.value) and f"duplicate key {key!r}" in str(caught.value)


def test_json_objects_without_a_repeated_key_decode_as_before() -> None:
    data = b'{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}], "d": 1.5e300}'
    assert decode_document(data, "json") == {"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}], "d": 1.5e300}
