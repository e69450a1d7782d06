"""``_signals.StopSignals`` by itself: what a stop signal does outside an event loop, once the
answer is in hand, and that a signal ignored at start stays ignored (signals sent to this very
process, in its main thread)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from ontoflow.runtime.cli._signals import EXIT_TERMINATED, StopSignals, Terminated

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signal handlers are set in the main thread only")


@pytest.mark.parametrize(("signum", "raised", "code"),
                         [(signal.SIGINT, KeyboardInterrupt, 130), (signal.SIGTERM, Terminated, EXIT_TERMINATED)])
def test_outside_an_event_loop_a_stop_signal_stops_at_once_with_its_exit_code(
        signum: signal.Signals, raised: type[BaseException], code: int) -> None:
    stop = StopSignals()
    with stop.installed(), pytest.raises(raised):
        os.kill(os.getpid(), signum)
        signal.sigtimedwait([], 0)  # a point where the pending handler has run for sure
    assert stop.signum == signum and stop.exit_code() == code


def test_once_settled_a_stop_signal_changes_nothing_and_the_handlers_are_put_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    stop = StopSignals()
    with stop.installed():
        stop.settle()
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)
    assert not stop.stopped and signal.getsignal(signal.SIGTERM) is before


def test_a_signal_ignored_at_start_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopSignals().installed():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
