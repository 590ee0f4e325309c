"""Loading detected tables into Iceberg, replacing whatever an earlier load of the same source wrote."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
from pyiceberg.expressions import And, BooleanExpression, EqualTo, In, IsNull
from pyiceberg.table import Table

from airflow_sbcrawl.lake.catalog import CatalogConfig, LakeError, connect, explain
from airflow_sbcrawl.lake.schema import OBSERVATIONS, TABLES, ensure_tables
from airflow_sbcrawl.tables.model import DetectedTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadResult:
    """What one ``load_tables`` call did."""

    site: str
    sources: int  # distinct source files (sha256) loaded
    tables: int  # rows written to ``tables``
    observations: int  # rows written to ``observations``
    replaced_tables: int  # rows of earlier loads of the same sources that were removed
    replaced_observations: int
    snapshot_ids: dict[str, int | None]  # current snapshot of each Iceberg table after the load

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly, e.g. for an Airflow XCom."""
        return {
            "site": self.site,
            "sources": self.sources,
            "tables": self.tables,
            "observations": self.observations,
            "replaced_tables": self.replaced_tables,
            "replaced_observations": self.replaced_observations,
            "snapshot_ids": dict(self.snapshot_ids),
        }


def load_tables(
    config: CatalogConfig,
    tables: Iterable[DetectedTable],
    *,
    site: str,
    crawl_run: str | None = None,
) -> LoadResult:
    """Write ``tables`` (and their observations) for ``site``; a source loaded before is replaced, not added.

    Replacement is keyed on (site, source_sha256): every row an earlier load wrote for a source file in
    this batch is removed and the new rows are added in one atomic Iceberg commit per table (pyiceberg
    records it as a delete/overwrite snapshot plus an append snapshot, published together). The two Iceberg
    tables cannot share a commit; ``observations`` is written first, so after a failure in between a rerun
    of the same load converges.

    Pass every table of a source file in one call: tables of a source omitted here are deleted with it.
    ``crawl_run`` overrides ``Provenance.crawl_run`` when given. The namespace and tables are created when
    missing (``ensure_tables``). Raises ``ValueError`` for an empty ``site`` and ``LakeError`` (naming the
    catalog and the cause, never a secret) when the catalog cannot be reached or refuses the write.
    """
    if not site:
        raise ValueError("site must be a non-empty string")
    # Last one wins for a repeated table_id, so a batch never writes the same table twice.
    batch = {t.table_id: t for t in tables}
    catalog = connect(config)
    try:
        iceberg = ensure_tables(catalog, config.namespace)
    except Exception as err:
        raise explain(err, config, f"create namespace {config.namespace!r} and its tables in") from err
    if not batch:
        return LoadResult(site, 0, 0, 0, 0, 0, _snapshot_ids(iceberg))

    loaded_at = datetime.now(UTC)
    shas = sorted({t.provenance.sha256 for t in batch.values()})
    replace: BooleanExpression = And(EqualTo("site", site), In("source_sha256", shas))
    summary = {"sbcrawl.site": site, "sbcrawl.sources": str(len(shas))}
    if crawl_run:
        summary["sbcrawl.crawl-run"] = crawl_run

    ordered = sorted(batch.values(), key=lambda t: (t.provenance.sha256, t.table_id))
    obs_rows = _observation_rows(ordered, site)
    table_rows = _table_rows(ordered, site, crawl_run, loaded_at)
    try:
        replaced_obs = _replace(iceberg[OBSERVATIONS], obs_rows, replace, summary)
        replaced_tables = _replace(iceberg[TABLES], table_rows, replace, summary)
    except LakeError:
        raise
    except Exception as err:
        raise explain(err, config, f"load {len(batch)} tables of site {site!r} into") from err

    result = LoadResult(
        site=site,
        sources=len(shas),
        tables=len(table_rows),
        observations=len(obs_rows),
        replaced_tables=replaced_tables,
        replaced_observations=replaced_obs,
        snapshot_ids=_snapshot_ids(iceberg),
    )
    log.info(
        "loaded %d tables / %d observations from %d sources of %s into %s (replaced %d / %d)",
        result.tables,
        result.observations,
        result.sources,
        site,
        config.namespace,
        replaced_tables,
        replaced_obs,
    )
    return result


