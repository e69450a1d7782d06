"""Talking to a daemon: the client's socket, one request and its reply, the connection flags.

Clients talk to a daemon with the client API of ``protocols.client`` over a DEALER
(``open_client`` / ``request``, also used by ``bench/`` and the tests). The connection comes
from ``--connect`` / ``--curve-secret`` / ``--curve-server-key``, else the environment
(``ONTOFLOW_CONNECT``, ``ONTOFLOW_CURVE_SECRET``, ``ONTOFLOW_CURVE_SERVER_KEY``), else the
``[client]`` section of the config file (see ``_config``).

Waiting on a run (``submit --wait``, ``status --wait``, ``watch``: :func:`follow`,
:func:`submit_once`) is resumed across a daemon restart and bounded by ``--timeout``; a daemon
that holds no more waits (``too_many_waiting``) is asked for the run's status instead, and
one that cannot answer now (``unavailable``) is asked again after a bounded, jittered wait
(``_backoff``), until ``--timeout``. A waiting client sends its request again every ``REASK_S`` seconds. A live daemon holding the
request already answers at once with the run's current status (``running``); a daemon
restarted on the same journal (the DEALER reconnects by itself) gets the request anew, holds
it, and answers at the run's end. The re-ask is therefore both the liveness check and the
resume. Only the first answer must come within the answer timeout (``NoAnswerError``): a
daemon that was never there is reported at once, one that restarts is waited for.

``submit --wait`` sends its submit with an idempotency key (one is made up when the user gave
none, and said so on stderr), so a submit re-sent to a restarted daemon is the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from ontoflow.protocols.client import (
    Busy, ClientMessage, Error, ListRuns, RunProgress, RunStatus, Status, Submit, SubmitAccepted, Watch
)
from ontoflow.runtime.cli._backoff import TRANSIENT, Backoff
from ontoflow.runtime.cli._keys import refuse_a_pasted_key
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_INVALID, EXIT_JOURNAL, EXIT_NOT_FOUND, common_options, fail, note
from ontoflow.runtime.curve import CurveClient, load_keys, load_public_key
from ontoflow.runtime.cli.errors import NoAnswerError
from ontoflow.runtime.errors import ConfigError, TransportError
from ontoflow.runtime.transport import DealerSocket, open_dealer

__all__ = [
    "ANSWER_S",
    "LOOP",
    "REASK_S",
    "WaitTimedOut",
    "check_address",
    "check_timeout",
    "client_curve",
    "client_options",
    "curve_client",
    "follow",
    "look_up_hint",
    "open_client",
    "reach",
    "reply_code",
    "request",
    "run_async",
    "say",
    "submit_once",
    "unexpected",
]

#: ``anyio.run``'s keyword arguments for a client command, chosen once at start-up by the CLI's
#: ``main`` (``runtime.loop.entry_options``: the collector tuned, uvloop when installed): the
#: process's set-up, not a run's. Without ``main`` (a caller of these functions), plain asyncio.
LOOP: dict[str, Any] = {"backend": "asyncio"}

#: Seconds a daemon has to answer a request that is not a wait (``--timeout``'s default there),
#: and the first request of a wait (it is there at all).
ANSWER_S = 10.0

#: Seconds between two re-asks of a waiting client (a restarted daemon is noticed this late).
REASK_S = 2.0

_ONGOING = ("running", "cancelling")


class WaitTimedOut(Exception):
    """Raised when ``--timeout`` passes before the run ends (the run goes on)."""


@asynccontextmanager
async def open_client(address: str, *, curve: CurveClient | None = None) -> AsyncIterator[DealerSocket]:
    """Connect a client DEALER to a daemon; close it on exit.

    Raises:
        runtime.errors.TransportError: when the address is invalid.
    """
    async with open_dealer(address, curve=curve, client=True) as dealer:
        yield dealer


async def request(client: DealerSocket, message: ClientMessage, *, timeout_s: float | None = 10.0) -> ClientMessage:
    """Send one request and return the daemon's reply.

    Raises:
        NoAnswerError: when no reply comes within ``timeout_s`` (``None``: wait forever).
    """
    client.send(message)
    with anyio.move_on_after(timeout_s):
        return (await client.recv_batch(1))[0]
    raise NoAnswerError(f"no answer from {client.address} within {timeout_s:g} s (is the daemon up, is our key authorised?)")


async def reach(client: DealerSocket, timeout_s: float) -> None:
    """Make sure a daemon answers at ``client``'s address before a request it answers only
    when a run ends (``Ask``): a cheap request (the newest run, one at most) must be answered
    within ``timeout_s``. Without it, ``ask --connect`` and ``chat --connect`` at an address
    where nothing listens waited for ever (a ZeroMQ connect never fails).

    Raises:
        NoAnswerError: naming the address and ``timeout_s``.
    """
    await request(client, ListRuns(limit=1), timeout_s=timeout_s)


def run_async(func: Callable[..., Any], *args: Any) -> Any:
    """Run ``func(*args)`` to completion on the loop ``main`` chose at start-up (``LOOP``)."""
    return anyio.run(func, *args, **LOOP)


def curve_client(secret_file: str | None, server_key_file: str | None) -> CurveClient | None:
    """CURVE settings of a worker or client from its key files; None when both are absent.

    Raises:
        ConfigError: when only one file is given, or a key file is invalid.
    """
    if secret_file is None and server_key_file is None:
        return None
    try:
        if secret_file is None or server_key_file is None:
            raise ConfigError("CURVE needs both --curve-secret and --curve-server-key")
        return CurveClient(keys=load_keys(secret_file), server_public=load_public_key(server_key_file))
    except ConfigError:  # a secret key pasted for its file's name is not echoed (off the run's path)
        refuse_a_pasted_key(secret_file, "--curve-secret (or curve-secret in the config file)")
        raise


def client_options(parser: argparse.ArgumentParser) -> None:
    """The flags every client verb has: where the daemon is, CURVE, the answer's timeout."""
    parser.add_argument("--connect", default=None, metavar="ADDRESS", help="the daemon's address (else ONTOFLOW_CONNECT)")
    parser.add_argument("--curve-secret", default=None, metavar="FILE", help="this client's NAME.key_secret (else ONTOFLOW_CURVE_SECRET)")
    parser.add_argument("--curve-server-key", default=None, metavar="FILE", help="the daemon's NAME.key (else ONTOFLOW_CURVE_SERVER_KEY)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for an answer (not the run)")
    common_options(parser)
    parser.set_defaults(config_section="client")


