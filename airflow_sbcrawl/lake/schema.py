"""The Iceberg tables detected statistics tables land in, and their idempotent creation.

Two tables per namespace:

* ``tables`` — one row per detected table: where it came from (provenance) and what it looks like;
* ``observations`` — every body cell in long form, joined to ``tables`` on ``table_id``, keyed by its
  ``row_labels`` and ``column_path`` (unique within its table unless the table's ``warnings`` say why not),
  with its ``unit`` and ``status``.

Partitioning: both tables are partitioned by ``identity(site)`` and nothing else. Loads and reloads are per
site (one crawl = one site), so a reload's delete filter ``site = S AND source_sha256 IN (...)`` prunes to
one partition, and demo queries are usually per site too. A bucket of ``source_sha256`` was rejected: a
load of one site would then write one small Parquet file per bucket touched (a tiny-file explosion at our
volumes: statistics tables are hundreds to thousands of cells), and writing bucket transforms needs the
optional ``pyiceberg-core`` wheel. Within a partition the writer sorts rows by ``source_sha256`` so the
column min/max statistics let a reload skip the files that cannot hold the source being replaced.
"""

from __future__ import annotations

from pyiceberg.catalog import Catalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    DoubleType,
    IntegerType,
    ListType,
    NestedField,
    StringType,
    TimestamptzType,
)

TABLES = "tables"
OBSERVATIONS = "observations"

TABLES_SCHEMA = Schema(
    NestedField(1, "table_id", StringType(), required=True, doc="DetectedTable.table_id (stable)"),
    NestedField(2, "site", StringType(), required=True, doc="crawl site the source file was found on"),
    NestedField(3, "source_sha256", StringType(), required=True, doc="sha256 of the source file"),
    NestedField(4, "source_url", StringType(), required=False),
    NestedField(5, "member", StringType(), required=False, doc="path inside an archive, '' if none"),
    NestedField(6, "sheet", StringType(), required=False, doc="sheet name or PDF page, '' if none"),
    NestedField(7, "cell_range", StringType(), required=False, doc="spreadsheet range, e.g. A3:F20"),
    NestedField(8, "table_index", IntegerType(), required=False, doc="position within its sheet"),
    NestedField(9, "title", StringType(), required=False),
    # JSON, not list<list<string>>: the header keeps its row structure and every engine can read it.
    NestedField(10, "header", StringType(), required=False, doc="JSON array of header rows"),
    NestedField(11, "notes", ListType(12, StringType(), element_required=True), required=False),
    NestedField(13, "n_rows", IntegerType(), required=False),
    NestedField(14, "n_cols", IntegerType(), required=False),
    NestedField(15, "n_observations", IntegerType(), required=False),
    NestedField(16, "confidence", DoubleType(), required=False),
    NestedField(17, "detector_version", StringType(), required=False),
    NestedField(18, "crawl_run", StringType(), required=False),
    NestedField(19, "loaded_at", TimestamptzType(), required=False),
    NestedField(20, "gone_at", TimestamptzType(), required=False,
                doc="when a recrawl found the source file removed from the site (its rows are kept)"),
    NestedField(21, "warnings", ListType(22, StringType(), element_required=True), required=False,
                doc="why observations of the table share a key, or what else was odd in reading it"),
    identifier_field_ids=[1],
)

OBSERVATIONS_SCHEMA = Schema(
    NestedField(1, "table_id", StringType(), required=True),
    NestedField(2, "site", StringType(), required=True),
    NestedField(3, "source_sha256", StringType(), required=True),
    NestedField(4, "row", IntegerType(), required=True, doc="0-based row in the sheet"),
    NestedField(5, "col", IntegerType(), required=True, doc="0-based column in the sheet"),
    NestedField(6, "row_labels", ListType(7, StringType(), element_required=True), required=False),
    NestedField(8, "column_path", ListType(9, StringType(), element_required=True), required=False),
    NestedField(10, "raw_value", StringType(), required=False, doc="the cell text as read"),
    NestedField(11, "value", DoubleType(), required=False, doc="parsed number, null when not numeric"),
    NestedField(12, "status", StringType(), required=False, doc="one of tables.model.VALUE_STATUSES"),
    NestedField(13, "line_class", StringType(), required=False, doc="data|derived"),
    NestedField(14, "unit", StringType(), required=False, doc="unit the table names for the value, '' if none"),
)

SCHEMAS: dict[str, Schema] = {TABLES: TABLES_SCHEMA, OBSERVATIONS: OBSERVATIONS_SCHEMA}

# Format v2 for row-level deletes later; zstd is pyiceberg's default codec but stating it keeps files
# written by other engines (Spark, Trino) compatible with what we write.
TABLE_PROPERTIES = {
    "format-version": "2",
    "write.parquet.compression-codec": "zstd",
}


def _by_site(schema: Schema) -> PartitionSpec:
    site = schema.find_field("site")
    return PartitionSpec(PartitionField(site.field_id, 1000, IdentityTransform(), "site"))


def _sorted_by_source(schema: Schema) -> SortOrder:
    return SortOrder(SortField(source_id=schema.find_field("source_sha256").field_id, transform=IdentityTransform()))


def ensure_namespace(catalog: Catalog, namespace: str) -> None:
    """Create ``namespace`` unless it exists; the catalog's own errors pass through."""
    catalog.create_namespace_if_not_exists(namespace)


def ensure_tables(catalog: Catalog, namespace: str) -> dict[str, Table]:
    """Create the namespace and both tables if missing; return the tables by short name.

    Existing tables only gain the columns added to the schemas since they were created (nullable, so
    their rows read as null there); nothing else is altered, so this is safe to call on every load. The
    catalog's own errors pass through (callers turn them into ``LakeError``).
    """
    ensure_namespace(catalog, namespace)
    tables = {
        name: catalog.create_table_if_not_exists(
            (namespace, name),
            schema=schema,
            partition_spec=_by_site(schema),
            sort_order=_sorted_by_source(schema),
            properties=TABLE_PROPERTIES,
        )
        for name, schema in SCHEMAS.items()
    }
    for name, table in tables.items():
        have = {f.name for f in table.schema().fields}
        missing = [f for f in SCHEMAS[name].fields if f.name not in have]
        if missing:
            with table.update_schema() as update:
                for f in missing:
                    update.add_column(f.name, f.field_type, doc=f.doc)
    return tables
