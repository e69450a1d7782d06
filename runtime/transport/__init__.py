"""The ZeroMQ transport: an orchestrator's bound ROUTER and a worker's connected DEALER.

All ZeroMQ use of the runtime lives in this module. One code path serves ``inproc://``,
``ipc://`` and ``tcp://``; frames are those of ``runtime.codec`` (a ROUTER adds the peer's
identity in front).

Why no ``zmq.asyncio.Socket``: its per-call Futures cost more than the whole per-step budget
allows. Each socket here is a plain (synchronous) pyzmq socket used only with ``NOBLOCK``;
the event loop watches the socket's ``ZMQ_FD`` and a receiver parks on a bare asyncio Future
only when nothing is queued. ``ZMQ_FD`` is edge-triggered: any call into libzmq on the socket
(a send included) may consume the edge that announced an incoming message, so after every
send a parked receiver is woken if ``ZMQ_EVENTS`` shows ``POLLIN``, and a receiver checks
``ZMQ_EVENTS`` before it parks. The Context is a ``zmq.asyncio.Context`` so that code which
does use zmq.asyncio sockets can share it (``inproc://`` needs both ends on one context).

Security: with ``curve=`` a ROUTER serves CURVE (every connection encrypted; the ZAP
authenticator of ``runtime.curve`` must run on its context, and admits only authorised keys)
and a DEALER connects with its key pair and the server's public key. Binding a non-loopback
``tcp://`` address without CURVE is refused unless ``insecure=True``, which logs a warning.
The ROUTER does not set ``ROUTER_HANDOVER``: a second connection under an identity already
connected is ignored by libzmq, so nobody can take a live worker's route (and its next Invoke)
by connecting under its identity. The old connection's route lasts until the ROUTER has read
everything it sent, not until it closes; a connection made under that identity meanwhile is
ignored for its whole life (nothing it sends is read, nothing reaches it): a worker whose
session gave up before the daemon read its Ready registers on a later session (see
``tests/runtime/test_transport_identity.py`` and ``actors.worker._timers``). A CURVE ROUTER hands out each peer as a
``Peer`` (``bytes`` carrying ``user_id``, the public key its connection authenticated with),
so the orchestrator can look up that key's role. The orchestrator sends to a registered worker
under an identity carrying the largest message it accepts (``limited``): the ROUTER cuts that
worker's batches under it and withholds a message bigger on its own (``TooLarge``), which
libzmq would answer by dropping the whole connection.

Malformed frames: any frame set that does not decode is counted by reason (``dropped()``) and
skipped; the first few per interval are logged one by one (``frame_dropped``), the rest of a
flood as one ``frames_dropped`` summary line per interval (``_endpoint``). It also carries the
client API (``protocols.client``): frames with the client header decode to client messages.
"""

from ontoflow.runtime.transport._endpoint import DEFAULT_MAX_MESSAGE_BYTES, DropStatistics, Peer
from ontoflow.runtime.transport._open import is_loopback, open_dealer, open_router, shared_context
from ontoflow.runtime.transport._peer import limited
from ontoflow.runtime.transport._sockets import FRAME_MARGIN, DealerMailbox, DealerSocket, RouterSocket, TooLarge

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DealerMailbox",
    "DealerSocket",
    "DropStatistics",
    "FRAME_MARGIN",
    "Peer",
    "RouterSocket",
    "TooLarge",
    "is_loopback",
    "limited",
    "open_dealer",
    "open_router",
    "shared_context",
]
