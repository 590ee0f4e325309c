"""LoadToLakeOperator: the tables DetectTablesOperator wrote to S3, into the Iceberg lake.

Thin by design: the Iceberg side is ``airflow_sbcrawl.lake.load_tables`` (replace-by-source, so a rerun
never duplicates), reading back is ``tables.read_tables``, the catalog comes from an Airflow connection
through ``hooks.lake.IcebergCatalogHook`` (shape in that module's docstring).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, BaseOperator
from botocore.exceptions import BotoCoreError, ClientError

from airflow_sbcrawl.hooks.crawl import SBCrawlHook
from airflow_sbcrawl.hooks.lake import IcebergCatalogHook
from airflow_sbcrawl.lake import OBSERVATIONS, TABLES, LakeError, LoadResult, load_tables, mark_gone
from airflow_sbcrawl.operators import lineage
from airflow_sbcrawl.progress import ProgressLines
from airflow_sbcrawl.tables import read_tables
from airflow_sbcrawl.tables.output import INDEX_NAME

if TYPE_CHECKING:
    from airflow.sdk import Context


def detected_runs(value: Any) -> list[dict[str, Any]]:
    """The per-crawl entries of DetectTablesOperator's return value (or one entry, or a list, or JSON)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, dict):
        value = value.get("crawls", [value])
    runs = [dict(v) for v in value]
    for run in runs:
        missing = [k for k in ("bucket", "site", "run_id", "tables_prefix") if k not in run]
        if missing:
            raise ValueError(f"detected run lacks {', '.join(missing)}: {sorted(run)}")
    return runs


def batches(records: list[dict], max_observations: int) -> Iterator[list[dict]]:
    """Index records grouped per source file (sha256), groups packed into batches of about
    ``max_observations``: ``load_tables`` needs every table of a source in one call (it replaces the
    source's rows), and fewer, larger calls mean fewer Iceberg commits."""
    by_source: dict[str, list[dict]] = {}
    for rec in records:
        by_source.setdefault(rec["provenance"]["sha256"], []).append(rec)
    batch: list[dict] = []
    size = 0
    for group in by_source.values():
        n = sum(int(r.get("n_observations", 0)) for r in group)
        if batch and size + n > max_observations:
            yield batch
            batch, size = [], 0
        batch.extend(group)
        size += n
    if batch:
        yield batch


