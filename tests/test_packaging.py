"""The runtime wheel as a deployment gets it (the Dockerfile's non-editable install): built from the
sources, installed into a clean venv, and the example DAG files, copied into a folder of their own as
the image does, all import from it.

The clean venv reuses the project venv's third-party packages through a plain path entry (a ``.pth``
line, which does not process the editable install's own ``.pth``), so the test installs nothing from
the network and the only ``airflow_sbcrawl`` it can import is the wheel's.
"""

from __future__ import annotations

import json
import os
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
    # A copy, so the build's egg-info and build/ folders never land in the work tree.
    shutil.copytree(REPO / "airflow_sbcrawl", src / "airflow_sbcrawl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                           "--wheel-dir", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (built,) = out.glob("airflow_sbcrawl-*.whl")
    return built


def test_runtime_wheel_ships_the_provider_and_not_the_dev_tools(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.split("/")[1] for n in names if n.startswith("airflow_sbcrawl/") and n.count("/") >= 2}
    assert {"crawler", "tables", "lake", "operators", "hooks"} <= packages
    assert not {"sim", "bench", "infra"} & packages
    assert "airflow_sbcrawl/py.typed" in names
    assert "airflow_sbcrawl/tables/line_model.json" in names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert 'Requires-Dist: apache-airflow-providers-common-compat>=1.8; extra == "airflow"' in metadata
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "provider_info = airflow_sbcrawl:get_provider_info" in entry_points


def test_every_dag_imports_from_the_installed_wheel(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]

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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBCRAWL_", "AIRFLOW", "PYTHON"))}
    env.update(AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False",
               AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db")
    proc = subprocess.run([str(python), "-c", probe, str(dags)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(result["module"]).is_relative_to(venv), result["module"]  # the wheel, not the checkout
    assert result["errors"] == {}
    assert set(result["dags"]) == DAG_IDS
