"""one_for_one supervision: restart policies, intensity, stop."""

from __future__ import annotations

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.actor import ChildSpec, RestartPolicy, Supervisor
from ontoflow.runtime.errors import RestartIntensityExceeded

pytestmark = pytest.mark.anyio


class Script:
    """A child whose n-th start (0-based) does what ``plan[n]`` says: 'crash', 'return' or
    'block'; starts beyond the plan block. ``reached[n]`` is set when start n begins."""

    def __init__(self, plan: list[str]) -> None:
        self.plan = plan
        self.starts = 0
        self.reached = [anyio.Event() for _ in range(len(plan) + 1)]
        self.cancelled = False

    async def __call__(self) -> None:
        n = self.starts
        self.starts += 1
        if n < len(self.reached):
            self.reached[n].set()
        action = self.plan[n] if n < len(self.plan) else "block"
        if action == "crash":
            raise ValueError("secret-value-42")
        if action == "return":
            return
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


async def test_permanent_child_restarted_after_crash_and_return() -> None:
    script = Script(["crash", "return", "block"])
    sup = Supervisor([ChildSpec("w", script)], max_restarts=10)
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            with anyio.fail_after(5):
                await script.reached[2].wait()
            assert sup.statistics().restarts == {"w": 2}
            assert sup.statistics().running == ("w",)
            await sup.stop()
    assert script.cancelled
    crashed = [e for e in logs if e["event"] == "actor_crashed"]
    assert crashed == [
        {
            "event": "actor_crashed",
            "log_level": "warning",
            "supervisor": "supervisor",
            "child": "w",
            "error": "ValueError",
        }
    ]
    assert "secret-value-42" not in repr(logs)


async def test_transient_child_restarted_after_crash_not_after_return() -> None:
    script = Script(["crash", "return"])
    sup = Supervisor([ChildSpec("t", script, RestartPolicy.TRANSIENT)])
    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            with anyio.fail_after(5):
                await script.reached[1].wait()
                while sup.statistics().running:
                    await anyio.lowlevel.checkpoint()
            await anyio.wait_all_tasks_blocked()
            await sup.stop()
    assert script.starts == 2
    assert sup.statistics().restarts == {"t": 1}
    assert [e["event"] for e in logs if e.get("child") == "t"] == [
        "actor_crashed",
        "child_restarted",
        "child_exited",
    ]


async def test_temporary_child_never_restarted() -> None:
    script = Script(["crash"])
    sup = Supervisor([ChildSpec("tmp", script, RestartPolicy.TEMPORARY)])
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        with anyio.fail_after(5):
            await script.reached[0].wait()
        await anyio.wait_all_tasks_blocked()
        assert sup.statistics().running == ()
        await sup.stop()
    assert script.starts == 1
    assert sup.statistics().restarts == {"tmp": 0}


async def test_intensity_exceeded_cancels_siblings_raises_and_logs() -> None:
    crasher = Script(["crash"] * 10)
    sibling = Script([])
    now = 100.0  # a virtual clock that never advances: every restart is in the window
    sup = Supervisor(
        [ChildSpec("bad", crasher), ChildSpec("good", sibling)],
        max_restarts=3,
        within_s=5.0,
        clock=lambda: now,
        name="sup-a",
    )
    with capture_logs() as logs:
        with pytest.raises(RestartIntensityExceeded, match="sup-a"):
            with anyio.fail_after(5):
                await sup.run()
    assert crasher.starts == 4  # the first start and three restarts
    assert sibling.cancelled
    exceeded = [e for e in logs if e["event"] == "restart_intensity_exceeded"]
    assert exceeded == [
        {
            "event": "restart_intensity_exceeded",
            "log_level": "error",
            "supervisor": "sup-a",
            "child": "bad",
            "max_restarts": 3,
            "within_s": 5.0,
        }
    ]


async def test_restarts_spread_over_time_stay_within_intensity() -> None:
    ticks = iter(range(0, 10_000, 10))  # each restart 10 s after the previous one
    crasher = Script(["crash"] * 8)
    sup = Supervisor(
        [ChildSpec("slow-crasher", crasher)],
        max_restarts=1,
        within_s=5.0,
        clock=lambda: float(next(ticks)),
    )
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        with anyio.fail_after(5):
            await crasher.reached[8].wait()
        await sup.stop()
    assert sup.statistics().restarts == {"slow-crasher": 8}


async def test_a_child_that_never_comes_up_stops_the_supervisor_however_slowly_it_crashes() -> None:
    ticks = iter(range(0, 10_000, 10))  # each crash 10 s after the previous one: the rate is fine
    crasher = Script(["crash"] * 8)
    sup = Supervisor([ChildSpec("cannot-start", crasher, came_up=lambda: False)], max_restarts=2, within_s=5.0,
                     clock=lambda: float(next(ticks)))
    with capture_logs() as logs:
        with pytest.raises(RestartIntensityExceeded, match="'cannot-start' crashed 3 times in a row before it came up"):
            with anyio.fail_after(5):
                await sup.run()
    assert crasher.starts == 3
    assert [e["failed_starts"] for e in logs if e["event"] == "child_cannot_start"] == [3]


async def test_a_child_that_came_up_between_crashes_is_restarted_at_the_rate_allowed() -> None:
    ticks = iter(range(0, 10_000, 10))
    crasher = Script(["crash"] * 8)
    came_up = iter([False, False, True] * 4)  # up once in every three runs
    sup = Supervisor([ChildSpec("flaky", crasher, came_up=lambda: next(came_up))], max_restarts=2, within_s=5.0,
                     clock=lambda: float(next(ticks)))
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        with anyio.fail_after(5):
            await crasher.reached[8].wait()
        await sup.stop()
    assert sup.statistics().restarts == {"flaky": 8}


async def test_stop_stops_children_in_reverse_order_and_run_returns() -> None:
    order: list[str] = []
    started = {name: anyio.Event() for name in "abc"}

    def child(name: str):
        async def start() -> None:
            started[name].set()
            try:
                await anyio.sleep_forever()
            finally:
                order.append(name)

        return ChildSpec(name, start)

    sup = Supervisor([child("a"), child("b"), child("c")])
    async with anyio.create_task_group() as tg:
        assert await tg.start(sup.run) is sup
        with anyio.fail_after(5):
            for event in started.values():
                await event.wait()
        await sup.stop()
        await sup.stop()  # idempotent
    assert order == ["c", "b", "a"]
    assert sup.statistics().restarts == {"a": 0, "b": 0, "c": 0}


def test_duplicate_child_names_rejected() -> None:
    async def noop() -> None:
        return None

    with pytest.raises(ValueError, match="unique"):
        Supervisor([ChildSpec("x", noop), ChildSpec("x", noop)])
