"""A ``-c`` module that exits or raises a BaseException while ``check`` reads it is an error naming
it (exit 2), never a silent exit 0 or a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEADER = "import sys\nfrom ontoflow.actors.capability import Capability\n"

MODULES = {
    # Read after the import: SystemExit escaped the loader and `check` exited 0, printing nothing.
    "metadata property exits": (HEADER + "class Meta(type(Capability)):\n    @property\n"
                                "    def metadata(cls):\n        sys.exit(0)\n"
                                "class C(Capability, metaclass=Meta):\n    pass\n", "reading its capabilities failed: SystemExit"),
    "CAPABILITIES exits when read": ("import sys\nclass L(list):\n    def __iter__(self):\n        sys.exit(0)\n"
                                     "    def __len__(self):\n        sys.exit(0)\n    def __getitem__(self, i):\n"
                                     "        sys.exit(0)\nCAPABILITIES = L()\n", "reading its capabilities failed: SystemExit"),
    # A traceback and exit 1.
    "BaseException at import": ("raise BaseException('boom')\n", "failed: BaseException: boom"),
    "GeneratorExit at import": ("raise GeneratorExit\n", "failed: GeneratorExit"),
    "sys.exit(0) at import": ("import sys\nsys.exit(0)\n", "failed: SystemExit: 0"),
}


@pytest.mark.parametrize("name", list(MODULES))
def test_a_module_that_exits_or_raises_while_read_is_an_error_naming_it(tmp_path: Path, name: str) -> None:
    code, said = MODULES[name]
    (tmp_path / "exits.py").write_text(code)
    (tmp_path / "d.json").write_text(json.dumps({"name": "d", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "x.y"}}}}}))
    done = subprocess.run([sys.executable, "-m", "ontoflow", "check", "d.json", "-c", "exits.py"], capture_output=True,
                          text=True, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "exits.py" in done.stderr and said in done.stderr and "Traceback" not in done.stderr
