"""Fixtures for real Airflow runs (``dag.test()`` on SQLite).

Airflow reads its configuration once, when it is first imported, so this module points it at a throw-away
AIRFLOW_HOME as soon as pytest loads it (before any test module imports Airflow): a test session never
touches ``~/airflow``, a developer's own database or ``~/.cache`` (the crawls' answer spools).

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
    # The S3 state store keeps a crawl's answers since its last checkpoint on local disk under this cache.
    "XDG_CACHE_HOME": str(_HOME / "cache"),
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


class DagResult:
    """What a ``dag.test()`` run left in the metadata database: run state, task instances, return values."""

    def __init__(self, dag_run) -> None:
        self.dag_run = dag_run
        self.state = str(dag_run.state)

    def task_instances(self, task_id: str) -> list:
        from airflow.models.taskinstance import TaskInstance
        from airflow.utils.session import create_session

        with create_session() as session:
            tis = session.query(TaskInstance).filter_by(dag_id=self.dag_run.dag_id, run_id=self.dag_run.run_id,
                                                        task_id=task_id).order_by(TaskInstance.map_index).all()
            session.expunge_all()
        return tis

    def xcom(self, task_id: str, map_index: int = -1):
        from airflow.models.xcom import XComModel
        from airflow.utils.session import create_session

        with create_session() as session:
            row = session.query(XComModel).filter_by(dag_id=self.dag_run.dag_id, run_id=self.dag_run.run_id,
                                                     task_id=task_id, map_index=map_index,
                                                     key="return_value").one_or_none()
            return None if row is None else XComModel.deserialize_value(row)


@pytest.fixture
def run_dag(airflow_db: Path):
    """``run_dag(dag, **dag_test_kwargs) -> DagResult``. A DAG defined in a test module is written to the
    metadata database first: ``dag.test()`` only runs DAGs it finds serialized there, and parses the
    dags folder for them, where a test's DAG is not."""

    def run(dag, **kwargs) -> DagResult:
        from airflow.dag_processing.bundles.manager import DagBundlesManager
        from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

        DagBundlesManager().sync_bundles_to_db()
        bag = DagBag(dag_folder=os.devnull)
        bag.bag_dag(dag)
        sync_bag_to_db(bag, "dags-folder", None)
        return DagResult(dag.test(**kwargs))

    return run
