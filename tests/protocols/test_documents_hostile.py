"""Documents no one should write but anyone can hand ontoflow (a manifest, an input file, a
config file): bytes that are not UTF-8, nesting deeper than a decoder's stack. Each is a
``ManifestError`` naming the file and what is wrong, never a traceback or a crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.protocols.documents import decode_document
from ontoflow.protocols.errors import ManifestError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("fmt", "data", "where"),
    [
        ("json", b'{"a": "ok",\n "b": "\xff"}', "line 2, column 8"),  # was UnicodeDecodeError
        ("toml", b'a = "ok"\nb = "\xff"', "line 2, column 6"),  # was UnicodeDecodeError
        ("yaml", b'a: ok\nb: "\xff"\n', "not valid YAML"),
    ],
)
def test_bytes_that_are_not_utf8_are_a_syntax_error_with_their_place(fmt: str, data: bytes, where: str) -> None:
    with pytest.raises(ManifestError) as caught:
        decode_document(data, fmt, source="f." + fmt)
    text = str(caught.value)
    assert f"not valid {fmt.upper()}" in text and where in text and "f." + fmt in text


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_nesting_deeper_than_the_decoder_goes_is_a_syntax_error(fmt: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    data = deep if fmt == "json" else b"a = " + deep
    try:
        decode_document(data, fmt, source="deep")
    except ManifestError as exc:
        assert f"not valid {fmt.upper()}" in str(exc) and "deep" in str(exc)
    # TOML's decoder is not recursive here: decoding is fine too, as long as nothing else escapes


@pytest.mark.parametrize("deep", [b"[" * 30_000 + b"]" * 30_000, b"- " * 30_000 + b"x\n",
                                  b"".join(b"  " * n + b"k:\n" for n in range(3_000)) + b"  " * 3_000 + b"v\n"],
                         ids=["flow", "block-sequences", "block-mappings"])
def test_deep_yaml_is_refused_not_a_segmentation_fault(tmp_path: Path, deep: bytes) -> None:
    """PyYAML's C loader recurses on the C stack: 30,000 nested lists (a 60 KB file, in flow
    or in block style) killed ``ontoflow check`` with SIGSEGV. In a child process, as it
    crashed the process."""
    doc = tmp_path / "deep.yaml"
    doc.write_bytes(deep)
    proc = subprocess.run([sys.executable, "-m", "ontoflow", "check", str(doc)], cwd=REPO, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert "Traceback" not in proc.stderr and "deep.yaml" in proc.stderr and "not valid YAML" in proc.stderr
    assert "nested deeper" in proc.stderr


@pytest.mark.parametrize("data", [b"", b"\n\n", b"# only a comment\n", b"---\n", b"null\n", b"~"])
def test_an_empty_yaml_document_says_it_is_empty(data: bytes) -> None:
    # It said "expected a map at the top level, got NoneType", naming a Python type, not the file's fault.
    with pytest.raises(ManifestError) as caught:
        decode_document(data, "yaml", source="empty.yaml")
    text = str(caught.value)
    assert "empty.yaml" in text and "the document is empty" in text and "NoneType" not in text


def test_an_empty_yaml_manifest_is_refused_by_the_cli_as_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", str(empty)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert "the document is empty" in done.stderr and "NoneType" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("fmt", "data", "path"),
    [
        ("yaml", b"nodes:\n  m:\n    blocks:\n      a: {timeout_ms: 100000000000000000000000000000}\n",
         "nodes.m.blocks.a.timeout_ms"),
        ("json", b'{"a": [1, {"b": -9223372036854775809}]}', "a[1].b"),
        ("toml", b"[daemon]\nmax-runs = 18446744073709551616\n", "daemon.max-runs"),
        # PyYAML reads UTF-16 too, where a NUL sits between the digits the quick scan looks for.
        ("yaml", "a: 123456789012345678901234567890\n".encode("utf-16"), "a"),
    ],
)
def test_an_integer_past_64_bits_is_refused_with_its_path(fmt: str, data: bytes, path: str) -> None:
    # It decoded, then failed as the run's first message was encoded: an OverflowError
    # traceback out of `ontoflow run`, `submit` and the daemon's config.
    with pytest.raises(ManifestError) as caught:
        decode_document(data, fmt, source="f." + fmt)
    [problem] = caught.value.problems
    assert problem.path == path and "past 64 bits" in problem.message


def test_integers_a_message_can_carry_are_kept() -> None:
    assert decode_document(b'{"a": [18446744073709551615, -9223372036854775808]}', "json") == {
        "a": [18446744073709551615, -9223372036854775808]}


def test_a_manifest_with_an_integer_past_64_bits_is_exit_2_without_a_traceback(tmp_path: Path) -> None:
    manifest = tmp_path / "w.yaml"
    manifest.write_text("start: m\nnodes:\n  m:\n    entry_block: a\n    blocks:\n"
                        "      a: {worker: x.y, timeout_ms: 100000000000000000000000000000}\n")
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", str(manifest)], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 2
    assert "nodes.m.blocks.a.timeout_ms: an integer past 64 bits" in done.stderr and "Traceback" not in done.stderr


_LAUGHS = b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + b"".join(
    b"%c: &%c [%s]\n" % (c, c, b",".join([b"*%c" % (c - 1)] * 9)) for c in range(ord("b"), ord("j")))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        # Nine lines, 387 million values once expanded: an --input-file like it hung `ontoflow run`.
        (_LAUGHS, "its aliases expand it past 1,000,000 values"),
        # An alias inside what it names: a RecursionError traceback as the run's inputs were encoded.
        (b"a: &a [1, *a]\n", "an alias names a collection that holds it (a cycle)"),
    ],
    ids=["billion-laughs", "cycle"],
)
def test_yaml_aliases_that_explode_or_loop_are_a_syntax_error(data: bytes, says: str) -> None:
    with pytest.raises(ManifestError) as caught:
        decode_document(data, "yaml", source="in.yaml")
    assert says in str(caught.value) and "in.yaml" in str(caught.value)


def test_yaml_aliases_that_share_a_collection_a_few_times_are_kept() -> None:
    doc = decode_document(b"x: &x {a: 1}\ny: [*x, *x, {b: *x}]\nz: *x\n", "yaml")
    assert doc["y"] == [{"a": 1}, {"a": 1}, {"b": {"a": 1}}] and doc["z"] == {"a": 1}


@pytest.mark.parametrize(("fmt", "body"), [("json", b'{"a": 1}'), ("toml", b"a = 1\n"), ("yaml", b"a: 1\n")])
def test_a_utf8_byte_order_mark_is_skipped_in_every_format(fmt: str, body: bytes) -> None:
    # A manifest saved by a Windows editor: YAML read it, JSON and TOML said "invalid
    # character at line 1, column 1", a mark the user cannot see.
    assert decode_document(b"\xef\xbb\xbf" + body, fmt) == {"a": 1}


def test_an_error_after_a_byte_order_mark_keeps_its_line_and_column() -> None:
    with pytest.raises(ManifestError, match="line 2, column 6"):
        decode_document(b'\xef\xbb\xbf{"a": 1,\n "b" 2}', "json")
