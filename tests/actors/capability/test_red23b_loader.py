"""A capability module whose import raises an error that cannot be printed (its ``__str__``
exits or raises) is a load error like any other: ``ontoflow run`` exited 0, printing nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.runtime.errors import CapabilityLoadError

RAISES = """
class Unprintable(Exception):
    def __str__(self):
        raise {inner}
raise Unprintable()
"""
MANIFEST = """
start: main
nodes:
  main:
    entry_block: greet
    blocks:
      greet:
        worker: acme.capability.greet
        transitions:
          - {on_signal: success, action: RETURN}
"""


@pytest.mark.parametrize("inner", ["SystemExit(0)", "RuntimeError('no text')"])
def test_an_import_error_that_cannot_be_printed_is_a_load_error(tmp_path: Path, inner: str) -> None:
    module = tmp_path / "unprintable_caps.py"
    module.write_text(textwrap.dedent(RAISES.format(inner=inner)))
    with pytest.raises(CapabilityLoadError) as caught:
        load_capabilities([str(module)])
    assert str(caught.value).endswith("failed: Unprintable: <unprintable message>")


def test_ontoflow_run_does_not_exit_0_when_the_module_cannot_load(tmp_path: Path) -> None:
    module = tmp_path / "unprintable_caps.py"
    module.write_text(textwrap.dedent(RAISES.format(inner="SystemExit(0)")))
    (tmp_path / "greet.yaml").write_text(MANIFEST)
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", "greet.yaml", "--capabilities", str(module)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "Unprintable: <unprintable message>" in done.stderr