def mark_gone(config: CatalogConfig, *, site: str, urls: Sequence[str]) -> int:
    """Set ``gone_at`` on the ``tables`` rows of source files a recrawl found removed (404/410); their rows
    and observations stay. Returns how many rows were marked (already marked ones are left as they are).
    ``LakeError`` when the catalog cannot be reached or refuses the write."""
    if not urls:
        return 0
    catalog = connect(config)
    try:
        table = ensure_tables(catalog, config.namespace)[TABLES]
        where = And(EqualTo("site", site), In("source_url", sorted(set(urls))), IsNull("gone_at"))
        rows = table.scan(row_filter=where).to_arrow()
        if not rows.num_rows:
            return 0
        now = pa.array([datetime.now(UTC)] * rows.num_rows, type=rows.schema.field("gone_at").type)
        marked = rows.set_column(rows.schema.get_field_index("gone_at"), "gone_at", now)
        table.overwrite(marked, overwrite_filter=where, snapshot_properties={"sbcrawl.site": site,
                                                                             "sbcrawl.gone": str(rows.num_rows)})
    except Exception as err:
        raise explain(err, config, f"mark {len(urls)} gone sources of site {site!r} in") from err
    log.info("marked %d tables of %d gone sources of %s", rows.num_rows, len(urls), site)
    return rows.num_rows


def _replace(table: Table, rows: list[dict], where: BooleanExpression, summary: dict[str, str]) -> int:
    """Overwrite the rows matching ``where`` with ``rows``; return how many old rows went away."""
    before = _total_records(table)
    data = pa.Table.from_pylist(rows, schema=table.schema().as_arrow())
    with warnings.catch_warnings():
        # A first load of a source has nothing to replace; pyiceberg warns about exactly that.
        warnings.filterwarnings("ignore", message="Delete operation did not match any records")
        table.overwrite(data, overwrite_filter=where, snapshot_properties=summary)
    # Derived from snapshot summaries so no extra scan is needed: old + written - now = removed.
    return before + len(rows) - _total_records(table)


def _total_records(table: Table) -> int:
    snapshot = table.current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return 0
    return int(snapshot.summary.get("total-records", "0"))


def _snapshot_ids(iceberg: dict[str, Table]) -> dict[str, int | None]:
    return {name: (t.current_snapshot().snapshot_id if t.current_snapshot() else None) for name, t in iceberg.items()}


def _table_rows(tables: Sequence[DetectedTable], site: str, crawl_run: str | None, loaded_at: datetime) -> list[dict]:
    rows = []
    for t in tables:
        p = t.provenance
        n_rows, n_cols = t.shape
        rows.append(
            {
                "table_id": t.table_id,
                "site": site,
                "source_sha256": p.sha256,
                "source_url": p.source_url,
                "member": p.member,
                "sheet": p.sheet,
                "cell_range": t.cell_range,
                "table_index": t.index,
                "title": t.title,
                "header": json.dumps(t.header, ensure_ascii=False),
                "notes": list(t.notes),
                "n_rows": n_rows,
                "n_cols": n_cols,
                "n_observations": len(t.observations),
                "confidence": float(t.confidence),
                "detector_version": p.detector_version,
                "crawl_run": crawl_run if crawl_run is not None else p.crawl_run,
                "loaded_at": loaded_at,
                "warnings": list(t.warnings),
            }
        )
    return rows


def _observation_rows(tables: Sequence[DetectedTable], site: str) -> list[dict]:
    rows = []
    for t in tables:
        table_id, sha = t.table_id, t.provenance.sha256
        for o in t.observations:
            rows.append(
                {
                    "table_id": table_id,
                    "site": site,
                    "source_sha256": sha,
                    "row": o.row,
                    "col": o.col,
                    "row_labels": list(o.row_labels),
                    "column_path": list(o.column_path),
                    "raw_value": o.raw,
                    "value": o.value,
                    "status": o.status,
                    "line_class": o.line_class,
                    "unit": o.unit,
                }
            )
    return rows
