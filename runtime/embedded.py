"""The embedded default: an orchestrator and its workers started locally, talking ZeroMQ.

A composition root (it may import ``actors``). Workers run as supervised child processes over
``ipc://`` or ``tcp://`` (a crashed worker process is restarted, within the supervisor's
intensity), or inside this process over ``inproc://``. One code path: only the address differs.

A run whose step asks a person a question (a ``clarification``) is suspended; the cluster lives
only as long as its caller, so :meth:`LocalCluster.run_until_asked` returns the questions when
that happens (:class:`Asked`) and :meth:`LocalCluster.answer` resumes the run (``ontoflow ask``
and ``ontoflow chat`` ask the person in the terminal). ``run`` waits for the end whatever
happens (a question then waits for its expiry).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import EdgeService, Orchestrator, RunResult, compose_orchestrator
from ontoflow.actors.orchestrator.engine import CompiledWorkflow, compile_workflow
from ontoflow.actors.worker import WorkerHost, instantiate
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import Question
from ontoflow.protocols.manifest import WorkflowManifest
from ontoflow.runtime.actor import RestartPolicy, Supervisor, process_child
from ontoflow.runtime.errors import StartupError
from ontoflow.runtime.journal import Journal
from ontoflow.runtime.logging import log_file
from ontoflow.runtime.transport import shared_context

__all__ = ["Asked", "LocalCluster", "TRANSPORTS", "WORKER_NICE", "open_local_cluster", "worker_argv"]

#: The default CPU priority step-down of local worker processes (see ``open_local_cluster``).
WORKER_NICE = 10

log = structlog.get_logger()

TRANSPORTS = ("ipc", "tcp", "inproc")


class Asked(msgspec.Struct, frozen=True, kw_only=True):
    """A run suspended on questions (the first is the one to answer first)."""

    run_id: str
    questions: list[Question]


class LocalCluster:
    """A running orchestrator with its local workers; submit runs and await their results."""

    def __init__(self, orchestrator: Orchestrator, catalog: Mapping[str, CapabilityMetadata], defaults: Mapping[str, Any],
                 edge: EdgeService | None = None) -> None:
        self.orchestrator = orchestrator
        #: The edge (sentences to runs, as the daemon's ``Ask``) when domains were given, else None.
        self.edge = edge
        self.catalog = dict(catalog)
        self.defaults = dict(defaults)
        self._asking: dict[str, anyio.Event] = {}
        orchestrator.runs.on_suspended.append(self._suspended)

    def _suspended(self, run: Any) -> None:
        event = self._asking.get(run.run_id)
        if event is not None:
            event.set()

    async def run_until_asked(self, workflow: Any, inputs: Mapping[str, Any]) -> RunResult | Asked:
        """Submit one run and wait for its end, or for its first question (then answer it
        with :meth:`answer`; the run lives as long as this cluster)."""
        return await self.wait_until_asked(self.orchestrator.submit(workflow, inputs))

    async def answer(self, run_id: str, choice: Any, *, token: str | None = None) -> RunResult | Asked:
        """Answer the suspended run's question (``token`` names one when it asks several),
        then wait as :meth:`run_until_asked` does. Finished steps are never run again.

        Raises:
            actors.orchestrator.AnswerRefused: when ``choice`` is none of the candidates, or
                the run asks nothing (its ``code`` says which); the run still waits then.
        """
        self.orchestrator.resume(choice, run_id=None if token else run_id, token=token)
        return await self.wait_until_asked(run_id)

    async def wait_until_asked(self, run_id: str) -> RunResult | Asked:
        """Wait for ``run_id``'s end (its result; the run is then forgotten) or its next
        question (the run stays live, suspended)."""
        # Registered before the first await: the run suspends only on an outcome, later.
        event = self._asking[run_id] = anyio.Event()
        ended: list[RunResult] = []
        try:
            if not self.orchestrator.questions(run_id):
                async with anyio.create_task_group() as tg:

                    async def end() -> None:
                        ended.append(await self.orchestrator.result(run_id))
                        tg.cancel_scope.cancel()

                    async def ask() -> None:
                        await event.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(end)
                    tg.start_soon(ask)
        finally:
            self._asking.pop(run_id, None)
        if ended:
            self.orchestrator.forget(run_id)
            return ended[0]
        return Asked(run_id=run_id, questions=self.orchestrator.questions(run_id))

    def compile(self, manifest: WorkflowManifest, *, manifest_hash: str = "", worktree: str = "") -> CompiledWorkflow:
        """Compile ``manifest`` against this cluster's capabilities.

        Raises:
            protocols.errors.ManifestError: naming each problem's path.
        """
        return compile_workflow(
            manifest, self.catalog, defaults=self.defaults, manifest_hash=manifest_hash, worktree=worktree
        )

    async def run(self, workflow: CompiledWorkflow, inputs: Mapping[str, Any]) -> RunResult:
        """Submit one run and wait for it to end."""
        run_id = self.orchestrator.submit(workflow, inputs)
        try:
            return await self.orchestrator.result(run_id)
        finally:
            self.orchestrator.forget(run_id)


def worker_argv(
    address: str, capability_specs: Sequence[str], *, slots: int, worker_id: str, log_level: str, nice: int = 0,
    connections: str | None = None,
) -> list[str]:
    """The command line of a local worker process (``connections``: its connections file)."""
    argv = [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--slots", str(slots)]
    argv += ["--worker-id", worker_id, "--log-level", log_level, "--no-builtins", "--nice", str(nice)]
    argv += ["--connections", connections] if connections is not None else []
    argv += ["--log-file", path] if (path := log_file()) is not None else []  # one log for the whole cluster
    for spec in capability_specs:
        argv += ["--capabilities", spec]
    return argv


def _restarted(supervisor: Supervisor | None) -> str:
    """What a startup timeout adds when worker processes were restarted on the way: on a busy
    machine a worker that crashes at every start can use the whole window before the
    supervisor gives up on it, and the error must still say it crashed."""
    restarts = {} if supervisor is None else {n: r for n, r in supervisor.statistics().restarts.items() if r}
    if not restarts:
        return ""
    each = ", ".join(f"{name} {count} time{'s' if count > 1 else ''}" for name, count in sorted(restarts.items()))
    return f" (restarts after a crash: {each}; its error is above)"


def _registered(orchestrator: Orchestrator, worker_id: str) -> Callable[[], bool]:
    """Whether a local worker process came up: it registered (and is not yet purged)."""
    return lambda: any(w.worker_id == worker_id for w in orchestrator.registry)


@asynccontextmanager
async def open_local_cluster(
    capability_classes: Sequence[type[Capability]],
    capability_specs: Sequence[str],
    *,
    transport: str = "ipc",
    workers: int = 1,
    slots: int = 8,
    defaults: Mapping[str, Any] | None = None,
    startup_timeout_s: float = 30.0,
    log_level: str = "warning",
    heartbeat_ms: int = 1000,
    max_restarts: int = 3,
    restart_window_s: float = 10.0,
    worker_nice: int = WORKER_NICE,
    connections: str | None = None,
    domains: Any = None,
    intent_adapter: Any = None,
    session_journal: Journal | None = None,
) -> AsyncIterator[LocalCluster]:
    """Start an orchestrator and ``workers`` worker hosts, wait until they registered.

    Args:
        capability_classes: the capabilities, already loaded here (for ``inproc``, and for the
            catalog that manifests are checked against).
        capability_specs: the same capabilities as module names or ``.py`` paths, for the
            worker processes to load.
        transport: ``ipc`` (default), ``tcp`` (loopback) or ``inproc`` (workers in-process).
            With ``domains`` on ``tcp`` (other users of the host can submit) no block's
            artifacts are read, as by a daemon on tcp without ``--artifact-root``.
        max_restarts, restart_window_s: the supervisor's restart intensity for worker
            processes: more than ``max_restarts`` crashes within the window stop the cluster.
        worker_nice: how much lower the worker processes' CPU priority is than this one's
            (``nice``). The orchestrator is the one serial part every step goes through: when
            workers outnumber the cores, an equal share starves it and throughput falls as
            workers are added. 0 for equal priority.
        connections: a connections file the worker processes resolve ``@name`` from (read by
            each worker, checked there; ``inproc`` workers use the caller's
            ``actors.pipelines.using_connections``).
        domains: an ``actors.intent.Catalogue``: the cluster then has the daemon's edge
            (``LocalCluster.edge``: the Intent and Planner actors, supervised, composed as the
            daemon composes them) answering sentences for these domains.
        intent_adapter: the edge's adapter choice (``compose_orchestrator``'s ``intent_adapter``).
        session_journal: where the edge keeps its sessions (a ``runtime.journal.SharedJournal``);
            None: in memory, for as long as the cluster.

    Raises:
        ValueError: for an unknown transport.
        StartupError: when the workers do not all register within ``startup_timeout_s``.
        runtime.errors.RestartIntensityExceeded: when worker processes keep crashing.
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}: use one of {', '.join(TRANSPORTS)}")
    catalog = {cls.metadata.id: cls.metadata for cls in capability_classes}
    tmpdir: Path | None = None
    if transport == "ipc":
        tmpdir = Path(tempfile.mkdtemp(prefix="ontoflow-"))
        bind = f"ipc://{tmpdir}/orchestrator.sock"
    elif transport == "tcp":
        bind = "tcp://127.0.0.1:0"
    else:
        bind = f"inproc://ontoflow-{uuid.uuid4().hex}"
    context = shared_context()
    # Serving clients (ask, chat) on loopback tcp, any user of this host can submit, naming any
    # worktree: read no artifact, as a daemon on tcp without --artifact-root. The ipc socket
    # lies in a folder only this user can enter (mkdtemp), and inproc is this process.
    artifact_roots = () if transport == "tcp" and domains is not None else None
    composed = compose_orchestrator(address=bind, context=context, heartbeat_ms=heartbeat_ms,
                                    serve_clients=domains is not None, catalogue=domains,
                                    intent_adapter=intent_adapter, session_journal=session_journal,
                                    artifact_roots=artifact_roots)
    orchestrator = composed.orchestrator
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(orchestrator.run)
            if composed.edge is not None:
                await tg.start(composed.edge.run)
            supervisor: Supervisor | None = None
            if transport == "inproc":
                for i in range(workers):
                    host = WorkerHost(
                        instantiate(capability_classes), address=orchestrator.address,
                        slots=slots, worker_id=f"local-{i}", context=context,
                    )
                    await tg.start(host.run)
            else:
                children = [
                    process_child(
                        f"worker-{i}",
                        worker_argv(orchestrator.address, capability_specs, slots=slots, worker_id=f"local-{i}",
                                    log_level=log_level, nice=worker_nice, connections=connections),
                        restart=RestartPolicy.PERMANENT,
                        came_up=_registered(orchestrator, f"local-{i}"),
                    )
                    for i in range(workers)
                ]
                supervisor = Supervisor(children, max_restarts=max_restarts, within_s=restart_window_s, name="local-workers")
                tg.start_soon(supervisor.run)
            try:
                with anyio.fail_after(startup_timeout_s):
                    await orchestrator.wait_for_capabilities(catalog)
                    await orchestrator.wait_for_workers(workers)  # all of them: load spreads from the start
            except TimeoutError:
                raise StartupError(f"local workers did not register within {startup_timeout_s:g} s"
                                   f"{_restarted(supervisor)}") from None
            yield LocalCluster(orchestrator, catalog, defaults or {}, composed.edge)
            tg.cancel_scope.cancel()
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
