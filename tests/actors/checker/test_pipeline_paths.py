"""A pipeline's findings name the pipeline's own paths, not those of the plan it compiles to."""

from __future__ import annotations

from tests.actors.checker.helpers import check, kinds, meta

WRITER = meta("t.writer", props={"data.path": {"type": "string"}, "data.header": {"type": "boolean"},
                                 "data.dataset": {"type": "object"}}, required=["data.dataset"])


def _pipeline(config: dict) -> dict:
    return {"oml_version": "0.1.0", "name": "p",
            "steps": [{"id": "write-it", "component": "t.writer", "mode": "write", "config": config}]}


def test_a_config_value_of_the_wrong_type_is_reported_at_its_config_key() -> None:
    # It was "steps[0].params.data.header": a path that is nowhere in the user's pipeline.
    report = check(_pipeline({"path": 5, "header": "yes", "dataset": {}}), WRITER)
    paths = sorted(f.path for f in kinds(report)["type-mismatch"])
    assert paths == ["steps[0].config.header", "steps[0].config.path"]
    assert not report.ok


def test_a_required_input_no_config_sets_is_reported_at_the_steps_config() -> None:
    [finding] = kinds(check(_pipeline({"path": "./o.csv"}), WRITER))["missing-input"]
    assert finding.path == "steps[0].config"
