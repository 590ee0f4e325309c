"""Parquet per table plus a JSON Lines index, and the way back to ``DetectedTable`` for the lake loader.

Layout of an output directory::

    tables/<table_id>.parquet   one row per observation, provenance repeated on every row
    tables.jsonl                one line per table (the index), paths relative to the directory
    errors.jsonl                one line per file or member that could not be read
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from .model import DetectedTable, Observation, Provenance

INDEX_NAME = "tables.jsonl"
ERRORS_NAME = "errors.jsonl"


def _schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("table_id", pa.string()),
            ("row", pa.int32()),
            ("col", pa.int32()),
            ("row_labels", pa.list_(pa.string())),
            ("column_path", pa.list_(pa.string())),
            ("raw", pa.string()),
            ("value", pa.float64()),
            ("status", pa.string()),
            ("line_class", pa.string()),
            ("unit", pa.string()),
            ("source_url", pa.string()),
            ("sha256", pa.string()),
            ("member", pa.string()),
            ("sheet", pa.string()),
            ("cell_range", pa.string()),
            ("crawl_run", pa.string()),
            ("detector_version", pa.string()),
            ("confidence", pa.float64()),
        ]
    )


def table_to_arrow(table: DetectedTable):
    """The table's observations as a ``pyarrow.Table`` of the Parquet schema: one row per observation, the
    provenance repeated on every row (needs the ``tables`` extra's pyarrow)."""
    import pyarrow as pa

    obs = table.observations
    n = len(obs)
    p = table.provenance
    columns = {
        "table_id": [table.table_id] * n,
        "row": [o.row for o in obs],
        "col": [o.col for o in obs],
        "row_labels": [list(o.row_labels) for o in obs],
        "column_path": [list(o.column_path) for o in obs],
        "raw": [o.raw for o in obs],
        "value": [o.value for o in obs],
        "status": [o.status for o in obs],
        "line_class": [o.line_class for o in obs],
        "unit": [o.unit for o in obs],
        "source_url": [p.source_url] * n,
        "sha256": [p.sha256] * n,
        "member": [p.member] * n,
        "sheet": [p.sheet] * n,
        "cell_range": [table.cell_range] * n,
        "crawl_run": [p.crawl_run] * n,
        "detector_version": [p.detector_version] * n,
        "confidence": [table.confidence] * n,
    }
    return pa.Table.from_pydict(columns, schema=_schema())


def index_record(table: DetectedTable, parquet_path: str) -> dict:
    """The table's line of ``tables.jsonl``: everything but its observations, and ``parquet_path`` where
    they are; ``read_tables`` reads it back."""
    return {
        "table_id": table.table_id,
        "provenance": asdict(table.provenance),
        "index": table.index,
        "cell_range": table.cell_range,
        "first_row": table.first_row,
        "last_row": table.last_row,
        "first_col": table.first_col,
        "last_col": table.last_col,
        "title": table.title,
        "header": table.header,
        "line_classes": table.line_classes,
        "notes": table.notes,
        "shape": list(table.shape),
        "n_observations": len(table.observations),
        "confidence": table.confidence,
        "column_attributes": {str(j): attrs for j, attrs in table.column_attributes.items()},
        "warnings": table.warnings,
        "path": parquet_path,
    }


def write_table(table: DetectedTable, out_dir: str | Path) -> dict:
    """Write one table's Parquet file; returns its index record (path relative to ``out_dir``)."""
    import pyarrow.parquet as pq

    out = Path(out_dir)
    rel = f"tables/{table.table_id}.parquet"
    (out / "tables").mkdir(parents=True, exist_ok=True)
    tmp = out / (rel + ".tmp")
    pq.write_table(table_to_arrow(table), tmp, compression="zstd")
    tmp.replace(out / rel)  # a reader never sees a half-written file
    return index_record(table, rel)


def write_tables(tables: list[DetectedTable], out_dir: str | Path, errors: list[dict] | None = None) -> Path:
    """Write every table and the index (appending, so several batches can share a directory).

    ``errors`` (JSON-able dicts) are appended to ``errors.jsonl``. Returns the index's path, which exists
    afterwards even when ``tables`` is empty.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = [write_table(t, out) for t in tables]
    index = out / INDEX_NAME
    with index.open("a", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    if errors:
        with (out / ERRORS_NAME).open("a", encoding="utf-8") as fh:
            for err in errors:
                fh.write(json.dumps(err, ensure_ascii=False) + "\n")
    return index


def read_tables(index_path: str | Path, *, with_observations: bool = True) -> list[DetectedTable]:
    """The tables listed in an index, observations read back from their Parquet files.

    A table listed twice (an index appended twice for the same file) is read once. ``with_observations``
    False skips the Parquet files. A missing file raises ``OSError``, a malformed index line ``ValueError``
    or ``KeyError``.
    """
    import pyarrow.parquet as pq

    index_path = Path(index_path)
    base = index_path.parent
    tables = []
    seen: set[str] = set()
    for line in index_path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec["table_id"] in seen:  # an index appended twice for the same file
            continue
        seen.add(rec["table_id"])
        observations: list[Observation] = []
        if with_observations:
            data = pq.read_table(base / rec["path"]).to_pydict()
            units = data.get("unit") or [""] * len(data["row"])  # files written before units were read
            observations = [
                Observation(
                    row=data["row"][k],
                    col=data["col"][k],
                    row_labels=tuple(data["row_labels"][k]),
                    column_path=tuple(data["column_path"][k]),
                    raw=data["raw"][k],
                    value=data["value"][k],
                    status=data["status"][k],
                    line_class=data["line_class"][k],
                    unit=units[k] or "",
                )
                for k in range(len(data["row"]))
            ]
        tables.append(
            DetectedTable(
                provenance=Provenance(**rec["provenance"]),
                index=rec["index"],
                first_row=rec["first_row"],
                last_row=rec["last_row"],
                first_col=rec["first_col"],
                last_col=rec["last_col"],
                title=rec["title"],
                header=rec["header"],
                line_classes=rec["line_classes"],
                observations=observations,
                notes=rec["notes"],
                confidence=rec["confidence"],
                column_attributes={int(j): a for j, a in rec.get("column_attributes", {}).items()},
                warnings=list(rec.get("warnings", [])),
            )
        )
    return tables
