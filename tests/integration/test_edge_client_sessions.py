"""A conversation belongs to the client that holds it (a real daemon under CURVE, real clients).

Before: ``Ask.session_id`` was taken as given, whoever sent it. Client 2, naming client 1's
session, read client 1's memory and answered the question client 1 was asked ("which
company?" -> "Vale" completed client 1's turn); with a run waiting on a question, client 2's
sentence would have resumed client 1's run. Under CURVE a session is now the asking key's own:
the same name from another key is another conversation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Ask, AskReply, Error, RunStatus, Status, Workers, WorkersInfo
from tests.integration.durable_helpers import Daemon
from tests.integration.replay_helpers import env
from tests.integration.roles_helpers import Keys, RawPeer, stop

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"


async def test_another_key_naming_a_session_gets_a_conversation_of_its_own(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    address = f"ipc://{tmp_path}/d.sock"
    # No worker here: client 1's answered question starts a run that waits for one; a short
    # schedule-to-start ends that wait in 0.5 s rather than the default's 30 s (only the intent is asked of).
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--domains", str(FINANCE),
                    "--curve-secret", str(keys.secret("daemon")), "--authorized-keys", str(keys.authorized),
                    "--schedule-to-start-ms", "500")
    peers: list[RawPeer] = []
    try:
        await daemon.ready()
        client1, client2 = (RawPeer(address, curve=keys.client(name)) for name in ("client1", "client2"))
        peers += [client1, client2]
        asked = await client1.ask(Ask(session_id="shared", text="qual o preço?"), timeout=30)
        assert isinstance(asked, AskReply) and asked.status == "clarification"
        # client 2 names the same session: its "Vale" is no answer to client 1's question
        stranger = await client2.ask(Ask(session_id="shared", text="Vale"), timeout=30)
        assert isinstance(stranger, AskReply)
        assert stranger.intent.get("entities") != {"symbol_text": "Vale"}, "client 2 answered client 1's question"
        # client 1's question still waits for client 1's answer
        own = await client1.ask(Ask(session_id="shared", text="Vale"), timeout=30)
        assert isinstance(own, AskReply)
        assert own.intent["goal"] == "GET_QUOTE" and own.intent["entities"] == {"symbol_text": "Vale"}
    finally:
        for peer in peers:
            peer.close()
        daemon.close()


@pytest.mark.parametrize("journaled", [True, False], ids=["journal", "no-journal"])
async def test_a_run_an_ask_started_is_the_asking_keys_own(tmp_path: Path, journaled: bool) -> None:
    # Before: the edge submitted its runs with no owner, so any client key could read them
    # and none (but an administrator) could cancel its own. Without a journal the owner was
    # only in the journal's row, which is not there: the client service notes it too.
    keys = Keys(tmp_path)
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite" if journaled else None, tmp_path / "d.log", "--domains", str(FINANCE),
                    "--curve-secret", str(keys.secret("daemon")), "--authorized-keys", str(keys.authorized))
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--capabilities", str(FINANCE / "handlers.py"),
         "--curve-secret", str(keys.secret("worker")), "--curve-server-key", str(keys.root / "daemon.key")],
        cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    peers: list[RawPeer] = []
    try:
        await daemon.ready()
        client1, client2 = (RawPeer(address, curve=keys.client(name)) for name in ("client1", "client2"))
        peers += [client1, client2]
        with anyio.fail_after(30):
            while True:
                info = await client1.ask(Workers())
                if isinstance(info, WorkersInfo) and any("finance.get_stock_price" in w.capabilities for w in info.workers):
                    break
                await anyio.sleep(0.02)  # re-asked: registration is the worker's move
        answered = await client1.ask(Ask(session_id="s1", text="qual o preço da Vale?"), timeout=30)
        assert isinstance(answered, AskReply) and answered.status == "success" and answered.run_id, answered
        refused = await client2.ask(Status(run_id=answered.run_id))
        assert isinstance(refused, Error) and refused.code == "forbidden"
        assert isinstance(await client1.ask(Status(run_id=answered.run_id)), RunStatus)
    finally:
        for peer in peers:
            peer.close()
        stop(worker)
        daemon.close()
