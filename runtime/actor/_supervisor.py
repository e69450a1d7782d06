"""A one_for_one supervisor (Erlang/OTP): restart each crashed child on its own, give up when
they crash too often."""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from anyio.lowlevel import checkpoint

from ontoflow.runtime.errors import ChildCannotStart, RestartIntensityExceeded

__all__ = ["ChildSpec", "RestartPolicy", "Supervisor", "SupervisorStatistics"]

log = structlog.get_logger()


class RestartPolicy(enum.Enum):
    """When a supervisor restarts a child that ended (OTP's ``restart`` of a child spec)."""

    PERMANENT = "permanent"
    """Always restart, after a crash or a normal return."""
    TRANSIENT = "transient"
    """Restart only after a crash, not after a normal return."""
    TEMPORARY = "temporary"
    """Never restart."""


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """How to run one supervised child.

    Attributes:
        name: unique among the supervisor's children; used in logs and statistics.
        start: called (with no arguments) for every start and restart; the child runs as long
            as the awaitable does. Raising an exception is a crash; returning is a normal exit.
        restart: when to restart the child after it ended.
        shutdown_s: how long ``Supervisor.stop`` waits for the child to finish after
            cancelling it before moving on to the next (it is still awaited before ``run``
            returns: a task cannot be killed, only cancelled).
        came_up: asked when the child crashed: whether it got as far as doing its work in
            that run (a worker process: it registered). More than the supervisor's
            ``max_restarts`` crashes in a row that never came up stop the supervisor however
            slowly they happen: a child that cannot start is not a crash rate to wait out
            (on a loaded machine each start may take longer than the window allows).
            ``None``: only the rate counts.
    """

    name: str
    start: Callable[[], Awaitable[None]]
    restart: RestartPolicy = RestartPolicy.PERMANENT
    shutdown_s: float = 5.0
    came_up: Callable[[], bool] | None = None


@dataclass(frozen=True, slots=True)
class SupervisorStatistics:
    """A snapshot of a supervisor, as returned by ``Supervisor.statistics()``.

    Attributes:
        name: the supervisor's name.
        restarts: restarts per child name since ``run`` began.
        running: names of the children whose ``start`` is running now.
    """

    name: str
    restarts: Mapping[str, int]
    running: tuple[str, ...] = field(default=())


class _Child:
    __slots__ = ("done", "failed_starts", "restarts", "running", "scope", "spec")

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.restarts = 0
        self.failed_starts = 0  # crashes in a row that never came up (see ChildSpec.came_up)
        self.running = False
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()


