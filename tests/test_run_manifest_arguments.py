"""``run_manifest`` given the wrong thing: a clear error naming the argument (or the capability),
before any cluster starts. Before, a list for the document was a bare ``TypeError: expected str,
bytes or os.PathLike object, not list``, a lone class ``'ABCMeta' object is not iterable``, and
two classes with one id ran with whichever came last."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow import Capability, CapabilityMetadata, run_manifest
from ontoflow.actors.errors import CapabilityDefinitionError


class Greet(Capability):
    metadata = CapabilityMetadata(id="demo.greet", outputs=["demo.greeting"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return {"demo.greeting": "A"}


class Impostor(Capability):
    metadata = CapabilityMetadata(id="demo.greet", outputs=["demo.greeting"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return {"demo.greeting": "B"}


class Abstract(Capability):
    metadata = CapabilityMetadata(id="demo.abstract")


class NeedsClient(Capability):
    metadata = CapabilityMetadata(id="demo.needs")

    def __init__(self, client: Any) -> None:
        super().__init__()

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None


class BadMeta(Capability):
    metadata = CapabilityMetadata(id="demo bad", events=["Not Snake"])

    async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
        return None


DOC = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.greet"}}}}}

WRONG_TYPES = {
    "document a list": (([DOC], [Greet]), {}, r"document must be a path .* or a mapping .*, not list"),
    "document bytes": ((b"{}", [Greet]), {}, r"document must be .*, not bytes"),
    "document None": ((None, [Greet]), {}, r"document must be .*, not NoneType"),
    "a lone class": ((DOC, Greet), {}, r"capabilities must be a list of Capability classes, not ABCMeta: pass \[Greet\]"),
    "a string": ((DOC, "demo.greet"), {}, r"capabilities must be a list of Capability classes, not str"),
    "an instance": ((DOC, [Greet()]), {}, r"capabilities\[0\] is a Greet instance: pass the class"),
    "another class": ((DOC, [Greet, dict]), {}, r"capabilities\[1\] \(dict\) is not a Capability subclass"),
    "inputs a list": ((DOC, [Greet]), {"inputs": [("k", 1)]}, r"inputs must be a mapping"),
    "start an int": ((DOC, [Greet]), {"start": 5}, r"start must be a node id \(str\), not int"),
    "answers a string": ((DOC, [Greet]), {"answers": "yes"}, r"answers must be a list of answers, not str"),
    "slots a string": ((DOC, [Greet]), {"slots": "8"}, r"slots must be an int, not str"),
    "slots a bool": ((DOC, [Greet]), {"slots": True}, r"slots must be an int, not bool"),
}


@pytest.mark.parametrize(("args", "kwargs", "pattern"), list(WRONG_TYPES.values()), ids=list(WRONG_TYPES))
def test_a_wrong_type_is_a_type_error_naming_the_argument(args: tuple, kwargs: dict, pattern: str) -> None:
    with pytest.raises(TypeError, match=r"^run_manifest: " + pattern):
        run_manifest(*args, **kwargs)


def test_no_slots_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^run_manifest: slots must be >= 1, got 0$"):
        run_manifest(DOC, [Greet], slots=0)


@pytest.mark.parametrize(
    ("capabilities", "pattern"),
    [([Greet, Impostor], r"capability id 'demo.greet' is declared twice: by Greet and Impostor"),
     ([Greet, Abstract], r"capability 'demo.abstract' does not implement execute"),
     ([Greet, BadMeta], r"capability 'demo bad' has invalid metadata: .*\.id: .*events\[0\]"),
     ([Greet, NeedsClient], r"capability 'demo.needs' \(NeedsClient\) cannot be made without arguments")],
    ids=["one id twice", "abstract", "invalid metadata", "a constructor that needs arguments"],
)
def test_a_capability_that_cannot_be_hosted_is_named(capabilities: list, pattern: str) -> None:
    with pytest.raises(CapabilityDefinitionError, match=pattern):
        run_manifest(DOC, capabilities)


def test_the_same_class_twice_and_any_iterable_still_run() -> None:
    assert run_manifest(DOC, [Greet, Greet]).context["demo.greeting"] == "A"
    assert run_manifest(DOC, (c for c in [Greet]), answers=()).status == "completed"


def test_ontoflow_run_refuses_such_a_class_once_without_a_traceback(tmp_path) -> None:
    import subprocess
    import sys

    (tmp_path / "caps.py").write_text(
        "from ontoflow import Capability, CapabilityMetadata\n"
        "class NeedsClient(Capability):\n"
        "    metadata = CapabilityMetadata(id='demo.needs')\n"
        "    def __init__(self, client):\n"
        "        super().__init__()\n"
        "    async def execute(self, inputs, context):\n"
        "        return None\n")
    (tmp_path / "m.json").write_text('{"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "demo.needs"}}}}}')
    ran = subprocess.run([sys.executable, "-m", "ontoflow", "run", "m.json", "-c", "caps.py", "--no-builtins"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert ran.returncode != 0
    assert "capability 'demo.needs' (NeedsClient) cannot be made without arguments" in ran.stderr
    assert "Traceback" not in ran.stderr and "process_crashed" not in ran.stderr


def test_inside_a_running_loop_it_says_to_await_arun_manifest() -> None:
    import asyncio

    async def inside() -> None:
        with pytest.raises(RuntimeError, match=r"^run_manifest cannot run inside a running event loop .*: await arun_manifest"):
            run_manifest(DOC, [Greet])

    asyncio.run(inside())
