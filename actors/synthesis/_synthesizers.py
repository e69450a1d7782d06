"""Two implementations of one interface: the deterministic synthesiser and the model's.

A :class:`Synthesizer` writes a pipeline from a request and a discovery summary
(``generate``), and once more from the guard's errors (``regenerate``). The deterministic one
is the embedded default and never needs the second call (it writes valid pipelines); the
model's is offered exactly one tool, ``generate_pipeline`` (seed 003's capability scoping:
at synthesis nothing else, no discovery, no questions), and its prompt carries the one
contract block (``_contract``). A model that answers with nothing gives ``empty``, never a
silent failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import anyio
import msgspec
import structlog

from ontoflow.actors.llm import LlmClient
from ontoflow.actors.synthesis._contract import contract_block, regeneration_prompt
from ontoflow.actors.synthesis._deterministic import SynthesisRequest, check_request, render_pipeline, synthesize
from ontoflow.actors.synthesis._discovery import DiscoverySummary
from ontoflow.protocols.documents import decode_document
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.oml import LEGACY_KEYS

__all__ = ["DeterministicSynthesizer", "LlmSynthesizer", "SynthesisAnswer", "Synthesizer"]

log = structlog.get_logger()

#: The one tool the model is offered at synthesis.
GENERATE_PIPELINE: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "generate_pipeline",
        "description": "Return the whole OML v0.1.0 pipeline as YAML text.",
        "parameters": {
            "type": "object",
            "properties": {"pipeline_yaml": {"type": "string", "description": "the pipeline, as YAML"}},
            "required": ["pipeline_yaml"],
            "additionalProperties": False,
        },
    },
}
_CHOICE = {"type": "function", "function": {"name": "generate_pipeline"}}
# A Markdown code fence around the YAML (models write one even inside a tool call's argument),
# perhaps after a sentence: its body is the answer. Each fence line is found on its own (a
# line is tried once); one pattern for the whole block was retried from every opening line to
# the end of the text, and an answer of 80 KB of unclosed fences held the worker's loop 33 s.
_FENCE_LINE = re.compile(r"^[ \t]*```(?P<info>[\w.+-]*)[ \t]*$", re.MULTILINE)


def _decoded(text: str) -> Any:
    """``text`` as YAML, or ``text`` itself when it is none (the guard reports it at the root)."""
    try:  # through decode_document: a model's answer is untrusted (deep nesting crashed PyYAML's C loader)
        return decode_document(text.encode(), "yaml", source="the model's answer")
    except ManifestError:
        return text


def _document_of(text: str) -> Any:
    """The pipeline a model's answer text holds: the whole text as YAML, else the body of its
    first fenced block (the whole text first: a fence may sit inside a valid pipeline, a
    description's block), else the text itself (the guard says why it is no pipeline)."""
    document = _decoded(text)
    if not _looks_like_a_pipeline(document):
        inner = _unfenced(text)
        if inner is not text and _looks_like_a_pipeline(fenced := _decoded(inner)):
            document = fenced
    return document


def _looks_like_a_pipeline(document: Any) -> bool:
    return isinstance(document, dict) and any(k in document for k in ("oml_version", "steps", *LEGACY_KEYS))


def _unfenced(text: str) -> str:
    """The body of the first fenced block of ``text``, or ``text`` when it has none: from the
    first fence line that opens one (```` ``` ```` or ```` ```yaml ````, a line after it) to the
    next bare ```` ``` ```` line after it; in time linear in ``text``."""
    opening = None
    for line in _FENCE_LINE.finditer(text):
        if opening is None:
            if line.end() < len(text):  # an opening fence has a line after it
                opening = line
        elif not line["info"]:
            return text[opening.end() + 1 : line.start()]
    return text


class SynthesisAnswer(msgspec.Struct, frozen=True):
    """A synthesiser's answer: the pipeline document (whatever the model wrote: the guard
    judges it), or ``empty`` when the model answered nothing."""

    document: Any = None
    empty: bool = False


class Synthesizer(Protocol):
    """Writes pipelines (see the module docstring)."""

    async def generate(self, request: SynthesisRequest, discovery: DiscoverySummary) -> SynthesisAnswer:
        """The first pipeline for ``request``.

        Raises:
            ontoflow.actors.synthesis.SynthesisError: the request cannot be met as asked.
        """
        ...

    async def regenerate(
        self, request: SynthesisRequest, discovery: DiscoverySummary, previous: Any, problems: Sequence[Problem]
    ) -> SynthesisAnswer:
        """The one guided regeneration, naming each of ``problems``."""
        ...


class DeterministicSynthesizer:
    """The embedded default: :func:`synthesize`, the same bytes every time."""

    async def generate(self, request: SynthesisRequest, discovery: DiscoverySummary) -> SynthesisAnswer:
        """See :class:`Synthesizer`."""
        return SynthesisAnswer(synthesize(request, discovery))

    async def regenerate(
        self, request: SynthesisRequest, discovery: DiscoverySummary, previous: Any, problems: Sequence[Problem]
    ) -> SynthesisAnswer:
        """See :class:`Synthesizer` (it writes the pipeline again: it has nothing to learn)."""
        return SynthesisAnswer(synthesize(request, discovery))


class LlmSynthesizer:
    """Synthesis by a model behind an OpenAI-compatible endpoint.

    Args:
        client: the endpoint.
        components: the components the contract block lists: their ids, or id -> metadata
            (then with each one's modes and config keys).
    """

    def __init__(self, client: LlmClient, components: Iterable[str] | Mapping[str, CapabilityMetadata]) -> None:
        self._client = client
        self._components = dict(components) if isinstance(components, Mapping) else sorted(set(components))

    def _system(self) -> dict[str, str]:
        return {"role": "system", "content": (
            "You write data pipelines for ontoflow. Answer only by calling generate_pipeline with the "
            "whole pipeline as YAML. Do not ask questions: the discovery below is all there is.\n\n"
            + contract_block(self._components))}

    def _request(self, request: SynthesisRequest, discovery: DiscoverySummary) -> dict[str, str]:
        facts = msgspec.json.encode({"request": request, "discovery": discovery}).decode()
        text = f"Write the pipeline for this request over this database:\n{facts}"
        if request.hint:  # the person's answer after two invalid pipelines
            text += f"\nTwo earlier pipelines were invalid; the person adds: {request.hint}"
        return {"role": "user", "content": text}

    async def _ask(self, messages: list[dict[str, str]]) -> SynthesisAnswer:
        answer = await self._client.chat(messages, tools=[GENERATE_PIPELINE], tool_choice=_CHOICE)
        text = ""
        strays = sum(call.name != "generate_pipeline" for call in answer.tool_calls)
        if strays:  # scoping holds (nothing runs a tool but generate_pipeline): said, even beside a pipeline
            log.warning("llm_tool_out_of_scope", tool_calls=strays, offered=["generate_pipeline"])
        for call in answer.tool_calls:
            if call.name == "generate_pipeline":
                try:
                    arguments = msgspec.json.decode(call.arguments)
                except (msgspec.DecodeError, RecursionError):  # RecursionError: nested deeper than msgspec goes
                    arguments = None
                given = arguments.get("pipeline_yaml") if isinstance(arguments, dict) else None
                if isinstance(given, dict) and given:  # the pipeline as a map, not as a text: the guard judges it
                    return SynthesisAnswer(given)
                text = given if isinstance(given, str) else call.arguments  # else: the guard says it is no pipeline
                break
        else:
            text = answer.content  # a model that ignored the tool and wrote text
        if not text.strip():
            log.warning("empty_llm_response", tool_calls=len(answer.tool_calls), finish_reason=answer.finish_reason)
            return SynthesisAnswer(empty=True)
        # In a thread: decoding the 4 MB an answer may be takes seconds (14 s for a long flow
        # list), and the worker's loop (its other steps, its messages) must go on meanwhile.
        return SynthesisAnswer(await anyio.to_thread.run_sync(_document_of, text))

    async def generate(self, request: SynthesisRequest, discovery: DiscoverySummary) -> SynthesisAnswer:
        """See :class:`Synthesizer` (a request no pipeline can meet raises before the model is asked)."""
        check_request(request, discovery)
        return await self._ask([self._system(), self._request(request, discovery)])

    async def regenerate(
        self, request: SynthesisRequest, discovery: DiscoverySummary, previous: Any, problems: Sequence[Problem]
    ) -> SynthesisAnswer:
        """See :class:`Synthesizer`: the previous pipeline, then one targeted prompt."""
        check_request(request, discovery)
        shown = render_pipeline(previous) if isinstance(previous, dict) else str(previous)
        return await self._ask([
            self._system(), self._request(request, discovery),
            {"role": "assistant", "content": shown},
            {"role": "user", "content": regeneration_prompt(problems, self._components)},
        ])
