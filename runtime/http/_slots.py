"""How many chat turns the HTTP entry works on at once: in all, and for each client.

A turn holds its slot from its body's first byte to its answer's last (a stream's too). The
entry's bound (``max_turns``) keeps the memory of waiting turns bounded; alone, it let one
client take every slot (64 streams to a slow model) and every other client was answered 429
until that client let go. So each client (the address it connects from: the token, when there
is one, is everybody's) holds at most ``per_client`` slots, and the others stay free for the
rest. Clients behind one proxy, or on one machine's loopback, are one address: they share one
client's share. An IPv6 client is its /64 (``client_of``): one host is given a /64 and picks
any address in it, so counted by address each connection of a flood could be a client of its own.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

__all__ = ["MAX_TURNS_PER_CLIENT", "TurnSlots", "client_of"]

#: How many turns one client (one address) is worked on at once by default: a quarter of the
#: entry's default bound, so at least four clients are served while one holds all it may.
MAX_TURNS_PER_CLIENT = 16


def client_of(host: str) -> str:
    """The client a peer address counts as: an IPv4 address itself (an IPv4-mapped IPv6 one
    too), an IPv6 address its /64 (``2001:db8:1:2::/64``); anything else as given."""
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class TurnSlots:
    """The turns under way, in all and per client address.

    Args:
        total: how many at once in all.
        per_client: how many at once from one address (at most ``total`` counts).

    Raises:
        ValueError: when either bound is below 1.
    """

    def __init__(self, total: int, per_client: int) -> None:
        if total < 1 or per_client < 1:
            raise ValueError("the turn bounds must be >= 1")
        self.total, self.per_client = total, min(per_client, total)
        self.working = 0
        self._by_client: dict[str, int] = {}

    def take(self, client: str) -> Literal["entry", "client"] | None:
        """Take a slot for ``client``; None when taken, else which bound is full (nothing taken)."""
        if self.working >= self.total:
            return "entry"
        held = self._by_client.get(client, 0)
        if held >= self.per_client:
            return "client"
        self.working += 1
        self._by_client[client] = held + 1
        return None

    def give_back(self, client: str) -> None:
        """Free the slot ``client`` took (a client holding none is forgotten: the map stays small)."""
        self.working -= 1
        held = self._by_client.pop(client, 1) - 1
        if held > 0:
            self._by_client[client] = held
