"""A large new document is copied and digested off the daemon's loop, once.

A submit of a 60 MB document held a daemon's loop 0.35 s before its check went off the loop
(its copy and its digest) and as long again after it (two more digests: the compile's key and
the verdict's), while the check itself ran in a thread.
"""

from __future__ import annotations

import threading

import msgspec
import pytest

from ontoflow.actors.orchestrator import _documents
from ontoflow.actors.orchestrator._documents import Admitted, SubmittedDocuments
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.protocols import CapabilityMetadata

_CAP = CapabilityMetadata(id="test.any", timeout_ms=1_000)


def _doc(size: int) -> msgspec.Raw:
    return msgspec.Raw(msgspec.msgpack.encode({"description": "d" * size, "start": "m", "nodes": {"m": {
        "entry_block": "a", "blocks": {"a": {"worker": "test.any"}}}}}))


@pytest.fixture()
def digests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads each document digest is made in (the real digest, counted)."""
    made: list[str] = []
    real = _documents.digest

    def counted(body: bytes) -> bytes:
        if len(body) > 1_000:  # the large document's, not the empty one a new book starts with
            made.append(threading.current_thread().name)
        return real(body)

    monkeypatch.setattr(_documents, "digest", counted)
    return made


def _off_the_loop(work):  # as DocumentChecks runs it: in a thread of its own
    found = []
    thread = threading.Thread(target=lambda: found.append(work()), name="check")
    thread.start()
    thread.join()
    return found[0]


def test_a_large_new_document_is_digested_only_in_its_check(digests: list[str]) -> None:
    registry = WorkerRegistry()
    registry.know([_CAP])
    documents = SubmittedDocuments(registry, {})
    raw = _doc(2_000_000)
    work = documents.admit(raw, {}, defer=True)
    assert callable(work) and digests == []  # before: copied and digested here, in the loop
    assert documents.keep(_off_the_loop(work))
    admitted = documents.admit(raw, {}, defer=True)  # the same request, answered after its check
    assert isinstance(admitted, Admitted) and admitted.refusal is None
    assert digests == ["check"]  # before: three times more in the loop (the key, the compile's, the verdict's)
    again = documents.admit(_doc(2_000_000), {}, defer=True)  # another submit of it: its check finds it kept
    assert callable(again)
    assert documents.keep(_off_the_loop(again))
    assert documents.admit(_doc(2_000_000), {}, defer=False).workflow is not None


def test_a_small_document_is_still_admitted_in_the_loop_when_kept(digests: list[str]) -> None:
    registry = WorkerRegistry()
    registry.know([_CAP])
    documents = SubmittedDocuments(registry, {})
    first = documents.admit(_doc(10_000), {})
    assert isinstance(first, Admitted)
    assert documents.admit(_doc(10_000), {}, defer=True) is first  # kept: no work off the loop
