"""The one interface every intent adapter implements: a sentence in, an ``IntentOutput`` out.

Two implementations are planned: the deterministic :class:`~ontoflow.actors.intent.Matcher`
(the embedded default) and an LLM adapter on an OpenAI-compatible endpoint. Whatever an
adapter answers is checked afterwards by the same pure rules (the confidence gate, the entity
validator, the goal resolver), so an adapter can be wrong but cannot smuggle anything through.
"""

from __future__ import annotations

import abc

from ontoflow.protocols.intent import IntentOutput, Turn

__all__ = ["IntentAdapter"]


class IntentAdapter(abc.ABC):
    """Turns a sentence into a goal and human-friendly entities (seed 004's Intent layer)."""

    #: A short name for logs and the evaluation report.
    name: str = "adapter"

    @abc.abstractmethod
    async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        """Classify one sentence.

        Args:
            text: the user's sentence, already checked by ``check_entry``.
            previous: the session's previous turn (its goal and entities), for follow-ups.

        Returns:
            The adapter's answer; an empty ``goal`` with confidence 0 when nothing fits.
        """
