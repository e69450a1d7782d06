"""Building small manifests and capability metadata for the checker's tests."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.checker import Report, check_document
from ontoflow.protocols.capability import CapabilityMetadata


def meta(cap_id: str, *, events: list[str] | None = None, required: list[str] | None = None,
         props: dict[str, Any] | None = None, outputs: list[str] | None = None,
         requires: list[str] | None = None) -> CapabilityMetadata:
    """Metadata with ``required`` keys declared as strings unless ``props`` says otherwise."""
    properties = {k: {"type": "string"} for k in required or []}
    properties.update(props or {})
    return CapabilityMetadata(
        id=cap_id,
        events=events or ["success", "failure"],
        requires=requires or [],
        input_schema={"type": "object", "properties": properties, "required": list(required or [])},
        outputs=outputs or [],
    )


def block(worker: str, *transitions: tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A block of ``worker`` with ``(on_signal, action)`` transitions."""
    return {"worker": worker, "transitions": [{"on_signal": s, "action": a} for s, a in transitions], **extra}


def node(entry: str, blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"entry_block": entry, "blocks": blocks, **extra}


def check(doc: dict[str, Any], *metas: CapabilityMetadata) -> Report:
    return check_document(doc, {m.id: m for m in metas})


def kinds(report: Report) -> dict[str, list[Any]]:
    """kind -> its findings."""
    out: dict[str, list[Any]] = {}
    for f in report.findings:
        out.setdefault(f.kind, []).append(f)
    return out
