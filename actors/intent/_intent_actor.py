"""The Intent actor (seed 004's Intent layer on the kernel): a sentence in, the adapter's answer out.

It owns the intent adapters: the deterministic matcher by default, or any adapter a factory
builds (an LLM on an OpenAI-compatible endpoint), for every domain or per domain. An adapter
is built for the catalogue of the moment and rebuilt whenever that catalogue changes (a
worker announced a domain), a custom adapter as much as the matcher; a restart after a
crash builds fresh ones. Chosen per domain (a mapping of domain ids, ``"*"`` for the rest),
the default adapter reads the sentence first; when it names a domain that has an adapter of
its own, that adapter (built over that domain alone) has the last word.

The matcher never waits, so its answer is given within the batch that asked. Any other
adapter is awaited in a task of the actor's own, one per sentence, so a slow model holds up
neither the other sentences nor anyone's loop; at most ``max_classifying`` of them ask at once,
the others wait their turn in order (a burst of sentences was a burst of as many concurrent
requests to the model, which a rate-limited endpoint answers with 429s). An adapter's expected failures (the sentence
refused, the endpoint down, slow, 429/5xx, an answer that does not decode twice) are answered
as a :class:`Classified` error; anything else is a bug and crashes the actor, which its
supervisor restarts (the asks it held are failed by the Entry). A sentence whose caller went
away (:class:`AskWithdrawn`: an HTTP client closed its connection) has its adapter's call
cancelled, retries included: the model is asked nothing more for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import anyio
import structlog

from ontoflow.actors.errors import StepError
from ontoflow.actors.intent._adapter import IntentAdapter
from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent._edge_wire import EdgeWire
from ontoflow.actors.intent._matcher import Matcher
from ontoflow.actors.intent.errors import IntentAdapterFailed, IntentError
from ontoflow.protocols.edge import AskWithdrawn, Classified, Classify
from ontoflow.runtime.actor import BatchActor, wall_clock_ms

__all__ = ["ANY_DOMAIN", "INTENT", "AdapterFactory", "IntentActor"]

log = structlog.get_logger()

#: The Intent actor's name on the edge's wire.
INTENT = b"intent"

#: Builds an adapter for a catalogue (called again whenever the catalogue changes).
AdapterFactory = Callable[[Catalogue], IntentAdapter]

#: The key of the default adapter in a per-domain choice.
ANY_DOMAIN = "*"

_Choice = AdapterFactory | IntentAdapter


class IntentActor(BatchActor):
    """Classifies sentences (see the module docstring).

    Args:
        wire: the edge's mailboxes (this actor reads :data:`INTENT`'s).
        catalogue: returns the catalogue of the moment (the same object while it is unchanged).
        adapter: a factory of adapters (``Matcher`` when None), or one adapter to use whatever
            the catalogue (never rebuilt), or a mapping from domain ids (``"*"``: every other
            domain, the matcher when absent) to either.
        clock: "now" in milliseconds.
        max_classifying: how many sentences an awaited adapter works on at once.

    Attributes:
        builds: how many adapters the factory built.
    """

    def __init__(self, wire: EdgeWire, *, catalogue: Callable[[], Catalogue],
                 adapter: _Choice | Mapping[str, _Choice] | None = None,
                 clock: Callable[[], int] = wall_clock_ms, max_classifying: int = 16) -> None:
        super().__init__(clock=clock)
        self._limiter = anyio.CapacityLimiter(max_classifying)
        self.mailbox = wire.mailbox(INTENT)
        self.outbox.attach(wire.sink(INTENT))
        self._catalogue_of = catalogue
        choices = dict(adapter) if isinstance(adapter, Mapping) else {ANY_DOMAIN: adapter}
        default = choices.pop(ANY_DOMAIN, None)
        self._fixed = default if isinstance(default, IntentAdapter) else None
        self._factory: AdapterFactory = default if default is not None and self._fixed is None else Matcher  # type: ignore[assignment]
        self._per_domain: dict[str, _Choice] = choices
        self._catalogue: Catalogue | None = None
        self._adapter: IntentAdapter | None = None
        # domain -> (the catalogue it was built for, its adapter)
        self._domain_adapters: dict[str, tuple[Catalogue, IntentAdapter]] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._calls: dict[int, anyio.CancelScope] = {}  # ask id -> its adapter's call, to withdraw it
        self.builds = 0

    def classifying(self) -> tuple[int, int]:
        """How many sentences an awaited adapter works on now, and how many wait their turn."""
        return int(self._limiter.borrowed_tokens), self._limiter.statistics().tasks_waiting

    def understanding(self) -> tuple[Catalogue, IntentAdapter]:
        """The catalogue of the moment and the adapter on it (built when the catalogue changed)."""
        current = self._catalogue_of()
        if self._fixed is not None:
            self._catalogue = current
            return current, self._fixed
        if self._adapter is None or current is not self._catalogue:
            self._adapter = self._factory(current)
            self._catalogue = current
            self.builds += 1
            log.info("intent_adapter_built", adapter=self._adapter.name, domains=len(current.domains))
        return current, self._adapter

    async def serve(self) -> None:
        """Serve the mailbox until cancelled (a supervisor's child: a crash raises out of here)."""
        if self._fixed is None:
            self._adapter = None  # a (re)start builds fresh adapters
        self._domain_adapters.clear()
        self._calls.clear()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                await self.serve_mailbox(self.mailbox)
            finally:
                self._tg = None

    def for_domain(self, domain: str, catalogue: Catalogue) -> IntentAdapter | None:
        """The adapter of ``domain``'s own (built over that domain alone), or None."""
        choice = self._per_domain.get(domain)
        manifest = catalogue.domains.get(domain)
        if choice is None or manifest is None:
            return None
        if isinstance(choice, IntentAdapter):
            return choice
        built = self._domain_adapters.get(domain)
        if built is None or built[0] is not catalogue:
            built = self._domain_adapters[domain] = (catalogue, choice(Catalogue([manifest], catalogue.capabilities)))
            self.builds += 1
            log.info("intent_adapter_built", adapter=built[1].name, domain=domain)
        return built[1]

    def receive(self, identity: bytes, message: object, now: int) -> None:
        """Classify a :class:`Classify`: at once with the matcher, else in a task."""
        match message:
            case Classify():
                catalogue, adapter = self.understanding()
                if isinstance(adapter, Matcher):  # it never waits: answered within this batch
                    intent = adapter.match(message.text, previous=message.previous)
                    own = self.for_domain(intent.primary_domain, catalogue) if self._per_domain else None
                    if own is None:
                        self.send(identity, Classified(ask_id=message.ask_id, intent=intent, adapter=adapter.name))
                        return
                    adapter, catalogue = own, None  # type: ignore[assignment]
                if self._tg is not None:
                    # Made here, not in the task: a withdrawal in this same batch finds it.
                    scope = self._calls[message.ask_id] = anyio.CancelScope()
                    self._tg.start_soon(self._call, scope, identity, message, adapter, catalogue)
            case AskWithdrawn():
                scope = self._calls.pop(message.ask_id, None)
                if scope is not None:
                    scope.cancel()
                    log.debug("intent_call_withdrawn")
            case _:
                log.warning("edge_message_unexpected", actor="intent", op=type(message).__name__)

    async def _call(self, scope: anyio.CancelScope, identity: bytes, message: Classify, adapter: IntentAdapter,
                    catalogue: Catalogue | None) -> None:
        """``_classify`` within ``scope`` (cancelled when the ask is withdrawn: nothing is answered)."""
        try:
            with scope:
                await self._classify(identity, message, adapter, catalogue)
        finally:
            self._calls.pop(message.ask_id, None)

    async def _classify(self, identity: bytes, message: Classify, adapter: IntentAdapter,
                        catalogue: Catalogue | None) -> None:
        """Await ``adapter``; then, when ``catalogue`` is given and the answer's domain has an
        adapter of its own, that one too."""
        try:
            async with self._limiter:
                intent = await adapter.classify(message.text, previous=message.previous)
                own = self.for_domain(intent.primary_domain, catalogue) if catalogue is not None and self._per_domain else None
                if own is not None:
                    adapter = own
                    intent = await own.classify(message.text, previous=message.previous)
        except (IntentError, StepError) as exc:  # expected: refused, or the endpoint failed
            log.warning("intent_adapter_failed", adapter=adapter.name, error=type(exc).__name__)
            # An adapter's own failure says what failed (never the sentence or a key); any
            # other error only its type.
            error = str(exc) if isinstance(exc, IntentAdapterFailed) else \
                f"the intent adapter {adapter.name} failed ({type(exc).__name__})"
            self.send(identity, Classified(ask_id=message.ask_id, adapter=adapter.name, error=error))
            return
        self.send(identity, Classified(ask_id=message.ask_id, intent=intent, adapter=adapter.name))