class Supervisor:
    """Run children, each in its own task, and restart them per their policy (one_for_one).

    When more than ``max_restarts`` restarts happen within ``within_s`` seconds, the
    supervisor logs ``restart_intensity_exceeded``, cancels every child and raises
    ``RestartIntensityExceeded`` out of ``run``, so that its own parent can decide. A child
    that ends in ``ChildCannotStart`` (it said a restart would fail the same way) is not
    restarted whatever its policy: the supervisor stops the same way and raises that error.

    Args:
        children: the child specs, started in this order and stopped in reverse order.
        max_restarts: restarts allowed within the window.
        within_s: the window's length in seconds.
        clock: returns the current time in seconds (inject a fake one in tests).
        name: the supervisor's name in logs.

    Raises:
        ValueError: when two children share a name or a limit is negative.
    """

    def __init__(
        self,
        children: Iterable[ChildSpec],
        *,
        max_restarts: int = 3,
        within_s: float = 5.0,
        clock: Callable[[], float] = anyio.current_time,
        name: str = "supervisor",
    ) -> None:
        self._specs = tuple(children)
        names = [spec.name for spec in self._specs]
        if len(set(names)) != len(names):
            raise ValueError("child names must be unique within a supervisor")
        if max_restarts < 0 or within_s < 0:
            raise ValueError("max_restarts and within_s must not be negative")
        self._max_restarts = max_restarts
        self._within_s = within_s
        self._clock = clock
        self._name = name
        self._children: dict[str, _Child] = {}
        self._restart_times: deque[float] = deque()
        self._failure: RestartIntensityExceeded | ChildCannotStart | None = None
        self._stop_requested: anyio.Event | None = None
        self._finished: anyio.Event | None = None

    @property
    def name(self) -> str:
        """The supervisor's name."""
        return self._name

    async def run(self, *, task_status: TaskStatus[Supervisor] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start every child and supervise them until ``stop`` is called.

        Reports ``self`` through ``task_status`` once every child task is spawned. It keeps
        running when all children have ended for good; only ``stop`` (or cancellation) ends
        it. It may be run again after it returned or raised.

        Raises:
            RestartIntensityExceeded: when the children crashed too often.
            runtime.errors.ChildCannotStart: when a child said it cannot start.
            RuntimeError: when it is already running.
        """
        if self._finished is not None and not self._finished.is_set():
            raise RuntimeError("the supervisor is already running")
        self._children = {spec.name: _Child(spec) for spec in self._specs}
        self._restart_times.clear()
        self._failure = None
        self._stop_requested = anyio.Event()
        self._finished = finished = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                for child in self._children.values():
                    task_name = f"{self._name}/{child.spec.name}"
                    tg.start_soon(self._supervise, child, tg, name=task_name)
                task_status.started(self)
                await self._stop_requested.wait()
                await self._shutdown()
        finally:
            finished.set()
        if self._failure is not None:
            raise self._failure

    async def stop(self) -> None:
        """Stop every child (in reverse order) and wait for ``run`` to return. Idempotent; a
        no-op when the supervisor is not running."""
        if self._stop_requested is None or self._finished is None:
            return
        self._stop_requested.set()
        await self._finished.wait()

    def statistics(self) -> SupervisorStatistics:
        """Return the restarts per child and the children running now."""
        return SupervisorStatistics(
            name=self._name,
            restarts=MappingProxyType({n: c.restarts for n, c in self._children.items()}),
            running=tuple(n for n, c in self._children.items() if c.running),
        )

    async def _shutdown(self) -> None:
        for child in reversed(list(self._children.values())):
            child.scope.cancel()
            with anyio.move_on_after(child.spec.shutdown_s) as scope:
                await child.done.wait()
            if scope.cancelled_caught:
                log.warning(
                    "child_shutdown_slow",
                    supervisor=self._name,
                    child=child.spec.name,
                    shutdown_s=child.spec.shutdown_s,
                )

    async def _supervise(self, child: _Child, tg: TaskGroup) -> None:
        spec = child.spec
        try:
            with child.scope:
                while True:
                    child.running = True
                    try:
                        await spec.start()
                    except ChildCannotStart as exc:
                        # A restart runs the same code and fails the same way: the parent decides.
                        log.info("child_cannot_start", supervisor=self._name, child=spec.name)
                        self._failure = exc
                        tg.cancel_scope.cancel()
                        return
                    except Exception as exc:
                        crashed = True
                        # The type only: an exception's text may carry parameter values.
                        log.warning(
                            "actor_crashed",
                            supervisor=self._name,
                            child=spec.name,
                            error=type(exc).__name__,
                        )
                    else:
                        crashed = False
                        log.info("child_exited", supervisor=self._name, child=spec.name)
                    finally:
                        child.running = False
                    if not self._should_restart(spec.restart, crashed) or child.scope.cancel_called:
                        return
                    if crashed and spec.came_up is not None:
                        child.failed_starts = 0 if spec.came_up() else child.failed_starts + 1
                    if not self._note_restart(spec.name, child.failed_starts):
                        tg.cancel_scope.cancel()
                        return
                    child.restarts += 1
                    log.info(
                        "child_restarted",
                        supervisor=self._name,
                        child=spec.name,
                        restarts=child.restarts,
                    )
                    # A child that fails without ever awaiting must not starve the event loop.
                    await checkpoint()
        finally:
            child.done.set()

    @staticmethod
    def _should_restart(policy: RestartPolicy, crashed: bool) -> bool:
        if policy is RestartPolicy.PERMANENT:
            return True
        if policy is RestartPolicy.TRANSIENT:
            return crashed
        return False

    def _note_restart(self, child_name: str, failed_starts: int = 0) -> bool:
        """Record a restart; False when it exceeds the intensity, or when the child failed to
        come up more than ``max_restarts`` times in a row (the failure is then set)."""
        now = self._clock()
        times = self._restart_times
        times.append(now)
        while times and times[0] < now - self._within_s:
            times.popleft()
        if failed_starts > self._max_restarts:
            log.error("child_cannot_start", supervisor=self._name, child=child_name, failed_starts=failed_starts)
            self._failure = RestartIntensityExceeded(
                f"supervisor {self._name!r}: child {child_name!r} crashed {failed_starts} times in a row before it"
                f" came up (more than {self._max_restarts} restarts)")
            return False
        if len(times) <= self._max_restarts:
            return True
        log.error(
            "restart_intensity_exceeded",
            supervisor=self._name,
            child=child_name,
            max_restarts=self._max_restarts,
            within_s=self._within_s,
        )
        self._failure = RestartIntensityExceeded(
            f"supervisor {self._name!r}: more than {self._max_restarts} restarts"
            f" within {self._within_s} s (last crash: child {child_name!r})"
        )
        return False
