"""Seed 000's capability metadata, written exactly as the seed writes it.

The seed declares ``events`` as a map of short name -> full event name and puts the
prerequisites inside it under ``"required"``; ontoflow's own shape is a list of short names and
a ``requires`` list. The seed's shape is accepted as written and means the same thing.
"""

from __future__ import annotations

import msgspec
import pytest

from ontoflow import CapabilityMetadata

SEED_ID = "infobim.capability.base.list_pipes"


def seed_metadata() -> CapabilityMetadata:
    """The metadata of seed 000's ``ListPipesCapability``, verbatim."""
    return CapabilityMetadata(
        id=SEED_ID,
        events={
            "success": "infobim.capability.base.list_pipes.success",
            "failure": "infobim.capability.base.list_pipes.failure",
            "required": ["infobim.capability.base.list_materials"],
        },
        input_schema={
            "type": "object",
            "properties": {"obdc.base.lang.code": {"type": "string", "enum": ["en", "pt_BR"], "default": "en"}},
        },
    )


def test_seed_events_map_becomes_events_and_requires() -> None:
    meta = seed_metadata()
    assert meta.events == ["success", "failure"]
    assert meta.requires == ["infobim.capability.base.list_materials"]


def test_seed_shape_travels_on_the_wire_as_ontoflows_shape() -> None:
    meta = seed_metadata()
    again = msgspec.msgpack.decode(msgspec.msgpack.encode(meta), type=CapabilityMetadata)
    assert again == meta


def test_a_full_event_name_of_another_capability_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"events\['success'\] must be infobim\.capability\.base\.list_pipes\.success"):
        CapabilityMetadata(id=SEED_ID, events={"success": "infobim.capability.base.other.success"})


@pytest.mark.parametrize("field", ["events", "requires", "outputs", "roles"])
def test_a_list_field_of_the_wrong_type_fails_where_it_is_written(field: str) -> None:
    # Before, it failed only when a worker's Ready did not decode on the orchestrator: a run
    # waited for a worker that never registered.
    with pytest.raises(TypeError, match=field):
        CapabilityMetadata(id="t.cap", **{field: "success"})


def test_tuples_are_taken_as_lists() -> None:
    meta = CapabilityMetadata(id="t.cap", events=("success", "empty"), outputs=("t.out",))
    assert meta.events == ["success", "empty"] and meta.outputs == ["t.out"]
