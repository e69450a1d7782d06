"""Roles of keys and the checks of Observations (``_mailbox.Authority``), without sockets."""

from __future__ import annotations

from ontoflow.actors.orchestrator._mailbox import Authority
from ontoflow.actors.orchestrator._registry import WorkerInfo
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import CancelRun, ListRuns, Status, Submit
from ontoflow.protocols.messages import Heartbeat, Observation, Outcome, Ready
from ontoflow.runtime.transport import Peer


def _peer(key: str) -> Peer:
    peer = Peer(b"id-" + key.encode())
    peer.user_id = key
    return peer


ROLES = {"W": frozenset({"worker"}), "C": frozenset({"client"}), "A": frozenset({"admin"})}
OUTCOME = Outcome(run_id="r", step_id="s1", attempt=1, event="success")
READY = Ready(protocol=3, worker_id="w")


def test_each_role_may_send_its_own_messages_only() -> None:
    auth = Authority(ROLES)
    for message in (READY, OUTCOME, Heartbeat(), Observation(capability="c", kind="k", id="1")):
        assert auth.permitted(_peer("W"), message) and not auth.permitted(_peer("C"), message)
        assert auth.permitted(_peer("A"), message) and not auth.permitted(_peer("nobody"), message)
    for message in (Submit(manifest={}), ListRuns(), CancelRun(run_id="r")):
        assert auth.permitted(_peer("C"), message) and not auth.permitted(_peer("W"), message)
        assert auth.permitted(_peer("A"), message)
    assert auth.refused["role"] == 11


def test_without_roles_everything_is_permitted_and_plain_identities_have_no_key() -> None:
    auth = Authority(None)
    assert auth.permitted(b"w", READY) and auth.roles_of(b"w") is None
    assert auth.may_touch(b"w", "someone", CancelRun(run_id="r"))


def test_a_client_touches_its_own_runs_an_admin_every_run() -> None:
    auth = Authority(ROLES)
    assert auth.may_touch(_peer("C"), "C", CancelRun(run_id="r"))
    assert not auth.may_touch(_peer("C"), "other", Status(run_id="r"))
    assert not auth.may_touch(_peer("C"), "other", CancelRun(run_id="r"))
    assert auth.may_touch(_peer("C"), None, Status(run_id="r"))  # submitter unknown: readable
    assert not auth.may_touch(_peer("C"), None, CancelRun(run_id="r"))  # ... but only an admin cancels
    assert auth.may_touch(_peer("A"), "other", CancelRun(run_id="r"))


def _worker(**schema) -> WorkerInfo:
    meta = CapabilityMetadata(id="t.watch", **schema)
    return WorkerInfo(identity=b"w", worker_id="w", host="", pid=0, capabilities={meta.id: meta}, slots=1, last_seen_ms=0)


def test_observations_need_a_worker_offering_them_and_data_matching_the_declared_schema() -> None:
    auth = Authority(None)
    obs = Observation(capability="t.watch", kind="k", id="1", data={"t.path": "/srv/a"})
    strict = _worker(observation_schema={"type": "object", "properties": {"t.path": {"type": "string", "pattern": "^/srv/"}},
                                         "required": ["t.path"]})
    assert auth.observation_ok(strict, obs)
    assert auth.observation_ok(_worker(), obs)  # the default schema: any object
    assert not auth.observation_ok(None, obs)
    assert not auth.observation_ok(strict, Observation(capability="t.other", kind="k", id="2"))
    assert not auth.observation_ok(strict, Observation(capability="t.watch", kind="k", id="3", data={"t.path": "/etc/shadow"}))
    assert not auth.observation_ok(_worker(observation_schema={"type": "no-such-type"}), obs)
    assert dict(auth.refused) == {"observation_unregistered": 1, "observation_not_offered": 1,
                                  "observation_data_invalid": 1, "observation_schema_invalid": 1}


def test_an_observation_with_a_huge_or_unprintable_word_is_refused_before_anything_logs_it(capsys) -> None:
    auth = Authority(None)
    for obs in (Observation(capability="t.watch", kind="k", id="x" * 100_000),
                Observation(capability="t.watch", kind="k\x1b[2J", id="1"),
                Observation(capability="t" * 100_000, kind="k", id="1"),
                Observation(capability="t.watch", kind="k", id="")):
        assert not auth.observation_ok(None, obs)  # even from no worker: the words come first
    assert dict(auth.refused) == {"observation_malformed": 4}
    assert "xxxxxxxx" not in capsys.readouterr().out


def test_a_watchers_id_for_a_long_or_persian_file_name_is_a_word() -> None:
    # review12: a 230-character file name, or one with a ZWNJ, made the watcher's id fail
    # the first bound (256 printable characters): the trigger never fired.
    auth = Authority(None)
    watcher = _worker()
    for name in ("n" * 255, "نامه\u200cها.txt"):
        assert auth.observation_ok(watcher, Observation(capability="t.watch", kind="k", id=f"{name}:1700000000000000000:42"))
    assert dict(auth.refused) == {}