#: The schemes ``runtime.transport`` opens; any other address fails there as a transport error.
_SCHEMES = ("inproc://", "ipc://", "tcp://")


def check_address(address: str, flag: str = "--connect (or ONTOFLOW_CONNECT)") -> None:
    """Refuse an address no transport takes before any socket opens: a usage error (exit 2)
    naming where it came from, rather than a transport failure (exit 1) or a worker's traceback.

    Raises:
        ConfigError: when ``address`` does not start with a known scheme, names nothing after
            it, or holds a control character.
    """
    # A control character names no host or path: it reached ZeroMQ, and its error echoed the
    # address raw (an escape sequence typed or pasted drove the terminal).
    if (not address.startswith(_SCHEMES) or address.endswith("://") or not _tcp_ok(address)
            or re.search(r"[\x00-\x1f\x7f]", address)):
        shown = re.sub(r"//[^/@]*@", "//...@", address)  # a user:password@ is never shown, whole or cut
        shown = shown if len(shown) <= 80 else f"{shown[:80]}..."
        raise ConfigError(f"{flag} {shown!r}: an address is tcp://HOST:PORT (PORT a number up to 65535, "
                          "or * to bind any), ipc://PATH or inproc://NAME")


def _tcp_ok(address: str) -> bool:
    """Whether a tcp address names a host and a port ZeroMQ takes (any other scheme: True)."""
    if not address.startswith("tcp://"):
        return True
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    if not host or re.search(r"[\s/@]", host):
        return False
    # An IPv6 host is bracketed whole: with one bracket open, the last colon of ``[::1`` read
    # as the port's, ZeroMQ was asked, and the typo was waited out as a daemon not answering.
    # Each part of ZeroMQ's ``SOURCE;HOST`` form is checked so (the source keeps its port).
    if any(("[" in part or "]" in part) and not re.fullmatch(r"\[[^\[\]]+\](:(\d+|\*))?", part) for part in host.split(";")):
        return False
    return port == "*" or (port.isascii() and port.isdigit() and int(port) <= 65535)


#: The longest wait a ``--timeout`` may ask for: a week. ``1e308`` passed as finite and waited
#: as for ever on a daemon that is not there.
MAX_TIMEOUT_S = 604_800.0


def check_timeout(timeout: float | None, flag: str = "--timeout") -> None:
    """Refuse a ``--timeout`` that is not a positive finite number of at most
    :data:`MAX_TIMEOUT_S` (``nan``, ``inf`` or ``1e308`` would wait for ever when the daemon
    does not answer).

    Raises:
        ConfigError: naming the flag (``flag``: where it may have come from) and the value.
    """
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_S:  # a comparison so that nan is refused too
        raise ConfigError(f"{flag} must be a positive finite number of seconds, at most {MAX_TIMEOUT_S:,.0f} "
                          f"(a week), got {timeout:g}")


