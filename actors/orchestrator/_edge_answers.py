"""What the edge's answers read like, and whose session a sentence belongs to: pure helpers of
the Entry (``_edge.py``), shared with the embedded ``ask``/``chat`` (``answer_text``,
``question_output``)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec

from ontoflow.protocols.client import AskReply
from ontoflow.protocols.domain import DomainOutput

__all__ = ["answer_text", "client_session", "question_output", "reply_of"]


def answer_text(answer: DomainOutput) -> str:
    """What a person reads: the explanation, and a clarification's candidates or missing
    entities, one per line; a result without an explanation as its answers' data.

    The result is a domain's (a handler's clarification, a run's answers): any shape is read,
    a candidate that is a plain value (``"yes"``) shown as itself, anything else as JSON. It
    read every candidate as a map, and a yes/no question raised ``AttributeError`` (the HTTP
    entry's 500, a traceback in ``ask``).
    """
    lines = [answer.explanation] if answer.explanation else []
    result = answer.result if isinstance(answer.result, dict) else {}
    if answer.status == "clarification":
        for i, c in enumerate(_listed(result.get("candidates")), start=1):
            if isinstance(c, dict):
                # else its first value: the answer a reply naming it gives (``actors.intent.choose``)
                label = _shown(c.get("symbol") or c.get("goal") or c.get("market") or next(iter(c.values()), ""))
                detail = _shown(c.get("name") or c.get("description") or c.get("exchange") or "")
            else:
                label, detail = _shown(c), ""
            lines.append(f"  {i}. {label}  {detail}".rstrip())
        for m in _listed(result.get("missing")):
            if isinstance(m, dict):
                lines.append(f"  - {_shown(m.get('entity', ''))}: {_shown(m.get('description', ''))}".rstrip(": "))
            else:
                lines.append(f"  - {_shown(m)}")
    elif not answer.explanation:
        for a in _listed(result.get("answers")):
            if isinstance(a, dict):
                lines.append(f"{_shown(a.get('step', ''))} {_shown(a.get('capability', ''))}: "
                             f"{msgspec.json.encode(a.get('result')).decode()}")
    return "\n".join(lines)


def _listed(value: Any) -> list[Any]:
    """``value`` when it is a list, else nothing (a domain's result may hold anything there)."""
    return value if isinstance(value, list) else []


def _shown(value: Any) -> str:
    """A value as a person reads it: a text as itself, anything else as its JSON."""
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def question_output(run_id: str, questions: list[Any], prefix: str = "") -> DomainOutput:
    """What a suspended run asks (its first question), as the clarification a person reads;
    the daemon's edge and the embedded ``ask``/``chat`` answer it alike."""
    first = questions[0] if questions else None
    text = first.question if first is not None else "the run waits for an answer"
    candidates = list(first.candidates) if first is not None else []
    return DomainOutput(status="clarification", explanation=prefix + text, result={"candidates": candidates},
                        metadata={"run_id": run_id, "suspended": True})


#: What :func:`client_session` makes of a key's session.
_DIGEST = re.compile(r"k[0-9a-f]{40}")


def client_session(client: str, session_id: str) -> str:
    """The session ``session_id`` of the client whose CURVE key is ``client``: its own, apart
    from any other key's session of the same name ("": no CURVE, the name as given).

    A digest of both (41 characters, a valid session id in its turn): another key cannot name
    it, nor pass for it by choosing a name; the name itself is checked before (``check_entry``).
    A caller without a key (the HTTP entry, a daemon without CURVE) naming a digest gets that
    name scoped in its turn: whoever knows a key and a session name could compute the digest.
    """
    if not client:
        if _DIGEST.fullmatch(session_id) is None:
            return session_id
        client = "-"  # no CURVE key is "-": apart from every key's sessions
    return "k" + hashlib.sha256(f"{client}\n{session_id}".encode()).hexdigest()[:40]


def reply_of(answer: DomainOutput, run_id: str | None, intent: dict[str, Any]) -> AskReply:
    """The ``AskReply`` carrying ``answer`` (its run, if any, and what the adapter understood)."""
    return AskReply(status=answer.status, explanation=answer.explanation, result=answer.result,
                    confidence=answer.confidence, metadata=answer.metadata, run_id=run_id, intent=intent)
