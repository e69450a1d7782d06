"""A worker's regular expressions cannot hold the daemon's loop (re2_20).

A worker peer (any peer, without CURVE) declares its capabilities' schemas in its Ready; the
daemon compiled their patterns with Python's ``re``, a backtracking matcher, and ran them on
its loop: ``^(a+)+$`` in an ``observation_schema`` and one observation of 28 characters held
it 4.7 s, and each character more doubles that (40 here: hours). Now every pattern from
outside is compiled and matched by RE2, in time linear in the text, and a pattern RE2 cannot
compile (a backreference, a lookaround) refuses the Ready with a reason naming its place in
the schema, never the pattern. Real daemon process, real sockets, a raw peer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import Error, ListRuns, RunList, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.protocols.messages import PROTOCOL_VERSION, Disconnect, Observation, Ready, Welcome
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_helpers import RawPeer

pytestmark = pytest.mark.anyio

EVIL = "^(a+)+$"
#: 40 characters: Python's re takes 2**40 steps to fail it; RE2 one pass.
LONG = "a" * 39 + "!"
#: Generous: an answer takes milliseconds; a held loop would take hours.
BOUND_S = 30


def _watch(schema_pattern: str) -> CapabilityMetadata:
    return CapabilityMetadata(
        id="t.regex.watch", outputs=["t.out"], timeout_ms=None,
        input_schema={"type": "object", "properties": {"t.name": {"type": "string", "pattern": schema_pattern}}},
        observation_schema={"type": "object", "properties": {"t.name": {"type": "string", "pattern": schema_pattern}}},
    )


def _manifest() -> dict[str, Any]:
    return {"name": "regex", "start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": {"b0": {"worker": "t.regex.watch"}}}}}


async def _registered(peer: RawPeer, meta: CapabilityMetadata) -> str:
    await peer.send(Ready(protocol=PROTOCOL_VERSION, worker_id="w-regex", capabilities=[meta]))
    welcome = await peer.next_wire(Welcome, timeout=BOUND_S)
    return welcome.session


async def test_a_backtracking_pattern_and_a_long_observation_do_not_hold_the_daemon(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    peer = None
    try:
        await daemon.ready()
        peer = RawPeer(address, identity=b"w-regex")
        session = await _registered(peer, _watch(EVIL))
        await peer.send(Observation(capability="t.regex.watch", kind="arrived", id="o1", data={"t.name": LONG},
                                    session=session))
        # Another client is answered while (or after) the daemon checks that observation...
        async with open_client(address) as dealer:
            with anyio.fail_after(BOUND_S):
                info = await request(dealer, Workers(), timeout_s=BOUND_S)
        assert isinstance(info, WorkersInfo) and [w.worker_id for w in info.workers] == ["w-regex"]
        # ...and the peer's own next request, handled after its observation (one connection, in order).
        with anyio.fail_after(BOUND_S):
            runs = await peer.ask(ListRuns(), timeout=BOUND_S)
        assert isinstance(runs, RunList)
    finally:
        if peer is not None:
            peer.close()
        daemon.close()


async def test_a_clients_long_input_against_a_workers_backtracking_pattern_is_refused_promptly(tmp_path: Path) -> None:
    # The daemon checks a Submit's inputs against the input_schema its workers declared.
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    peer = None
    try:
        await daemon.ready()
        peer = RawPeer(address, identity=b"w-regex")
        await _registered(peer, _watch(EVIL))
        async with open_client(address) as dealer:
            with anyio.fail_after(BOUND_S):
                refused = await request(dealer, Submit(manifest=_manifest(), inputs={"t.name": LONG}), timeout_s=BOUND_S)
                accepted = await request(dealer, Submit(manifest=_manifest(), inputs={"t.name": "aaaa"}), timeout_s=BOUND_S)
        assert isinstance(refused, Error), refused
        assert "t.name" in refused.message and "must match pattern" in refused.message and LONG not in refused.message
        assert isinstance(accepted, SubmitAccepted), accepted  # RE2 matches as re did: searched, $ at the end
    finally:
        if peer is not None:
            peer.close()
        daemon.close()


@pytest.mark.parametrize(("pattern", "where"), [
    (r"^(a)\1$", "observation_schema.properties['t.name'].pattern"),  # a backreference
    ("^(?=a)a$", "observation_schema.properties['t.name'].pattern"),  # a lookahead
])
async def test_a_ready_whose_pattern_re2_cannot_compile_is_refused_naming_its_place(
    tmp_path: Path, pattern: str, where: str
) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    peer = good = None
    meta = CapabilityMetadata(id="t.regex.bad", timeout_ms=None,
                              observation_schema={"type": "object", "properties": {"t.name": {"pattern": pattern}}})
    try:
        await daemon.ready()
        peer = RawPeer(address, identity=b"w-bad")
        await peer.send(Ready(protocol=PROTOCOL_VERSION, worker_id="w-bad", capabilities=[meta]))
        refused = await peer.next_wire(Disconnect, timeout=BOUND_S)
        assert refused.reason.startswith(f"capabilities[0].{where}: RE2 cannot compile it"), refused.reason
        assert pattern not in refused.reason
        good = RawPeer(address, identity=b"w-good")
        await good.send(Ready(protocol=PROTOCOL_VERSION, worker_id="w-good", capabilities=[_watch("^a+$")]))
        await good.next_wire(Welcome, timeout=BOUND_S)  # still serving
        info = await good.ask(Workers(), timeout=BOUND_S)
        assert isinstance(info, WorkersInfo) and [w.worker_id for w in info.workers] == ["w-good"]
    finally:
        for p in (peer, good):
            if p is not None:
                p.close()
        daemon.close()