def client_curve(args: argparse.Namespace) -> CurveClient | None:
    """The connection's CURVE settings from the parsed flags (after the env and config).

    Raises:
        ConfigError: when there is no daemon address or it is not one, ``--timeout`` is not
            positive, or the key files are wrong.
    """
    if args.connect is None:
        raise ConfigError("no daemon address: give --connect, set ONTOFLOW_CONNECT, or connect in the [client] section of the config file")
    check_address(args.connect)
    check_timeout(getattr(args, "timeout", None))
    try:
        return curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:  # say where a key file came from: an old variable is easy to forget
        from_env = os.environ.get("ONTOFLOW_CURVE_SECRET") == args.curve_secret
        refuse_a_pasted_key(args.curve_secret, "ONTOFLOW_CURVE_SECRET" if from_env else "--curve-secret (or [client] curve-secret)")
        given = [f"{var}={value}" for var, value in (("ONTOFLOW_CURVE_SECRET", args.curve_secret),
                                                     ("ONTOFLOW_CURVE_SERVER_KEY", args.curve_server_key))
                 if value is not None and os.environ.get(var) == value]
        if not given:
            raise
        raise ConfigError(f"{exc} (from the environment: {', '.join(given)})") from None


#: Refusals ``protocols.error_codes`` lists under "a request the client must change before
#: sending it again" besides the ``invalid_*`` ones: invalid input, exit 2.
_CHANGE_THE_REQUEST = frozenset({"idempotency_conflict", "payload_too_large"})


def reply_code(reply: ClientMessage) -> int | None:
    """The exit code of a refusal (``Busy``, ``Error``), reported; None for any other reply.

    ``unknown_run`` exits 7 (``EXIT_NOT_FOUND``), as a run missing from a journal does;
    ``journal_damaged`` exits 3 (``EXIT_JOURNAL``), as a damaged journal read locally does;
    ``unavailable`` exits 1, said to be temporary (``_backoff.TRANSIENT``).
    """
    if isinstance(reply, Busy):
        return fail(f"busy: {reply.runs_in_flight} runs in flight (limit {reply.limit}); retry later", EXIT_FAILED, kind="busy")
    if isinstance(reply, Error):
        if reply.code == "unknown_run":
            code = EXIT_NOT_FOUND
        elif reply.code == "journal_damaged":
            code = EXIT_JOURNAL
        elif reply.code.startswith("invalid") or reply.code in _CHANGE_THE_REQUEST:
            code = EXIT_INVALID
        else:
            code = EXIT_FAILED
        said = f"{reply.code}: {reply.message}"
        if reply.code in TRANSIENT and "temporary" not in reply.message:  # the journal's says so already
            said += " (temporary: retry later)"
        return fail(said, code, kind=reply.code)
    return None


def unexpected(reply: Any, wanted: type) -> int:
    """A reply of the wrong kind is wire input, never an assertion: say what came and fail."""
    return fail(f"the daemon answered {type(reply).__name__} where {wanted.__name__} was expected (a version mismatch?)",
                EXIT_FAILED, kind="unexpected_reply")


def look_up_hint(run_id: str) -> str:
    """How to find the run again after the client stopped waiting."""
    return f"the run goes on: `ontoflow status {run_id} --wait` or `ontoflow watch {run_id}` to follow it again"


def _step_key(step: dict[str, Any]) -> tuple[Any, ...]:
    return step.get("step_id"), step.get("attempt"), step.get("event"), step.get("ended_ms")