class LoadToLakeOperator(BaseOperator):
    """Load one or more crawl runs' detected tables into Iceberg (``tables`` and ``observations``).

    Reads each run's ``tables.jsonl`` from S3, then, batch by batch (whole source files, about
    ``max_observations`` observations each), downloads the batch's Parquet files to a temporary directory,
    reads them back with ``tables.read_tables`` and calls ``lake.load_tables`` with the crawl run as
    ``crawl_run``. Loading the same run again replaces the rows of its source files: nothing is duplicated.

    :param detected: DetectTablesOperator's return value (``detect.output``), or a list of its per-crawl
        entries (bucket, site, run_id, tables_prefix), or their JSON.
    :param catalog_conn_id: Airflow connection whose extra holds the pyiceberg catalog properties.
    :param namespace: Iceberg namespace; default: the connection's ``namespace`` extra, else ``sbcrawl``.
    :param aws_conn_id: Airflow connection for ``S3Hook`` to read the Parquet files.
    :param max_observations: observations per ``load_tables`` call (memory bound of the task).
    :returns: ``{"loads": [LoadResult.as_dict() per crawl run], "tables": …, "observations": …, …}``.
    """

    template_fields: Sequence[str] = ("detected", "catalog_conn_id", "namespace", "aws_conn_id", "max_observations")
    template_fields_renderers: ClassVar[dict[str, str]] = {"detected": "json"}
    ui_color = "#cfe2f3"

    def __init__(
        self,
        *,
        detected: Any,
        catalog_conn_id: str = IcebergCatalogHook.default_conn_name,
        namespace: str | None = None,
        aws_conn_id: str | None = "aws_default",
        max_observations: int | str = 500_000,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.detected = detected
        self.catalog_conn_id = catalog_conn_id
        self.namespace = namespace
        self.aws_conn_id = aws_conn_id
        self.max_observations = max_observations
        self._lineage: Any = None

    def execute(self, context: Context) -> dict[str, Any]:
        """Load every detected run into the lake; the sums over the runs and each run's result (the XCom)."""
        try:
            runs = detected_runs(self.detected)
            max_obs = max(1, int(self.max_observations))
        except (TypeError, ValueError) as exc:
            raise AirflowFailException(f"invalid detected/max_observations: {exc}") from exc
        try:
            catalog = IcebergCatalogHook(self.catalog_conn_id, self.namespace)
            config = catalog.get_config()
        except LakeError as exc:
            raise AirflowFailException(f"catalog connection {self.catalog_conn_id!r}: {exc}") from exc
        except Exception as exc:  # AirflowNotFoundException and friends
            raise AirflowFailException(f"catalog connection {self.catalog_conn_id!r} is not usable: {exc}") from exc
        self.log.info("loading %d crawl run(s) into %s", len(runs), catalog.describe())
        s3 = self.hook  # checks the connection before any work
        loads = []
        for run in runs:
            try:
                loads.append(self._load_run(s3, config, run, max_obs))
            except (ClientError, BotoCoreError) as exc:
                raise AirflowException(f"S3 failed while reading tables of {run['site']} run {run['run_id']}: {exc}") \
                    from exc
            except LakeError as exc:
                raise AirflowException(str(exc)) from exc  # retryable: a catalog can come back
        keys = ("sources", "tables", "observations", "replaced_tables", "replaced_observations")
        self._lineage = lineage.operator_lineage(
            [lineage.s3(run["bucket"], run["tables_prefix"]) for run in runs],
            [lineage.iceberg(config.uri, config.namespace, table) for table in (TABLES, OBSERVATIONS)])
        return {"loads": loads, **{k: sum(int(x[k]) for x in loads) for k in keys}, "namespace": config.namespace}

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the Parquet tables read, the lake's Iceberg tables written (see lineage.py)."""
        return self._lineage

    @cached_property
    def hook(self) -> SBCrawlHook:
        """The S3 hook of ``aws_conn_id`` the Parquet files are read with (a missing connection fails the task)."""
        return SBCrawlHook.for_connection(self.aws_conn_id)

    def _load_run(self, s3: SBCrawlHook, config: Any, run: dict[str, Any], max_obs: int) -> dict[str, Any]:
        bucket, prefix, site, run_id = run["bucket"], run["tables_prefix"], run["site"], run["run_id"]
        text = s3.read_key(prefix + INDEX_NAME, bucket)
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        results: list[LoadResult] = []
        with tempfile.TemporaryDirectory(prefix="sbcrawl-load-") as tmp, \
                ProgressLines(f"{site} run {run_id}: lake load", self.log.info) as progress:
            for batch in batches(records, max_obs):
                progress.status = f"batch {len(results) + 1}: reading {len(batch):,} tables from S3"

                def on_step(text: str, number: int = len(results) + 1) -> None:
                    progress.status = f"batch {number}: {text}"

                work = Path(tmp) / f"batch-{len(results):05d}"
                (work / "tables").mkdir(parents=True)
                for rec in batch:
                    s3.stream_to_file(bucket, prefix + rec["path"], work / rec["path"])
                index = work / INDEX_NAME
                index.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch), encoding="utf-8")
                results.append(load_tables(config, read_tables(index), site=site, crawl_run=run_id,
                                           on_step=on_step))
                for path in (work / "tables").iterdir():  # bounded disk: one batch at a time
                    path.unlink()
        merged = _merge(site, results)
        # Sources a recrawl found removed: their tables are marked, never deleted.
        merged["marked_gone"] = mark_gone(config, site=site, urls=run.get("gone_urls") or [])
        self.log.info("%s run %s: %d sources, %d tables, %d observations loaded (replaced %d / %d) in %d call(s)",
                      site, run_id, merged["sources"], merged["tables"], merged["observations"],
                      merged["replaced_tables"], merged["replaced_observations"], len(results))
        return {**merged, "run_id": run_id, "batches": len(results)}


def _merge(site: str, results: list[LoadResult]) -> dict[str, Any]:
    """One LoadResult dict for several load_tables calls of the same run (sums; last snapshot ids)."""
    if not results:
        return LoadResult(site, 0, 0, 0, 0, 0, {}).as_dict()
    merged = results[-1].as_dict()
    for key in ("sources", "tables", "observations", "replaced_tables", "replaced_observations"):
        merged[key] = sum(getattr(r, key) for r in results)
    return merged
