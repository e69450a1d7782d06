"""load_capabilities: from module names, from .py files, and every way it can refuse."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.runtime.errors import CapabilityLoadError
from tests.actors.capability.sample_capabilities import EchoCapability, ShoutCapability

HEADER = """\
from ontoflow.actors.capability import Capability
from ontoflow.protocols.capability import CapabilityMetadata

"""


def cap(name: str, capability_id: str, extra: str = "") -> str:
    """Source of one capability class."""
    return textwrap.dedent(
        f"""
        class {name}(Capability):
            metadata = CapabilityMetadata(id={capability_id!r}{extra})

            async def execute(self, inputs, context):
                return None
        """
    )


@pytest.fixture(autouse=True)
def _forget_loaded_modules() -> Iterator[None]:
    """Modules imported by a test (files, tmp packages) do not outlive it."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("_ontoflow_capfile_", "tmp_caps_pkg_", "tests.actors.capability.sample_listed")):
            del sys.modules[name]


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], str]:
    def _write(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text(body)
        return str(path)

    return _write


def test_loads_the_classes_defined_in_a_module() -> None:
    assert load_capabilities(["tests.actors.capability.sample_capabilities"]) == [EchoCapability, ShoutCapability]


def test_a_capabilities_list_wins() -> None:
    assert load_capabilities(["tests.actors.capability.sample_listed"]) == [EchoCapability]


def test_the_same_class_reached_twice_is_loaded_once() -> None:
    specs = ["tests.actors.capability.sample_capabilities", "tests.actors.capability.sample_listed"]
    assert load_capabilities(specs) == [EchoCapability, ShoutCapability]


def test_loads_a_py_file_ignoring_imported_classes(write: Callable[[str, str], str]) -> None:
    source = HEADER + "from tests.actors.capability.sample_capabilities import EchoCapability\n"
    path = write("quote.py", source + cap("Quote", "test.file.quote"))
    (loaded,) = load_capabilities([path])
    assert loaded.__name__ == "Quote" and loaded.metadata.id == "test.file.quote"


def test_one_file_loaded_twice_gives_two_modules(write: Callable[[str, str], str]) -> None:
    path = write("quote.py", HEADER + cap("Quote", "test.file.quote"))
    (first,) = load_capabilities([path])
    (second,) = load_capabilities([path])
    assert first is not second and first.__module__ != second.__module__


def test_a_module_name_with_a_missing_dependency_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tmp_caps_pkg_x1").mkdir()
    (tmp_path / "tmp_caps_pkg_x1" / "__init__.py").write_text("import no_such_dependency_x1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CapabilityLoadError, match=r"importing capability module 'tmp_caps_pkg_x1' failed: ModuleNotFoundError"):
        load_capabilities(["tmp_caps_pkg_x1"])


ERRORS = {
    "module not found": (None, "no_such_module_x1.caps", r"capability module 'no_such_module_x1.caps' not found"),
    "file missing": (None, "{tmp}/missing.py", r"capability file '.*missing.py' not found"),
    "import raises": ("boom.py", "raise RuntimeError('boom at import')", r"importing capability file '.*boom.py' failed: RuntimeError: boom at import"),
    "syntax error": ("syntax.py", "def broken(:\n", r"importing capability file '.*syntax.py' failed: SyntaxError"),
    "no capabilities": ("empty.py", HEADER, r"capability spec '.*empty.py' defines no capabilities"),
    "duplicate id": ("dup.py", HEADER + cap("A", "test.dup") + cap("B", "test.dup"), r"capability id 'test.dup' is defined twice"),
    "bad metadata": ("bad.py", HEADER + cap("Bad", "test.bad", ", events=['Not Snake']"), r"'.*bad.py'.*'test.bad' has invalid metadata: .*events\[0\]"),
    "bad schema": (
        "schema.py",
        HEADER + cap("S", "test.schema", ", input_schema={'type': 'object', 'properties': {'a': {'type': 'nope'}}}"),
        r"'.*schema.py'.*'test.schema': input_schema does not compile",
    ),
    "bad regex": (
        "regex.py",
        HEADER + cap("R", "test.regex", ", input_schema={'type': 'object', 'properties': {'a': {'pattern': '('}}}"),
        # Refused by the metadata check (RE2 compiles every pattern: protocols.patterns), path named.
        r"'test.regex' has invalid metadata: .*input_schema\.properties\.a\.pattern: RE2 cannot compile it: missing \)",
    ),
    # An integer past 64 bits: the worker's Register failed to encode (an OverflowError traceback;
    # under `ontoflow run`, workers crashing until the supervisor gave up).
    "integer past 64 bits": (
        "big.py",
        HEADER + cap("Big", "test.big", ", timeout_ms=10**30"),
        r"'test.big' has invalid metadata: capabilities\[test.big\].timeout_ms: an integer past 64 bits",
    ),
    # It ended the worker (or `ontoflow run`) at once with the module's exit code (3: "the
    # journal is corrupt"), and said nothing.
    "sys.exit at import": ("exits.py", "import sys\nsys.exit(3)\n", r"importing capability file '.*exits.py' failed: SystemExit: 3"),
    "capabilities not a list": ("notlist.py", "CAPABILITIES = 'x'\n", r"CAPABILITIES must be a list"),
    "capabilities holds a non-class": ("nonclass.py", "CAPABILITIES = [42]\n", r"CAPABILITIES\[0\] is not a Capability subclass"),
    # Made by every worker with cls(): each worker process crashed with a traceback.
    "constructor needs arguments": (
        "needs.py",
        HEADER + "class N(Capability):\n    metadata = CapabilityMetadata(id='test.needs')\n"
                 "    def __init__(self, client):\n        super().__init__()\n"
                 "    async def execute(self, inputs, context):\n        return None\n",
        r"'test.needs' \(N\) cannot be made without arguments, as a worker makes it: missing a required argument: 'client'",
    ),
    "abstract class": (
        "abstract.py",
        HEADER + "class A(Capability):\n    metadata = CapabilityMetadata(id='test.abstract')\n",
        r"'test.abstract' does not implement execute",
    ),
}


@pytest.mark.parametrize(("filename", "body", "pattern"), list(ERRORS.values()), ids=list(ERRORS))
def test_load_errors_name_the_spec(
    write: Callable[[str, str], str], tmp_path: Path, filename: str | None, body: str, pattern: str
) -> None:
    spec = write(filename, body) if filename else body.format(tmp=tmp_path)
    with pytest.raises(CapabilityLoadError, match=pattern) as info:
        load_capabilities([spec])
    assert "Traceback" not in str(info.value)


def test_a_duplicate_across_specs_names_both(write: Callable[[str, str], str]) -> None:
    first = write("one.py", HEADER + cap("One", "test.sample.echo"))
    with pytest.raises(CapabilityLoadError, match=r"'test.sample.echo' is defined twice: by EchoCapability .* and One"):
        load_capabilities(["tests.actors.capability.sample_capabilities", first])


def test_an_empty_spec_is_refused() -> None:
    with pytest.raises(CapabilityLoadError, match="empty"):
        load_capabilities([""])


def test_one_file_named_twice_by_different_paths_is_loaded_once(write: Callable[[str, str], str], tmp_path: Path) -> None:
    path = write("twice.py", HEADER + cap("Twice", "test.twice"))
    (loaded,) = load_capabilities([path, str(tmp_path / "." / "twice.py"), path])
    assert loaded.metadata.id == "test.twice"
