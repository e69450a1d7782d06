"""Which intent adapter reads a sentence, as a user chooses it: globally or per domain, by name.

A choice maps domain ids to adapter names (:data:`ADAPTERS`), :data:`ANY_DOMAIN` (``"*"``) for
every other domain (the matcher when absent). :func:`adapter_factories` turns it into what the
daemon's :class:`IntentActor` takes (factories it rebuilds when the catalogue changes);
:class:`RoutedAdapter` is the same rule as one adapter, for the embedded ``ask``/``chat``: the
default adapter reads the sentence first; when it names a domain with an adapter of its own,
that adapter (built over that domain alone) has the last word.

Choosing ``llm`` reads the endpoint from the environment at once (``ONTOFLOW_LLM_URL``,
``ONTOFLOW_LLM_MODEL``, the key's variable or file), so a missing variable is said before
anything starts, by name, never with a value.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

from ontoflow.actors.intent._adapter import IntentAdapter
from ontoflow.actors.intent._capability_adapter import LlmCapabilityAdapter
from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent._intent_actor import ANY_DOMAIN, AdapterFactory
from ontoflow.actors.intent._matcher import Matcher
from ontoflow.actors.intent.errors import AdapterChoiceError
from ontoflow.actors.llm import LlmConfigError, llm_config_from_env
from ontoflow.protocols.intent import IntentOutput, Turn

__all__ = ["ADAPTERS", "RoutedAdapter", "adapter_factories", "check_choice"]

#: The adapters a user can choose by name.
ADAPTERS = ("matcher", "llm")


def check_choice(choice: Mapping[str, str], where: str = "--intent-adapter") -> None:
    """Refuse a name that is no adapter.

    Args:
        choice: domain id (``"*"``: every other) -> adapter name.
        where: how the user gave it, to name the key in the message.

    Raises:
        AdapterChoiceError: naming the key and the names allowed.
    """
    for domain, name in choice.items():
        if name not in ADAPTERS:
            key = where if domain == ANY_DOMAIN else f"{where} {domain}"
            raise AdapterChoiceError(f"{key}: unknown intent adapter {name!r} (choose {' or '.join(ADAPTERS)})")


def adapter_factories(choice: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, AdapterFactory]:
    """The factories of ``choice``, keyed as :class:`IntentActor`'s ``adapter`` mapping.

    Raises:
        AdapterChoiceError: a name that is no adapter; or ``llm`` chosen and its endpoint not
            configured (naming the variable, never a value) or its key file unreadable.
    """
    check_choice(choice)
    kinds = {ANY_DOMAIN: "matcher", **choice}
    llm_factory: AdapterFactory = Matcher
    if "llm" in kinds.values():
        env = os.environ if environ is None else environ
        try:
            llm = llm_config_from_env(env)
            llm.api_key(env)  # an unreadable key file is said now, not at the first sentence
        except LlmConfigError as exc:
            raise AdapterChoiceError(f"--intent-adapter llm: {exc}") from None
        except ValueError:  # the one number read from the environment
            raise AdapterChoiceError("--intent-adapter llm: ONTOFLOW_LLM_TIMEOUT_S is not a number of seconds") from None
        llm_factory = functools.partial(LlmCapabilityAdapter, llm=llm)
    return {domain: llm_factory if name == "llm" else Matcher for domain, name in kinds.items()}


class RoutedAdapter(IntentAdapter):
    """A choice of adapters as one adapter over ``catalogue`` (see the module docstring).

    Args:
        catalogue: the domains of the moment (embedded: they do not change).
        factories: what :func:`adapter_factories` returned.
    """

    def __init__(self, catalogue: Catalogue, factories: Mapping[str, AdapterFactory]) -> None:
        self._default = factories.get(ANY_DOMAIN, Matcher)(catalogue)
        self._own = {domain: factory(Catalogue([catalogue.domains[domain]], catalogue.capabilities))
                     for domain, factory in factories.items()
                     if domain != ANY_DOMAIN and domain in catalogue.domains}
        self.name = self._default.name

    async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        """See :class:`IntentAdapter` (the adapter that answered is then :attr:`name`)."""
        intent = await self._default.classify(text, previous=previous)
        own = self._own.get(intent.primary_domain)
        if own is None:
            self.name = self._default.name
            return intent
        self.name = own.name
        return await own.classify(text, previous=previous)
