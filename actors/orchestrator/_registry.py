"""Which workers are alive, what they offer, and what each is running (the Majordomo broker's
book-keeping). Pure data and decisions: the orchestrator actor feeds it time and messages."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Collection, Iterable, Iterator

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.messages import Invoke

__all__ = ["MAX_KNOWN_BYTES", "MAX_KNOWN_CAPABILITIES", "InFlight", "SentStep", "StepKey", "WorkerInfo", "WorkerRegistry"]

StepKey = tuple[str, str, int]  # (run_id, step_id, attempt)

#: The most capabilities the catalogue keeps, and the most bytes their metadata take encoded.
#: The catalogue keeps what workers offered (journaled, read back at start): a peer registering
#: again and again with 1,024 new ids each time grew it, and the journal, without end. A Ready
#: that would take it past either bound first has room made for it: the entries no live worker
#: offers that the caller does not spare (``_catalogue_room.py``: given at start, or used by a
#: run in flight) go, those offered longest ago first (``WorkerRegistry.make_room``); only when
#: that is not enough is the Ready refused
#: (``WorkerRegistry.room_for``), so a full catalogue (about 16 Readys of 1,024 ids fill it)
#: refuses only while what fills it is offered or in use, never for good.
MAX_KNOWN_CAPABILITIES, MAX_KNOWN_BYTES = 16_384, 64 * 2**20

_size_of = msgspec.msgpack.Encoder().encode


class InFlight(msgspec.Struct, gc=False):
    """A step attempt sent to a worker and not yet answered, known without its Invoke: one
    recovered after a restart, awaiting its worker (a step the pool sends is recorded by its
    Invoke, see :data:`SentStep`). ``gc=False``: strings and ints only, never in a cycle."""

    run_id: str
    step_id: str
    attempt: int
    capability: str
    sent_ms: int


#: What a worker's ``in_flight`` holds for an attempt: the Invoke the pool sent (no record made
#: beside it per step: that cost ~800 instructions a step), or an :class:`InFlight`. Only the
#: fields both have are read: ``run_id``, ``step_id``, ``attempt``, ``capability``.
SentStep = InFlight | Invoke


class WorkerInfo(msgspec.Struct, kw_only=True):
    """One live worker: its identity on the ROUTER, what it offers, its load."""

    identity: bytes
    worker_id: str
    host: str
    pid: int
    capabilities: dict[str, CapabilityMetadata]
    slots: int
    last_seen_ms: int
    in_flight: dict[StepKey, SentStep] = msgspec.field(default_factory=dict)
    #: The token this registration was welcomed with; the worker's messages must carry it.
    session: str = ""
    #: The CURVE public key (z85) that registered it; "" without CURVE.
    key: str = ""
    #: The token the registering Ready presented (a previous session's, or ""), and whether
    #: a message carrying ``session`` has come since: until one has, the Welcome may have been
    #: lost with a connection the worker replaced, and it may register again presenting the
    #: same token (see ``WorkerPool.ready``).
    presented: str = ""
    confirmed: bool = False
    #: The ids of the domains its Ready announced (``ontoflow workers`` shows them).
    domains: list[str] = msgspec.field(default_factory=list)
    #: The largest message it accepts (``Ready.max_message_bytes``; 0: unknown). Its
    #: ``identity`` carries it too (``runtime.transport.limited``), for the ROUTER.
    max_message_bytes: int = 0

    def carries(self, token: str) -> bool:
        """Whether ``token`` is this registration's session token, compared in constant time
        (a Heartbeat anyone may send is answered the same whatever part of it matches)."""
        return hmac.compare_digest(token.encode(errors="replace"), self.session.encode())

    def token_kind(self, token: str) -> str:
        """What a new Ready of this worker's identity presenting ``token`` is.

        Returns:
            ``"session"``: this session's token (the worker itself, on a new connection).
            ``"resent"``: the token its first Ready presented, while no message has carried
            ours: the same worker again, our Welcome having gone to a connection it had
            already replaced (after a daemon restart its first Ready may wait in a socket it
            gave up on). ``"stale"``: that same token once a message has carried ours: a Ready
            it sent before it had our Welcome, left queued by a replaced connection and read
            late (only that worker knew the token). ``"other"``: anything else (no token, or a
            wrong one): not provably this worker.
        """
        if token == self.session:
            return "session"
        if token and token == self.presented:
            return "stale" if self.confirmed else "resent"
        return "other"

    @property
    def free_slots(self) -> int:
        """Slots not taken by in-flight steps (credit-based flow control)."""
        return self.slots - len(self.in_flight)


class WorkerRegistry:
    """The live workers, indexed by identity and by capability.

    A step goes to a live worker that offers its capability and has a free slot; among
    several, the least loaded (fewest in flight relative to slots), ties broken by
    registration order so dispatch stays deterministic.
    """

    def __init__(self) -> None:
        self._workers: dict[bytes, WorkerInfo] = {}
        self._by_capability: dict[str, list[WorkerInfo]] = {}
        self._step_owner: dict[StepKey, WorkerInfo] = {}
        self._known: dict[str, CapabilityMetadata] = {}  # in the order last offered (or named), oldest first
        self._known_sizes: dict[str, int] = {}  # encoded, per entry: the catalogue's bytes are bounded
        self.known_bytes = 0
        #: Bumped whenever a worker comes or goes or the catalogue changes: what is offered
        #: or known may have changed.
        self.version = 0

    def __len__(self) -> int:
        return len(self._workers)

    def __iter__(self) -> Iterator[WorkerInfo]:
        return iter(self._workers.values())

    def get(self, identity: bytes) -> WorkerInfo | None:
        """The worker registered under ``identity``, if any."""
        return self._workers.get(identity)

    def register(self, info: WorkerInfo, *, keep: Collection[StepKey] = ()) -> tuple[list[SentStep], list[SentStep]]:
        """Add (or replace) a worker.

        Args:
            info: the new registration (its ``in_flight`` is empty).
            keep: attempts the worker says it still holds (a re-registration after a
                reconnect); those the replaced registration had in flight stay in flight.

        Returns:
            ``(orphans, kept)``: the replaced registration's other in-flight steps (the
            caller decides their fate), and the ones carried over.
        """
        previous = self.remove(info.identity)
        self.know(info.capabilities.values())
        known = self._known
        for cap in info.capabilities:  # offered now: the last to make room
            known[cap] = known.pop(cap)
        self.version += 1
        kept = [step for step in previous if (step.run_id, step.step_id, step.attempt) in keep]
        orphans = [step for step in previous if (step.run_id, step.step_id, step.attempt) not in keep]
        self._workers[info.identity] = info
        for cap in info.capabilities:
            self._by_capability.setdefault(cap, []).append(info)
        for step in kept:
            self.assign(info, step)
        return orphans, kept

    def remove(self, identity: bytes) -> list[SentStep]:
        """Forget a worker; returns its in-flight steps (the caller decides their fate)."""
        info = self._workers.pop(identity, None)
        if info is None:
            return []
        self.version += 1
        for cap in info.capabilities:
            peers = self._by_capability.get(cap, [])
            if info in peers:
                peers.remove(info)
            if not peers:
                self._by_capability.pop(cap, None)
        for key in info.in_flight:
            self._step_owner.pop(key, None)
        return list(info.in_flight.values())

    def offers(self, capability: str) -> bool:
        """Whether any live worker offers ``capability``."""
        return bool(self._by_capability.get(capability))

    def disagreements(self, identity: bytes, offered: Iterable[CapabilityMetadata]) -> list[tuple[str, list[str]]]:
        """``(capability, fields)`` for each of ``offered`` that another live worker than
        ``identity`` offers with other metadata, naming the fields that differ (two versions
        of a capability side by side: a rolling upgrade, or a mistake; never their values)."""
        found = []
        for meta in offered:
            other = next((p.capabilities[meta.id] for p in self._by_capability.get(meta.id, ())
                          if p.identity != identity and p.capabilities[meta.id] != meta), None)
            if other is not None:
                found.append((meta.id, [f for f in meta.__struct_fields__ if getattr(meta, f) != getattr(other, f)]))
        return found

    def catalog(self) -> dict[str, CapabilityMetadata]:
        """The metadata of every capability some live worker offers."""
        return {cap: peers[0].capabilities[cap] for cap, peers in self._by_capability.items()}

    def know(self, metadata: Iterable[CapabilityMetadata]) -> list[CapabilityMetadata]:
        """Add capabilities to the catalogue (a worker offered them, the journal or the daemon's
        configuration named them); they stay known when their workers go (until dropped to
        make room for others: ``make_room``).

        Returns:
            The entries that were new or differed from the catalogue's (what to journal).
        """
        changed = [m for m in metadata if self._known.get(m.id) != m]
        if changed:
            for meta in changed:
                size = len(_size_of(meta))
                self.known_bytes += size - self._known_sizes.get(meta.id, 0)
                self._known_sizes[meta.id] = size
                self._known[meta.id] = meta
            self.version += 1
        return changed

    def room_for(self, metadata: Iterable[CapabilityMetadata]) -> str | None:
        """Why the catalogue cannot take ``metadata`` (a registering worker's offer) without
        passing :data:`MAX_KNOWN_CAPABILITIES` or :data:`MAX_KNOWN_BYTES`, or None. What it
        already holds as offered costs nothing: a worker registering again is never refused."""
        changed = {m.id: m for m in metadata if self._known.get(m.id) != m}
        if not changed:
            return None
        new = sum(1 for cap in changed if cap not in self._known)
        if len(self._known) + new > MAX_KNOWN_CAPABILITIES:
            return (f"catalogue holds its limit of {MAX_KNOWN_CAPABILITIES} capabilities "
                    f"({len(self._known)} known, {new} new offered)")
        size = self.known_bytes + sum(len(_size_of(m)) - self._known_sizes.get(m.id, 0) for m in changed.values())
        if size > MAX_KNOWN_BYTES:
            return f"catalogue holds its limit of {MAX_KNOWN_BYTES} bytes of capability metadata"
        return None

    def make_room(self, metadata: Iterable[CapabilityMetadata], spare: Callable[[str], bool]) -> tuple[list[str], bool]:
        """Drop catalogue entries so that ``metadata`` (a registering worker's offer) fits within
        :data:`MAX_KNOWN_CAPABILITIES` and :data:`MAX_KNOWN_BYTES`: those no live worker offers,
        not in ``metadata``, and that ``spare`` does not keep (a run in flight uses them), those
        offered longest ago first.

        Returns:
            ``(dropped, movable)``: the ids dropped (none when it fits already, or when dropping
            every such entry would not make it fit: ``room_for`` then says why), and whether any
            entry could have gone for some offer (False: none at all, whatever is offered, until
            a worker goes, the catalogue changes or ``spare`` keeps less).
        """
        offer = {m.id: m for m in metadata}
        changed = {cap: m for cap, m in offer.items() if self._known.get(cap) != m}
        count = len(self._known) + sum(1 for cap in changed if cap not in self._known)
        size = self.known_bytes + sum(len(_size_of(m)) - self._known_sizes.get(cap, 0) for cap, m in changed.items())
        if count <= MAX_KNOWN_CAPABILITIES and size <= MAX_KNOWN_BYTES:
            return [], True
        dropped: list[str] = []
        movable = False
        for cap in self._known:  # oldest offered first
            if count <= MAX_KNOWN_CAPABILITIES and size <= MAX_KNOWN_BYTES:
                break
            if self._by_capability.get(cap) or spare(cap):
                continue
            movable = True
            if cap in offer:
                continue
            dropped.append(cap)
            count -= 1
            size -= self._known_sizes[cap]
        if count > MAX_KNOWN_CAPABILITIES or size > MAX_KNOWN_BYTES:
            return [], movable
        for cap in dropped:
            del self._known[cap]
            self.known_bytes -= self._known_sizes.pop(cap)
        self.version += 1
        return dropped, True

    def known(self) -> dict[str, CapabilityMetadata]:
        """The catalogue: the metadata of every capability offered or named and not dropped to
        make room (a copy); a step of one with no live worker waits for a worker."""
        return dict(self._known)

    def pick(self, capability: str) -> WorkerInfo | None:
        """The least-loaded live worker offering ``capability`` with a free slot, or None."""
        best: WorkerInfo | None = None
        best_load = 1.0  # a worker without a free slot is at 1.0 or more: never picked
        for info in self._by_capability.get(capability, ()):
            load = len(info.in_flight) / info.slots  # free_slots inlined: this runs for every step
            if load < best_load:  # strictly: registration order breaks ties
                best, best_load = info, load
        return best

    def place(self, step: SentStep) -> WorkerInfo | None:
        """``assign`` ``step`` to the worker ``pick`` chooses for its capability, and return that
        worker; None (nothing assigned) when no live worker offering it has a free slot. One call
        for both: it runs for every step sent."""
        best = self.pick(step.capability)  # one rule of choice: the drained queue picks by it too
        if best is not None:
            self.assign(best, step)  # one rule of record: the two indexes are kept in step there
        return best

    def pick_accepting(self, capability: str, size: int) -> WorkerInfo | None:
        """``pick`` among the workers known to accept a message of ``size`` bytes (their
        ``max_message_bytes`` at least that; not one of unknown limit): for the rare Invoke
        too big for the worker first picked."""
        best: WorkerInfo | None = None
        best_load = 2.0
        for info in self._by_capability.get(capability, ()):
            busy = len(info.in_flight)
            if busy < info.slots and info.max_message_bytes >= size and busy / info.slots < best_load:
                best, best_load = info, busy / info.slots
        return best

    def assign(self, info: WorkerInfo, step: SentStep) -> None:
        """Record that ``step`` was sent to ``info``."""
        key = (step.run_id, step.step_id, step.attempt)
        info.in_flight[key] = step
        self._step_owner[key] = info

    def release(self, run_id: str, step_id: str, attempt: int) -> WorkerInfo | None:
        """Forget an answered (or abandoned) step; returns the worker that held it, if any."""
        key = (run_id, step_id, attempt)
        info = self._step_owner.pop(key, None)
        if info is not None:
            info.in_flight.pop(key, None)
        return info

    def owner(self, run_id: str, step_id: str, attempt: int) -> WorkerInfo | None:
        """The worker running that step attempt, if any."""
        return self._step_owner.get((run_id, step_id, attempt))

    def owner_of(self, key: StepKey) -> WorkerInfo | None:
        """``owner`` of the attempt ``(run_id, step_id, attempt)`` (for every Outcome: no tuple made again)."""
        return self._step_owner.get(key)

    def answered(self, key: StepKey, identity: bytes, session: str) -> WorkerInfo | None:
        """Release the attempt ``key`` if it is in flight on the worker registered as
        ``identity`` in ``session`` (an Outcome that may be applied); returns that worker, or
        None, releasing nothing, when it is not (``owner_of`` then tells why). One call for
        the lookup and the release together: it runs for every Outcome."""
        owners = self._step_owner
        info = owners.pop(key, None)  # taken, and put back when not applicable (rare): one lookup fewer per Outcome
        if info is None:
            return None
        if info.identity != identity or info.session != session:
            owners[key] = info  # ``_step_owner`` is only looked up by key: where it goes back does not matter
            return None
        info.in_flight.pop(key, None)
        return info

    def expired(self, now_ms: int, silence_ms: int) -> list[WorkerInfo]:
        """Every worker silent for longer than ``silence_ms`` (all of them, not just the first)."""
        return [w for w in self._workers.values() if now_ms - w.last_seen_ms > silence_ms]
