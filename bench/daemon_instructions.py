"""The daemon's cost per run, counted in instructions: its composition driven in-process.

On a shared 2-core machine a throughput through the daemon moves by a third within minutes and
its CPU time by half; the instructions the daemon executes per run hardly move. This bench
builds what ``ontoflow daemon`` builds (``compose_orchestrator(serve_clients=True)``, no
journal, the daemon's collector threshold) and feeds it what its ROUTER would hand over,
decoded from real frames each time: a client's ``Submit`` keeping ``--in-flight`` runs
outstanding, those of one turn in one ``Requests`` body (``requests_from_frames``), and each
worker's Outcomes (``pack`` then ``from_frames``); what it sends is encoded as the ROUTER
encodes it (``pack`` per worker, ``replies_to_bodies`` per client). 4 workers x 64 slots by
default, the workload of ``bench.multihost_bench`` (``inputs``: ``bench.typed`` with its two
inputs; ``plain``: ``bench.noop``). No socket, no event loop: what is left is the
orchestrator's own Python plus the codec, and a little of this driver (making and packing the
Outcomes, about the same before and after a change)::

    python -m bench.daemon_instructions [--workload inputs|plain] [--runs N]     # CPU us per run
    python -m bench.daemon_instructions --callgrind [--workload inputs|plain]   # instructions per run

``--callgrind`` runs this module twice under ``valgrind --tool=callgrind`` (300 and 1,300 timed
runs after the same warm-up) and prints the difference over 1,000 runs: start-up and warm-up
cancel out. ``PYTHONHASHSEED`` is fixed so the two runs hash alike.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["Driver", "main"]

REPO = Path(__file__).resolve().parents[1]


class _Sink:
    """Stands where the ROUTER is: encodes what the outbox sends as the ROUTER would, and keeps
    the Invokes (to answer) and the client replies (to count runs ended)."""

    def __init__(self) -> None:
        from ontoflow.protocols.client_requests import replies_to_bodies
        from ontoflow.runtime.codec import pack

        self._pack = pack
        self._replies_to_bodies = replies_to_bodies
        self.wire: list[tuple[bytes, Any]] = []
        self.client: list[tuple[bytes, Any]] = []

    def send_many(self, items) -> None:
        per_peer: dict[bytes, list[Any]] = {}
        for identity, message in items:
            per_peer.setdefault(identity, []).append(message)
            self.wire.append((identity, message))
        for messages in per_peer.values():
            self._pack(messages)

    def send_client(self, identity: bytes, message: Any) -> None:
        self._replies_to_bodies([message])
        self.client.append((identity, message))

    def send_clients(self, items) -> None:
        per_client: dict[bytes, list[Any]] = {}
        for identity, message in items:
            per_client.setdefault(identity, []).append(message)
            self.client.append((identity, message))
        for messages in per_client.values():
            self._replies_to_bodies(messages)


class Driver:
    """The daemon's composition with ``workers`` workers of ``slots`` slots, fed in-process.

    Args:
        workload: ``inputs`` (``bench.typed``, two inputs checked at submit) or ``plain``.
        workers, slots: the workers announced (``Ready``) before the runs.
    """

    def __init__(self, workload: str = "inputs", workers: int = 4, slots: int = 64) -> None:
        from bench.noop import NoOp, linear_manifest
        from bench.typed import INPUTS, TypedNoOp, typed_manifest
        from ontoflow.actors.orchestrator import compose_orchestrator
        from ontoflow.protocols.client import CLIENT_HEADER, Submit
        from ontoflow.protocols.client_requests import requests_from_frames, requests_to_bodies
        from ontoflow.protocols.messages import PROTOCOL_VERSION, Outcome, Ready, Welcome
        from ontoflow.runtime.codec import HEADER, from_frames, pack

        self._requests_from_frames, self._requests_to_bodies = requests_from_frames, requests_to_bodies
        self._client_header = CLIENT_HEADER
        self._from_frames, self._pack, self._header, self._outcome = from_frames, pack, HEADER, Outcome
        composition = compose_orchestrator(serve_clients=True, address="inproc://bench-daemon-instructions")
        self.orchestrator = composition.orchestrator
        self.sink = _Sink()
        self.orchestrator.outbox.attach(self.sink)
        self._now = 1_000_000
        self._sessions: dict[bytes, str] = {}
        idents = [f"w{i}".encode() for i in range(workers)]
        for ident in idents:
            self._deliver([(ident, Ready(protocol=PROTOCOL_VERSION, worker_id=ident.decode(),
                                         capabilities=[TypedNoOp.metadata, NoOp.metadata], slots=slots))])
        for ident, message in self.sink.wire:
            if type(message) is Welcome:
                self._sessions[ident] = message.session
        self.sink.wire.clear()
        with_inputs = workload == "inputs"
        manifest = typed_manifest(3) if with_inputs else linear_manifest(3)
        self._submit = Submit(manifest=manifest, inputs=dict(INPUTS) if with_inputs else {}, wait=True)
        self._bodies: dict[int, list[bytes]] = {}  # submits of one turn -> their bodies, encoded once

    def _submits(self, client: bytes, count: int) -> list[tuple[bytes, Any]]:
        """``count`` submits as the ROUTER hands over a client's turn (one ``Requests`` body)."""
        bodies = self._bodies.get(count)
        if bodies is None:
            bodies = self._bodies[count] = self._requests_to_bodies([self._submit] * count)
        return [(client, r) for body in bodies for r in self._requests_from_frames([self._client_header, body])]

    def _deliver(self, batch: list[tuple[bytes, Any]]) -> None:
        self._now += 1
        self.orchestrator.deliver(batch, now=self._now)

    def drive(self, runs: int, in_flight: int = 256) -> None:
        """Run ``runs`` runs with ``in_flight`` outstanding; every Invoke is answered ``success``.

        Raises:
            RuntimeError: when a run ends otherwise, or nothing is left to deliver.
        """
        from ontoflow.protocols.client import Error, RunStatus
        from ontoflow.protocols.messages import Invoke

        client = b"client-1"
        submitted = min(in_flight, runs)
        done = 0
        self._deliver(self._submits(client, submitted))
        sink = self.sink
        while done < runs:
            wire, sink.wire = sink.wire, []
            per_worker: dict[bytes, list[Any]] = {}
            for ident, message in wire:
                if type(message) is Invoke:
                    per_worker.setdefault(ident, []).append(self._outcome(
                        run_id=message.run_id, step_id=message.step_id, attempt=message.attempt, event="success",
                        duration_ms=0.05, session=self._sessions[ident]))
            batch = []
            for ident, outcomes in per_worker.items():
                for body in self._pack(outcomes):
                    batch += [(ident, o) for o in self._from_frames([self._header, body])]
            replies, sink.client = sink.client, []
            again = 0
            for _, reply in replies:
                if type(reply) is RunStatus:
                    if reply.status != "completed":
                        raise RuntimeError(f"a run ended {reply.status}")
                    done += 1
                    if submitted < runs:
                        again += 1
                        submitted += 1
                elif type(reply) is Error:
                    raise RuntimeError(f"a submit was refused: {reply.code}")
            if again:
                batch += self._submits(client, again)
            if not batch and done < runs:
                raise RuntimeError("nothing left to deliver before the runs ended")
            if batch:
                self._deliver(batch)


