"""``graph --run`` of a run whose engine raised: drawn ending ``failed`` where the daemon ended
it, as replay rebuilds it, not stopped by the engine's exception."""

from __future__ import annotations

from pathlib import Path

from ontoflow.actors.drawing import overlay_from_journal
from tests.actors.replay.test_engine_failure import _record_live, broken_engine  # noqa: F401 - a fixture


def test_a_run_whose_engine_failed_is_drawn_ending_where_the_daemon_ended_it(
    tmp_path: Path, broken_engine: None,  # noqa: F811 - the fixture imported above
) -> None:
    # The overlay applied facts with the engine's own advance: its KeyError went up through
    # `ontoflow graph` as a traceback (with the exception's text), for a run the daemon had
    # ended `failed` with the engine failure named.
    live = _record_live(tmp_path / "j.sqlite")
    overlay = overlay_from_journal(tmp_path / "j.sqlite", "r1")
    assert (overlay.status, overlay.error) == ("failed", live.error)
    assert overlay.failed_step is not None  # the last step that ended: the engine failed on the next outcome
    assert "secret-value" not in (overlay.error or "")