async def follow(
    client: DealerSocket,
    run_id: str,
    *,
    watch: bool = False,
    on_steps: Callable[[list[dict[str, Any]]], None] | None = None,
    deadline: float = math.inf,
    answer_timeout_s: float = 10.0,
    answered: bool = False,
    on_running: Callable[[list[tuple[str, str]]], None] | None = None,
    backoff: Backoff | None = None,
) -> ClientMessage:
    """Wait for the end of ``run_id``; returns its final ``RunStatus`` (or the refusal).

    Args:
        client: a connected client DEALER.
        run_id: the run to wait for.
        watch: follow its progress (``Watch``) instead of only waiting (``Status(wait=True)``).
        on_steps: called with the steps not shown yet, each once (a re-watch after a restart
            answers the whole trace again).
        deadline: ``anyio.current_time()`` past which to give up.
        answer_timeout_s: how long the first answer may take (the daemon is there at all).
        answered: the daemon already answered on this connection (after a submit).
        on_running: called (``watch``) with the steps in flight, (step id, capability), at
            each progress report, after ``on_steps``.
        backoff: the waits before asking again after ``unavailable`` (``Backoff()`` at the first).

    Raises:
        WaitTimedOut: past ``deadline``.
        NoAnswerError: when the first answer does not come in time.
    """
    request: ClientMessage = Watch(run_id=run_id) if watch else Status(run_id=run_id, wait=True)
    shown: set[tuple[Any, ...]] = set()
    first_sent = anyio.current_time()
    while True:
        now = anyio.current_time()
        if now >= deadline:
            raise WaitTimedOut
        if not answered and now - first_sent >= answer_timeout_s:
            raise NoAnswerError(f"no answer from {client.address} within {answer_timeout_s:g} s "
                                "(is the daemon up, is our key authorised?)")
        client.send(request)
        refused = False  # answered ``unavailable``: asked again after a wait, not at the next re-ask
        # Re-asked before the answer timeout too: a live daemon holds the first
        # ``Status(wait=True)`` silently and answers the same request again at once, so a run
        # longer than the answer timeout was reported "no answer ... is the daemon up?".
        window = REASK_S if answered else min(REASK_S, answer_timeout_s / 2, answer_timeout_s - (now - first_sent))
        with anyio.move_on_after(min(window, deadline - now)):
            while True:
                for reply in await client.recv_batch(64):
                    answered = True
                    if isinstance(reply, RunProgress):
                        fresh = [s for s in reply.steps if _step_key(s) not in shown]
                        shown.update(_step_key(s) for s in fresh)
                        if fresh and on_steps is not None:
                            on_steps(fresh)
                        if on_running is not None:
                            on_running(reply.running)
                    elif isinstance(reply, RunStatus) and reply.status in _ONGOING or isinstance(reply, SubmitAccepted):
                        continue  # the daemon is there and holds our request (or acks a re-sent submit)
                    elif isinstance(reply, Error) and reply.code == "too_many_waiting":
                        # The daemon holds no more waits (other clients hold them all): ask for
                        # the run's status at each re-ask instead of failing a run that goes on.
                        request = Status(run_id=run_id)
                    elif isinstance(reply, Error) and reply.code in TRANSIENT:
                        refused = True  # not now (its reads of this turn are spent...): the run goes on
                    else:  # the run's end, a refusal (Error, Busy) or a reply of another kind
                        return reply
                if refused:
                    break
                if backoff is not None:
                    backoff.reset()  # the daemon answered: a later refusal waits little again
        if refused:
            backoff = backoff if backoff is not None else Backoff()
            await backoff.wait(deadline - anyio.current_time())


async def submit_once(client: DealerSocket, submit: Submit, *, deadline: float = math.inf,
                      answer_timeout_s: float = 10.0, backoff: Backoff | None = None) -> ClientMessage:
    """Send ``submit`` (which carries an idempotency key) until the daemon answers it: again
    every ``REASK_S`` seconds, so a daemon that restarts meanwhile still gets it (the key makes
    the copies one run), and after a wait (``backoff``, ``Backoff()`` at the first) when it
    answers ``unavailable`` (it started nothing), until ``deadline``.

    Raises:
        WaitTimedOut: past ``deadline``.
        NoAnswerError: when no answer comes within ``answer_timeout_s``.
    """
    give_up = min(anyio.current_time() + answer_timeout_s, deadline)
    while True:
        now = anyio.current_time()
        if now >= give_up:
            if give_up == deadline:
                raise WaitTimedOut
            raise NoAnswerError(f"no answer from {client.address} within {answer_timeout_s:g} s "
                                "(is the daemon up, is our key authorised?)")
        client.send(submit)
        reply = None
        with anyio.move_on_after(min(REASK_S, give_up - now)):
            reply = (await client.recv_batch(1))[0]
        if reply is not None:
            if not isinstance(reply, Error) or reply.code not in TRANSIENT:
                return reply
            if give_up != deadline:  # the first refusal: said once
                say(f"the daemon cannot take the submit now ({reply.message}); asking again"
                    + (" until --timeout" if deadline < math.inf else ""))
            backoff = backoff if backoff is not None else Backoff()
            give_up = deadline  # the daemon is there: asked again until the deadline, not the answer's timeout
            await backoff.wait(deadline - anyio.current_time())


def say(message: str) -> None:
    """A note for the user on stderr (not an error: the command goes on); ``_shared.note``."""
    note(message)
