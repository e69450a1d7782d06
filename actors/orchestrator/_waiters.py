"""Clients held until a run ends (``Status(wait=True)``) or following it (``Watch``), bounded.

Every held request is state the daemon keeps for a peer it cannot see leave (a ROUTER is not
told when a DEALER goes), so it is bounded three ways:

- one hold per ``(client, run, kind)``: the same request again is answered at once with the
  run's current status instead of being held twice (a waiting client re-asks now and then to
  notice a restarted daemon; 200,000 repeats cost nothing);
- at most ``per_client`` runs held per client and ``max_clients`` clients holding anything:
  past them a request is refused with a clear error instead of being held;
- a lease: a hold older than ``lease_ms`` is answered with the run's current status and
  dropped, so a client that went away is forgotten within one lease (a live client re-asks).

The holds are kept in the order they were made (which is time order), so expiring the old
ones touches only those. Pure book-keeping: the caller supplies the time and sends the answers.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Hold", "Waiters"]

Kind = Literal["status", "watch"]
#: ``(client identity, run id, kind)``.
Hold = tuple[bytes, str, Kind]


class Waiters:
    """The held requests of every client (see the module docstring).

    Args:
        per_client: runs one client may wait for (or watch) at once.
        max_clients: clients that may hold requests at once.
        lease_ms: how long a request is held before it is answered with the current status.
    """

    def __init__(self, *, per_client: int = 256, max_clients: int = 4096, lease_ms: int = 60_000) -> None:
        if per_client < 1 or max_clients < 1 or lease_ms < 1:
            raise ValueError("per_client, max_clients and lease_ms must be >= 1")
        self.per_client = per_client
        self.max_clients = max_clients
        self.lease_ms = lease_ms
        self._since: dict[Hold, int] = {}  # insertion order is time order
        self._by_run: dict[str, dict[Hold, None]] = {}
        self._per_client: dict[bytes, int] = {}
        self._watches = 0  # held Watch requests: most daemons have none, and progress asks per step

    def hold(self, identity: bytes, run_id: str, kind: Kind, now: int) -> bool | str:
        """Hold a request of ``identity`` about ``run_id``.

        Returns:
            True when held now; False when the same request is already held (answer it with
            the current status); a message saying why when refused (a cap is reached).
        """
        key = (identity, run_id, kind)
        if key in self._since:
            return False
        count = self._per_client.get(identity, 0)
        if count >= self.per_client:
            return (f"this client already waits on {count} runs, the most one client may; "
                    "wait for fewer at once, or ask again with wait off")
        if count == 0 and len(self._per_client) >= self.max_clients:
            return (f"{len(self._per_client)} clients are already waiting, the most this daemon holds; "
                    "retry later, or ask again with wait off")
        self._since[key] = now
        self._by_run.setdefault(run_id, {})[key] = None
        self._per_client[identity] = count + 1
        if kind == "watch":
            self._watches += 1
        return True

    def held(self, run_id: str, kind: Kind) -> list[bytes]:
        """The clients holding a request of ``kind`` about ``run_id`` (kept held)."""
        if kind == "watch" and not self._watches:
            return []
        return [identity for identity, _, k in self._by_run.get(run_id, ()) if k == kind]

    def ended(self, run_id: str) -> list[bytes]:
        """Release every request about ``run_id``; the clients to answer, each once."""
        keys = self._by_run.pop(run_id, None)
        if not keys:
            return []
        clients = dict.fromkeys(identity for identity, _, _ in keys)
        for key in keys:
            self._drop(key)
        return list(clients)

    def expire(self, now: int) -> list[Hold]:
        """Release the requests held longer than the lease; returns them, oldest first."""
        cutoff = now - self.lease_ms
        expired: list[Hold] = []
        for key, since in self._since.items():
            if since > cutoff:
                break
            expired.append(key)
        for key in expired:
            self._drop(key)
            on_run = self._by_run.get(key[1])
            if on_run is not None:
                on_run.pop(key, None)
                if not on_run:
                    del self._by_run[key[1]]
        return expired

    def _drop(self, key: Hold) -> None:
        del self._since[key]
        if key[2] == "watch":
            self._watches -= 1
        identity = key[0]
        left = self._per_client[identity] - 1
        if left:
            self._per_client[identity] = left
        else:
            del self._per_client[identity]

    def statistics(self) -> dict[str, int]:
        """Clients holding requests, and requests held."""
        return {"clients_waiting": len(self._per_client), "requests_waiting": len(self._since)}
