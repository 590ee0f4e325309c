"""Fixtures for real Airflow runs (``dag.test()`` on SQLite).

Airflow reads its configuration once, when it is first imported, so this module points it at a throw-away
AIRFLOW_HOME as soon as pytest loads it (before any test module imports Airflow): a test session never
touches ``~/airflow`` or a developer's own database.

* ``airflow_db`` (session): ``airflow db migrate`` run once (~12 s on 2 cores) in that home.
* ``airflow_s3_conn`` (function): ``AIRFLOW_CONN_SBCRAWL_TEST_S3`` pointing at the session's SeaweedFS;
  returns the connection id. Loopback traffic bypasses any HTTP proxy (the simulator sets one).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEST_CONN_ID = "sbcrawl_test_s3"

_HOME = Path(tempfile.mkdtemp(prefix="sbcrawl-airflow-"))
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
_ENV = {
    "AIRFLOW_HOME": str(_HOME),
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
    "AIRFLOW__CORE__PARALLELISM": "4",  # 2 cores
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
}
os.environ.update(_ENV)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    airflow = Path(sys.executable).with_name("airflow")
    proc = subprocess.run([str(airflow), "db", "migrate"], env={**os.environ, **_ENV},
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return _HOME


@pytest.fixture
def airflow_s3_conn(seaweed, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for key, value in seaweed.airflow_env(TEST_CONN_ID).items():
        monkeypatch.setenv(key, value)
    no_proxy = "127.0.0.1,localhost"
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    yield TEST_CONN_ID
