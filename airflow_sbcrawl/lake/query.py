"""Reading the lake back for demos and tests: a filtered scan to Arrow, SQL through DuckDB, a series selected
by its labels, a sample."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression

from airflow_sbcrawl.lake.catalog import CatalogConfig, LakeError, connect, explain
from airflow_sbcrawl.lake.schema import OBSERVATIONS, SCHEMAS


def scan(
    config: CatalogConfig,
    table: str = OBSERVATIONS,
    *,
    row_filter: BooleanExpression | str | None = None,
    columns: Sequence[str] = ("*",),
    limit: int | None = None,
) -> pa.Table:
    """Rows of one lake table as Arrow; ``row_filter`` is a pyiceberg expression or its string form
    (e.g. ``"site = 'ons' AND value > 10"``), pushed down to file and partition pruning. ``LakeError`` when
    the catalog cannot be reached or the table does not exist."""
    catalog = connect(config)
    try:
        iceberg = catalog.load_table((config.namespace, table))
        return iceberg.scan(
            row_filter=row_filter if row_filter is not None else AlwaysTrue(),
            selected_fields=tuple(columns),
            limit=limit,
        ).to_arrow()
    except Exception as err:
        raise explain(err, config, f"scan {config.namespace}.{table} in") from err


def query(config: CatalogConfig, sql: str, params: dict[str, Any] | None = None) -> pa.Table:
    """Run DuckDB SQL over the lake; the tables are visible as ``tables`` and ``observations``.

    ``params`` fills ``$name`` placeholders, so values never need quoting into the SQL text. Only the
    tables the SQL names are scanned, each in full into memory: fine for demos and tests, not for a
    production lake (point a real engine at the catalog for that). Returns the result as Arrow (an empty
    table for a statement without a result). ``LakeError`` when duckdb is missing, or the catalog or a table
    cannot be read; DuckDB's own error for bad SQL.
    """
    try:
        import duckdb
    except ModuleNotFoundError as err:  # duckdb is a dev extra, not a runtime dependency
        raise LakeError("query() needs duckdb: pip install duckdb") from err
    catalog = connect(config)
    con = duckdb.connect()
    try:
        for name in SCHEMAS:
            if re.search(rf"\b{name}\b", sql, flags=re.IGNORECASE):
                try:
                    arrow = catalog.load_table((config.namespace, name)).scan().to_arrow()
                except Exception as err:
                    raise explain(err, config, f"scan {config.namespace}.{name} in") from err
                con.register(name, arrow)
        relation = con.sql(sql, params=params or None)
        if relation is None:  # a statement without a result (DDL, SET)
            return pa.table({})
        # DuckDB 2 renamed Relation.arrow() to to_arrow_table().
        fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
        return fetch()
    finally:
        con.close()


#: A series selected by its labels: the observations whose row labels hold every label asked for, with their
#: table, column path, value, unit and status (docs/tables.md shows it; ``series`` runs it)
SERIES_SQL = """
    SELECT t.title, t.source_url, o.row_labels, o.column_path, o.value, o.unit, o.status, o.raw_value
    FROM observations o JOIN tables t USING (table_id)
    WHERE list_has_all(o.row_labels, $labels) AND ($site IS NULL OR o.site = $site)
    ORDER BY t.source_url, t.table_index, o."row", o.col
"""


def series(config: CatalogConfig, labels: Sequence[str], *, site: str | None = None) -> list[dict[str, Any]]:
    """The observations whose row labels include every one of ``labels`` (a series: "Belgium" and
    "Population (millions)" give its values year by year, each with its column path, unit and status),
    as plain dicts in sheet order. ``site`` keeps one site's. ``LakeError`` as for ``query``."""
    return query(config, SERIES_SQL, {"labels": list(labels), "site": site}).to_pylist()


def sample(config: CatalogConfig, n: int = 10, *, site: str | None = None) -> list[dict[str, Any]]:
    """Up to ``n`` observations with the title of their table, as plain dicts (for a demo printout)."""
    where = "WHERE o.site = $site" if site else ""
    sql = f"""
        SELECT t.site, t.title, t.source_url, o.row_labels, o.column_path, o.raw_value, o.value, o.status
        FROM observations o JOIN tables t USING (table_id)
        {where}
        ORDER BY t.site, t.source_sha256, t.table_index, o.row, o.col
        LIMIT {int(n)}
    """
    return query(config, sql, {"site": site} if site else None).to_pylist()
