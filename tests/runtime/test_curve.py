"""CURVE: key files, the deny-by-default ZAP authenticator, and the transport's refusals."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import pytest
import structlog
import zmq.asyncio
import zmq.auth

from ontoflow.protocols import Heartbeat
from ontoflow.runtime.curve import (
    CurveClient,
    CurveServer,
    authenticator_running,
    generate_keys,
    load_keys,
    load_public_key,
    open_authenticator,
)
from ontoflow.runtime.errors import ConfigError, TransportError
from ontoflow.runtime.transport import is_loopback, open_dealer, open_router


def test_generated_keys_load_and_the_secret_is_private(tmp_path: Path) -> None:
    public, secret = generate_keys(tmp_path, "w1")
    assert (public.name, secret.name) == ("w1.key", "w1.key_secret")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    keys = load_keys(secret)
    assert keys.public == load_public_key(public) and len(keys.secret) == 40
    assert keys.secret.decode() not in repr(keys)
    # The ZeroMQ certificate format: zmq.auth reads the same files.
    assert zmq.auth.load_certificate(secret) == (keys.public, keys.secret)


def test_key_errors_name_the_file_not_the_key(tmp_path: Path) -> None:
    generate_keys(tmp_path, "w1")
    with pytest.raises(ConfigError, match="already exists"):
        generate_keys(tmp_path, "w1")
    with pytest.raises(ConfigError, match="not a secret key file"):
        load_keys(tmp_path / "w1.key")
    (tmp_path / "bad.key").write_text('public-key = "short"\n')
    with pytest.raises(ConfigError, match="bad.key"):
        load_public_key(tmp_path / "bad.key")
    with pytest.raises(ConfigError, match="does not exist"):
        with open_authenticator(zmq.Context.instance(), tmp_path / "missing"):
            pass


@pytest.mark.parametrize(
    ("address", "loopback"),
    [("tcp://127.0.0.1:1", True), ("tcp://[::1]:1", True), ("tcp://localhost:1", True), ("ipc:///tmp/x", True),
     ("tcp://0.0.0.0:1", False), ("tcp://*:1", False), ("tcp://10.77.0.1:1", False)],
)
def test_loopback_addresses(address: str, loopback: bool) -> None:
    assert is_loopback(address) is loopback


@pytest.mark.anyio
async def test_non_loopback_needs_curve_or_insecure_and_curve_needs_the_authenticator(tmp_path: Path) -> None:
    with pytest.raises(TransportError, match="not a loopback"):
        async with open_router("tcp://0.0.0.0:0"):
            pass
    with structlog.testing.capture_logs() as logs:
        async with open_router("tcp://0.0.0.0:0", insecure=True):
            pass
    assert [e["event"] for e in logs] == ["insecure_bind"]
    generate_keys(tmp_path, "d")
    ctx = zmq.asyncio.Context()
    try:
        with pytest.raises(TransportError, match="authenticator"):
            async with open_router("tcp://127.0.0.1:0", context=ctx, curve=CurveServer(keys=load_keys(tmp_path / "d.key_secret"))):
                pass
    finally:
        ctx.term()


@pytest.mark.anyio
async def test_only_authorised_keys_get_through(tmp_path: Path) -> None:
    keys, allowed = tmp_path / "keys", tmp_path / "allowed"
    allowed.mkdir()
    for name in ("d", "good", "bad"):
        generate_keys(keys, name)
    (allowed / "good.key").write_bytes((keys / "good.key").read_bytes())
    server_public = load_public_key(keys / "d.key")
    ctx = zmq.asyncio.Context()  # a ZAP handler serves one context: keep it away from other tests
    try:
        with structlog.testing.capture_logs() as logs, open_authenticator(ctx, allowed):
            assert authenticator_running(ctx)
            server = CurveServer(keys=load_keys(keys / "d.key_secret"))
            async with open_router("tcp://127.0.0.1:0", context=ctx, curve=server) as router:
                bad = CurveClient(keys=load_keys(keys / "bad.key_secret"), server_public=server_public)
                good = CurveClient(keys=load_keys(keys / "good.key_secret"), server_public=server_public)
                async with open_dealer(router.address, context=ctx, curve=bad, identity=b"bad") as intruder:
                    intruder.send(Heartbeat())
                    async with open_dealer(router.address, context=ctx, curve=good, identity=b"good") as friend:
                        friend.send(Heartbeat())
                        with anyio.fail_after(10):
                            batch = await router.recv_batch()
        assert not authenticator_running(ctx)
    finally:
        ctx.term()
    assert [identity for identity, _ in batch] == [b"good"]
    denied = [e for e in logs if e["event"] == "peer_denied"]
    assert denied and denied[0]["reason"] == "key not authorised"


def test_role_folders_give_their_keys_roles_and_keys_in_the_folder_itself_are_admins(tmp_path: Path) -> None:
    from ontoflow.runtime.curve import load_authorized_keys, load_roles

    keys = tmp_path / "keys"
    authorized = tmp_path / "authorized"
    found = {}
    for name, folder in (("legacy", ""), ("w", "workers"), ("c", "clients"), ("a", "admins"), ("both", "workers")):
        public, _ = generate_keys(keys, name)
        (authorized / folder).mkdir(parents=True, exist_ok=True)
        (authorized / folder / public.name).write_bytes(public.read_bytes())
        found[name] = load_public_key(public)
    (authorized / "clients" / "both.key").write_bytes((keys / "both.key").read_bytes())
    roles = load_roles(authorized)
    assert roles == {
        found["legacy"]: frozenset({"admin"}), found["w"]: frozenset({"worker"}), found["c"]: frozenset({"client"}),
        found["a"]: frozenset({"admin"}), found["both"]: frozenset({"worker", "client"}),
    }
    assert load_authorized_keys(authorized) == frozenset(found.values())
