"""Ctrl-C in the first moments of ``ontoflow``, while its modules are imported: the command
ends with 130 and prints nothing (it printed a ``KeyboardInterrupt`` traceback, the imports
being at the console script's top, before ``main`` could catch anything).

The signal is sent by the process to itself from an import hook, as the named module is about
to be imported: the same moment every time, with no sleep and no race.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_INTERRUPTED_AT = """
import os, runpy, signal, sys
target, how, *argv = sys.argv[1:]

class InterruptAt:
    def find_spec(self, name, path=None, target_module=None):
        if name == target:
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptAt())
sys.argv = ["ontoflow", *argv]
if how == "script":  # the console script pip installed, as a shell runs it
    runpy.run_path(os.path.join(os.path.dirname(sys.executable), "ontoflow"), run_name="__main__")
else:  # python -m ontoflow
    runpy.run_module("ontoflow", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("how", ["script", "module"])
@pytest.mark.parametrize("module", ["ontoflow.actors.orchestrator", "ontoflow.protocols", "ontoflow.runtime.cli._shared"])
def test_ctrl_c_while_the_command_imports_ends_quietly_with_130(tmp_path: Path, how: str, module: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_AT, module, how, "runs", "--connect", "ipc:///nonexistent/x"],
                          cwd=tmp_path, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr == b"" and done.stdout == b""


def test_the_faces_import_nothing_heavy_until_used() -> None:
    # What keeps the window small: ``ontoflow`` and ``ontoflow.runtime.cli`` import their
    # names on first use, and their names are all still there.
    probe = ("import sys, ontoflow, ontoflow.runtime.cli as cli\n"
             "print(sorted(m for m in sys.modules if m.startswith('ontoflow.actors') or m == 'ontoflow.runtime.cli._main'))\n"
             "print(all(hasattr(ontoflow, n) for n in ontoflow.__all__), all(hasattr(cli, n) for n in cli.__all__))\n"
             "print(set(ontoflow.__all__) <= set(dir(ontoflow)), set(cli.__all__) <= set(dir(cli)))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == ["[]", "True True", "True True"]


def test_every_package_imports_first_on_its_own() -> None:
    # The face imported every package in one order at ``import ontoflow``, and that order hid
    # a cycle: ``import ontoflow.actors.checker`` first (a test, a tool) failed once the face
    # was lazy (the checker imports the orchestrator, which imported the checker's package).
    import importlib.util
    import pkgutil

    packages = ["ontoflow.protocols", "ontoflow.runtime", "ontoflow.actors"]
    for top in tuple(packages):
        spec = importlib.util.find_spec(top)
        assert spec is not None and spec.submodule_search_locations is not None
        packages += [m.name for m in pkgutil.walk_packages(spec.submodule_search_locations, top + ".") if m.ispkg]
    probe = ("import subprocess, sys\n"
             "for name in sys.argv[1:]:\n"
             "    done = subprocess.run([sys.executable, '-c', 'import ' + name], capture_output=True, text=True)\n"
             "    if done.returncode:\n"
             "        print(name, done.stderr.strip().splitlines()[-1])\n")
    failed = subprocess.run([sys.executable, "-c", probe, *packages], capture_output=True, text=True, timeout=110).stdout
    assert failed == "", failed
