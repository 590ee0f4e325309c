"""DetectTablesOperator's summary on real S3 (SeaweedFS): sheets without a table are counted with the reason."""

from __future__ import annotations

import hashlib
import json

import pytest

TABLE_CSV = b"Region,2022,2023\nNorth,10,12\nSouth,20,22\nTotal,30,34\n"
# A code list: a table of labels only, which holds no observation and must not be written
CODES_CSV = b"Code,Label\nA,Agriculture\nB,Mining\nC,Manufacturing\n"


def _put_crawl(client, bucket: str, files: dict[str, bytes]) -> dict:
    """The objects and the manifest of a crawl run as the crawler leaves them; returns its reference."""
    site, run_id = "stats.example", "run1"
    rows = []
    for name, data in files.items():
        sha = hashlib.sha256(data).hexdigest()
        client.put_object(Bucket=bucket, Key=f"crawls/{site}/objects/{sha}", Body=data)
        rows.append({"url": f"http://{site}/{name}", "sha256": sha, "size": len(data), "mime": "text/csv",
                     "filename": name})
    key = f"crawls/{site}/runs/{run_id}/manifest-0.jsonl"
    client.put_object(Bucket=bucket, Key=key, Body="".join(json.dumps(r) + "\n" for r in rows).encode())
    return {"bucket": bucket, "prefix": "crawls", "site": site, "run_id": run_id, "manifest_keys": [key]}


@pytest.mark.slow
def test_a_file_without_a_table_is_counted_with_its_reason_and_not_written(seaweed, seaweed_bucket,
                                                                          airflow_s3_conn):
    from airflow_sbcrawl.operators.tables import SUMMARY_NAME, DetectTablesOperator

    client = seaweed.boto3_client()
    crawl = _put_crawl(client, seaweed_bucket, {"table.csv": TABLE_CSV, "codes.csv": CODES_CSV})
    op = DetectTablesOperator(task_id="detect", crawls=crawl, aws_conn_id=airflow_s3_conn)

    first = op.execute({})
    assert (first["files"], first["files_with_tables"], first["tables"]) == (2, 1, 1)
    assert first["observations"] == 6
    assert first["no_table_found"] == 1
    assert first["no_table_reasons"] == {"no value cells": 1}
    run = first["crawls"][0]
    assert run["no_table_found"] == 1 and run["no_table_reasons"] == {"no value cells": 1}
    stored = json.loads(client.get_object(Bucket=seaweed_bucket, Key=run["tables_prefix"] + SUMMARY_NAME)["Body"]
                        .read())
    assert stored["no_table_reasons"] == {"no value cells": 1}
    index = client.get_object(Bucket=seaweed_bucket, Key=run["index_key"])["Body"].read().decode().splitlines()
    assert len(index) == 1 and json.loads(index[0])["provenance"]["source_url"].endswith("/table.csv")

    # The same bytes again: reused from the detection marker, and the sheet without a table still counted
    again = op.execute({})
    assert again["files_reused"] == 2
    assert (again["tables"], again["no_table_found"], again["no_table_reasons"]) == (1, 1, {"no value cells": 1})
