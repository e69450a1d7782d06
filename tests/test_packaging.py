"""The package installs as ``ontoflow`` and nothing else: checked on a real wheel in a fresh
virtual environment, from a folder outside the repository.

The fresh environment gets the wheel with ``--no-deps``; its dependencies come from the test
environment's own site-packages through a ``.pth`` line (a path line adds the folder to
``sys.path`` without running the ``.pth`` files inside it, so the test environment's editable
install of ontoflow stays invisible). Nothing is downloaded but the build backend, which pip
takes from its cache after the first time.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"ontoflow": "ontoflow", "ontoflow.protocols": "protocols", "ontoflow.runtime": "runtime",
           "ontoflow.actors": "actors"}

def _declared_packages() -> list[str]:
    with (REPO / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)["tool"]["setuptools"]["packages"]


def test_every_package_folder_is_declared_and_every_declared_package_exists() -> None:
    found = set()
    for package, folder in FOLDERS.items():
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((package, *relative)))
    assert sorted(found) == sorted(_declared_packages())


def _readme_capability_example() -> str:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    example = next(b for b in blocks if "class Greet(Capability)" in b)
    assert "from ontoflow import" in example, "the README's example must use the public face"
    return example


def _readme_greet_manifest() -> str:
    """The ``greet.yaml`` the README's ``ontoflow run greet.yaml ...`` runs: given in the README
    itself, so that a reader can run the command as written."""
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    found = [b for b in blocks if b.startswith("# greet.yaml")]
    assert found, "the README must give the greet.yaml its command runs (a yaml block starting '# greet.yaml')"
    return found[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the built wheel installed; returns its bin folder."""
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(REPO)],
                           capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{built.stderr[-2000:]}")
    wheel = next(dist.glob("ontoflow-*.whl"))
    venv = root / "venv"
    # No pip of its own (ensurepip cost ~3 s of CPU): the test environment's pip installs into it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # The test environment's dependencies, without its editable ontoflow (see the module docstring).
    Path(site, "_ontoflow_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "--quiet",
                    str(wheel)], check=True, timeout=300)
    return venv / "bin"


def test_the_wheel_holds_only_the_ontoflow_package(installed: Path) -> None:
    wheel = next((installed.parent.parent / "dist").glob("ontoflow-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        tops = {name.split("/", 1)[0] for name in zf.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"ontoflow"}


def test_no_top_level_runtime_actors_or_protocols_module_is_installed(installed: Path, tmp_path: Path) -> None:
    probe = ("import importlib.util, json; "
             "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in "
             "['runtime', 'actors', 'protocols', 'ontoflow', 'ontoflow.runtime.cli']}))")
    out = subprocess.run([str(installed / "python"), "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == ('{"runtime": false, "actors": false, "protocols": false, "ontoflow": true, '
                           '"ontoflow.runtime.cli": true}')


def test_the_readme_capability_example_runs_from_a_folder_outside_the_repository(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "my_caps.py").write_text(_readme_capability_example())
    (tmp_path / "greet.yaml").write_text(_readme_greet_manifest())
    ran = subprocess.run(
        [str(installed / "ontoflow"), "run", "greet.yaml", "--capabilities", "./my_caps.py",
         "--input", "acme.person.name=Ada", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert '"acme.greeting":"Hello, Ada"' in ran.stdout


def test_run_manifest_runs_a_manifest_in_process_for_a_capability_authors_test(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "my_caps.py").write_text(_readme_capability_example())
    (tmp_path / "greet.yaml").write_text(_readme_greet_manifest())
    script = ("from ontoflow import run_manifest\n"
              "from my_caps import Greet\n"
              "result = run_manifest('greet.yaml', [Greet], inputs={'acme.person.name': 'Ada',"
              " 'obdc.base.lang.code': 'pt_BR'})\n"
              "print(result.status, result.context['acme.greeting'])\n")
    ran = subprocess.run([str(installed / "python"), "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip().splitlines()[-1] == "completed Olá, Ada"  # structlog's default config prints too


def test_the_readme_gives_the_manifest_its_greet_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fast, in this environment: the README's my_caps.py and greet.yaml, as written, run."""
    import importlib.util

    from ontoflow import run_manifest

    (tmp_path / "my_caps.py").write_text(_readme_capability_example())
    (tmp_path / "greet.yaml").write_text(_readme_greet_manifest())
    spec = importlib.util.spec_from_file_location("readme_my_caps", tmp_path / "my_caps.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.chdir(tmp_path)
    result = run_manifest("greet.yaml", [module.Greet], inputs={"acme.person.name": "Ada"})
    assert (result.status, result.context["acme.greeting"]) == ("completed", "Hello, Ada")
