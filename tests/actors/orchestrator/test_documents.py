"""Submitted documents on their own: compiled and admitted once per document, refused with the
contract check's report, inputs checked each time, all forgotten when the catalogue changes."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.actors.orchestrator._documents import SubmittedDocuments
from ontoflow.actors.orchestrator._registry import WorkerInfo, WorkerRegistry
from ontoflow.protocols import CapabilityMetadata, ManifestError
from ontoflow.runtime.errors import ConfigError

SIZE = CapabilityMetadata(id="test.sized", timeout_ms=1_000, idempotent=True,
                          input_schema={"type": "object", "properties": {"t.size": {"type": "integer", "minimum": 0}}})
DOC = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "test.sized"}}}}}


def _documents() -> tuple[SubmittedDocuments, WorkerRegistry]:
    registry = WorkerRegistry()
    registry.know([SIZE])
    return SubmittedDocuments(registry, {}), registry


def test_the_same_document_is_admitted_once_whatever_its_encoding() -> None:
    documents, _ = _documents()
    raw = msgspec.Raw(msgspec.msgpack.encode(DOC))
    first = documents.admit(raw, {"t.size": 1})
    assert first.refusal is None and first.workflow.name == ""
    assert documents.admit(msgspec.Raw(bytes(raw)), {"t.size": 2}) is first
    assert documents.compile(raw)[0] is first.workflow


def test_inputs_are_checked_at_every_admission() -> None:
    documents, _ = _documents()
    documents.admit(DOC, {"t.size": 1})
    with pytest.raises(ConfigError, match=r"input 't.size' must be bigger than or equal to 0 \(as declared by test.sized\)"):
        documents.admit(DOC, {"t.size": -1})


def test_a_document_the_checker_refuses_comes_back_with_its_report() -> None:
    documents, registry = _documents()
    reading = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "test.reader"}}}}}
    reader = CapabilityMetadata(id="test.reader", input_schema={"type": "object", "required": ["t.never"],
                                                                "properties": {"t.never": {"type": "string"}}})
    registry.know([reader])
    admitted = documents.admit(reading, {})
    assert admitted.refusal is not None and "t.never" in admitted.refusal


def test_an_unknown_capability_is_a_manifest_error_and_a_new_one_is_then_known() -> None:
    documents, registry = _documents()
    other = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "test.later"}}}}}
    with pytest.raises(ManifestError, match="test.later"):
        documents.admit(other, {})
    registry.know([CapabilityMetadata(id="test.later")])
    assert documents.admit(other, {}).refusal is None
    assert sorted(documents.catalog()) == ["test.later", "test.sized"]


def _worker(meta: CapabilityMetadata) -> WorkerInfo:
    return WorkerInfo(identity=b"w", worker_id="w", host="h", pid=1, capabilities={meta.id: meta}, slots=1,
                      last_seen_ms=0)


def test_a_check_off_the_loop_is_kept_when_a_worker_came_with_the_same_metadata() -> None:
    # Before: any worker that came or went during the check (the registry's version) threw its
    # result away, and the submit's answer compiled and checked the document in the loop.
    documents, registry = _documents()
    work = documents.admit(DOC, {"t.size": 1}, defer=True)
    assert callable(work)
    registry.register(_worker(SIZE))
    assert documents.keep(work())
    admitted = documents.admit(DOC, {"t.size": 1}, defer=True)
    assert not callable(admitted) and admitted.refusal is None


def test_a_check_off_the_loop_is_dropped_when_the_metadata_changed_meanwhile() -> None:
    documents, registry = _documents()
    work = documents.admit(DOC, {"t.size": 1}, defer=True)
    assert callable(work)
    registry.register(_worker(CapabilityMetadata(id="test.sized", timeout_ms=2_000, idempotent=True,
                                                 input_schema=SIZE.input_schema)))
    assert not documents.keep(work())


def test_documents_submitted_in_turn_are_each_admitted_as_themselves() -> None:
    # The last document's digest is kept (a client submits one document run after run): another
    # document in between, then the first again, must each get their own admission.
    documents, _ = _documents()
    other = {"start": "n", "nodes": {"n": {"entry_block": "b", "blocks": {"b": {"worker": "test.sized"}}}}}
    first = documents.admit(msgspec.Raw(msgspec.msgpack.encode(DOC)), {})
    second = documents.admit(msgspec.Raw(msgspec.msgpack.encode(other)), {})
    assert second is not first and second.workflow.manifest.start == "n"
    assert documents.admit(msgspec.Raw(msgspec.msgpack.encode(DOC)), {}) is first