def _in_process(workload: str, warm: int, runs: int, repeats: int) -> None:
    from ontoflow.runtime.logging import configure_logging
    from ontoflow.runtime.loop import tune_gc

    configure_logging(level="error", stream=sys.stderr)
    tune_gc()  # as ``ontoflow daemon`` sets it (``run_async``)
    driver = Driver(workload)
    driver.drive(warm)
    for _ in range(repeats):
        start = time.process_time()
        driver.drive(runs)
        print(json.dumps({"name": "daemon_instructions_cpu", "workload": workload, "runs": runs,
                          "us_per_run": round((time.process_time() - start) / runs * 1e6, 1)}), flush=True)


def _callgrind(workload: str, warm: int) -> dict[str, Any]:
    counts = []
    for runs in (300, 1300):
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
             "bench.daemon_instructions", "--workload", workload, "--warm", str(warm), "--runs", str(runs),
             "--repeats", "1"],
            cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO)},
            capture_output=True, text=True, check=True,
        )
        found = re.search(r"Collected : (\d+)", out.stderr)
        if found is None:
            raise RuntimeError("callgrind printed no instruction count")
        counts.append(int(found.group(1)))
    return {"name": "daemon_instructions", "workload": workload,
            "instructions_per_run": round((counts[1] - counts[0]) / 1000)}


def main(argv: list[str] | None = None) -> None:
    """Print CPU us per run in-process, or (``--callgrind``) instructions per run."""
    parser = argparse.ArgumentParser(prog="python -m bench.daemon_instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("inputs", "plain"), default="inputs")
    parser.add_argument("--warm", type=int, default=300, help="runs before the timed ones (default 300)")
    parser.add_argument("--runs", type=int, default=5000, help="timed runs per repeat (default 5000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--callgrind", action="store_true", help="count instructions under callgrind (valgrind)")
    args = parser.parse_args(argv)
    if args.callgrind:
        print(json.dumps(_callgrind(args.workload, args.warm)), flush=True)
    else:
        _in_process(args.workload, args.warm, args.runs, args.repeats)


if __name__ == "__main__":
    main()
