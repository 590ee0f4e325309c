"""The runtime wheel as a deployment gets it (the Dockerfile's non-editable install): built from the
sources, it holds no development tool (simulator, benchmark, local infrastructure, demo) and imports none;
installed into a clean venv, every ``sbcrawl`` command answers ``--help``, and the example DAG files,
copied into a folder of their own as the image does, all import from it.

The clean venv reuses the project venv's third-party packages through a plain path entry (a ``.pth``
line, which does not process the editable install's own ``.pth``), so the test installs nothing from
the network and the only ``airflow_sbcrawl`` it can import is the wheel's.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DAG_IDS = {"sbcrawl_adhoc", "sbcrawl_many_sites", "sbcrawl_ingest", "sbcrawl_insee", "sbcrawl_destatis",
           "sbcrawl_ons", "sbcrawl_unstats"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    # A copy, so the build's egg-info and build/ folders never land in the work tree. The development
    # package is copied too: pyproject.toml, not the copy, must be what keeps it out of the wheel.
    for package in ("airflow_sbcrawl", "sbcrawl_dev"):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                           "--wheel-dir", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (built,) = out.glob("airflow_sbcrawl-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean venv with the wheel installed non-editable (third-party packages from the project venv)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return venv


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout's settings: nothing but the venv decides what imports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBCRAWL_", "AIRFLOW", "PYTHON"))}
    env.update(extra)
    return env


def test_runtime_wheel_ships_the_provider_and_not_the_dev_tools(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"airflow_sbcrawl", f"{wheel.name.split('-py')[0]}.dist-info"}
    packages = {n.split("/")[1] for n in names if n.startswith("airflow_sbcrawl/") and n.count("/") >= 2}
    assert {"crawler", "tables", "lake", "operators", "hooks"} <= packages
    # no simulator, benchmark, local infrastructure or demo module: none of the dev package's, nor under the
    # names they had in the runtime package
    old = re.compile(r"/(sim|bench|infra)/|/demo\.py$|bench\w*\.py$|/devset\.py$")
    assert [n for n in names if old.search(n) or Path(n).name in _dev_module_names()] == []
    assert "airflow_sbcrawl/py.typed" in names
    assert "airflow_sbcrawl/tables/line_model.json" in names
    assert "airflow_sbcrawl/tables/region_model.json" in names  # the learned regions, the default detector
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert 'Requires-Dist: apache-airflow-providers-common-compat>=1.8; extra == "airflow"' in metadata
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "provider_info = airflow_sbcrawl:get_provider_info" in entry_points
    assert "sbcrawl = airflow_sbcrawl.cli:main" in entry_points


def _dev_module_names() -> set[str]:
    return {p.name for p in (REPO / "sbcrawl_dev").rglob("*.py")} - {"__init__.py", "__main__.py"}


def test_one_name_per_module_across_the_runtime_and_dev_packages():
    runtime = {p.name for p in (REPO / "airflow_sbcrawl").rglob("*.py")}
    assert runtime & _dev_module_names() == set()


def test_no_runtime_module_imports_the_dev_package(wheel):
    importers = []
    with zipfile.ZipFile(wheel) as zf:
        for name in (n for n in zf.namelist() if n.endswith(".py")):
            for node in ast.walk(ast.parse(zf.read(name), name)):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    modules = [node.module or ""]
                else:
                    continue
                importers += [f"{name}:{node.lineno}" for m in modules if m.split(".")[0] == "sbcrawl_dev"]
    assert importers == []


def test_every_sbcrawl_command_answers_help_from_the_installed_wheel(venv, tmp_path):
    # Every command path of the parser, each asked for --help in the venv's Python: subcommands at any depth,
    # and the names a positional argument chooses from (a command that hands its options on to the module it
    # names, as 'sbcrawl bench crawl' once did).
    probe = textwrap.dedent("""
        import argparse, contextlib, importlib.util, io, json
        import airflow_sbcrawl
        from airflow_sbcrawl.cli import build_parser, main

        def paths(parser, prefix=()):
            yield prefix
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    for name, sub in action.choices.items():
                        yield from paths(sub, (*prefix, name))
                elif not action.option_strings and action.choices:
                    yield from ((*prefix, name) for name in action.choices)

        results = {}
        for path in paths(build_parser()):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    main([*path, "--help"])
                    code = "returned"
                except SystemExit as exc:
                    code = exc.code
                except Exception as exc:  # what the test is for: report it, not crash the probe
                    code = repr(exc)
            results[" ".join(path)] = [code, out.getvalue().splitlines()[:1], err.getvalue()[-500:]]
        print(json.dumps({"module": airflow_sbcrawl.__file__, "results": results,
                          "dev_importable": importlib.util.find_spec("sbcrawl_dev") is not None}))
    """)
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=_clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(result["module"]).is_relative_to(venv), result["module"]  # the wheel, not the checkout
    assert result["dev_importable"] is False  # so nothing below could have leant on the dev package
    results = result["results"]
    assert {"", "crawl", "tables", "tables detect", "lake", "lake load"} <= set(results)
    for path, (code, usage, err) in results.items():
        assert code == 0, (path, code, err)
        assert usage and usage[0].startswith(f"usage: sbcrawl {path}".rstrip()), (path, usage)
    # and the console script the wheel installs
    proc = subprocess.run([str(venv / "bin" / "sbcrawl"), "--help"], cwd=tmp_path, env=_clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: sbcrawl "), proc.stderr[-2000:]


def test_every_dag_imports_from_the_installed_wheel(venv, tmp_path):
    python = venv / "bin" / "python"
    dags = tmp_path / "dags"  # as the Dockerfile copies them: DAG files and their providers.yaml, nothing else
    dags.mkdir()
    for path in (REPO / "dags").iterdir():
        if path.suffix in (".py", ".yaml"):
            shutil.copy(path, dags / path.name)
    probe = textwrap.dedent("""
        import json, sys
        import airflow_sbcrawl
        from airflow.dag_processing.dagbag import DagBag
        bag = DagBag(dag_folder=sys.argv[1])
        print(json.dumps({"module": airflow_sbcrawl.__file__, "errors": bag.import_errors,
                          "dags": sorted(bag.dag_ids)}))
    """)
    home = tmp_path / "airflow"
    env = _clean_env(AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False",
                     AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db")
    proc = subprocess.run([str(python), "-c", probe, str(dags)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(result["module"]).is_relative_to(venv), result["module"]  # the wheel, not the checkout
    assert result["errors"] == {}
    assert set(result["dags"]) == DAG_IDS


def test_setup_script_shows_that_it_is_moving(tmp_path):
    """scripts/setup.sh says what it does before each long step and lets pip show its progress (it was
    silent for minutes): run on a copy of the tree whose .venv python only records how it is called."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "scripts" / "setup.sh").write_text((REPO / "scripts" / "setup.sh").read_text())
    fake = repo / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\necho "python $*" >> "$(dirname "$0")/calls"\necho "Collecting something"\n')
    fake.chmod(0o755)
    proc = subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = (fake.parent / "calls").read_text().splitlines()
    install = next(c for c in calls if "-e .[all,dev]" in c)
    assert "--quiet" not in install and "-q" not in install.split()
    out = proc.stdout.splitlines()
    assert out.index("Collecting something", out.index(next(o for o in out if o.startswith("setup: installing")))) > 0
    assert out[-1].startswith("setup: done")
