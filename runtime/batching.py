"""How many messages leave together before a batch is over: one figure for every sender.

The orchestrator's outbox (``runtime.actor.Outbox``, without a commit gate: per worker) and a
worker host's step scheduler (``actors.worker``) both start sending a long batch's messages
after :data:`SEND_CHUNK` of them, so the peer starts on the first ones while the rest is decided.
"""

__all__ = ["SEND_CHUNK"]

#: Messages (per peer) after which a batch's sends go out before its end.
SEND_CHUNK = 32
