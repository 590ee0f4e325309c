"""``python -m sbcrawl_dev serve-lake``: a local S3 and Iceberg REST catalog (SeaweedFS) to load tables into
and to run the DAGs against, until Ctrl-C.

It writes, next to its data (``--dir``, default ``./var/lake``), the two files a local setup needs, so no
secret is printed: ``catalog.json`` (the pyiceberg properties ``sbcrawl lake load --catalog`` takes) and
``airflow.env`` (the ``AIRFLOW_CONN_*`` lines of the S3 connection and of the lake catalog connection,
and the ``SBCRAWL_*`` settings that name them, for ``set -a; . airflow.env`` before ``airflow standalone``).
The credentials are made up on first start and kept in ``credentials.json``, so a restart serves the same
buckets and tables.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from sbcrawl_dev.infra.seaweedfs import SeaweedFS, SeaweedFSError
from sbcrawl_dev.sim.server import serve_until_interrupted

PROG = "python -m sbcrawl_dev serve-lake"
S3_CONN_ID = "sbcrawl_local_s3"
LAKE_CONN_ID = "sbcrawl_local_lake"
NAMESPACE = "sbcrawl"


def _private_file(path: Path, text: str) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def start(directory: Path) -> SeaweedFS:
    """SeaweedFS in ``directory`` with the credentials of an earlier start (new ones the first time),
    started, with its bucket, and catalog.json / airflow.env written next to its data."""
    from airflow_sbcrawl.hooks.lake import catalog_connection

    directory.mkdir(parents=True, exist_ok=True)
    saved = directory / "credentials.json"
    keys = json.loads(saved.read_text()) if saved.is_file() else {}
    seaweed = SeaweedFS(directory / "data", access_key=keys.get("access_key"), secret_key=keys.get("secret_key"),
                        die_with_parent=True).start()
    _private_file(saved, json.dumps({"access_key": seaweed.access_key, "secret_key": seaweed.secret_key}))
    client = seaweed.boto3_client()
    if seaweed.bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
        client.create_bucket(Bucket=seaweed.bucket)
    _private_file(directory / "catalog.json",
                  json.dumps({**seaweed.pyiceberg_properties(), "namespace": NAMESPACE}, indent=2) + "\n")
    env = {**seaweed.airflow_env(S3_CONN_ID),
           f"AIRFLOW_CONN_{LAKE_CONN_ID.upper()}": catalog_connection(seaweed.pyiceberg_properties(),
                                                                      namespace=NAMESPACE),
           "SBCRAWL_BUCKET": seaweed.bucket, "SBCRAWL_AWS_CONN_ID": S3_CONN_ID, "SBCRAWL_LAKE_CONN_ID": LAKE_CONN_ID}
    _private_file(directory / "airflow.env", "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()))
    return seaweed


def main(argv: list[str] | None = None) -> int:
    """Serve until Ctrl-C; exit 1 when SeaweedFS cannot start (no ``weed`` binary, ports)."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, default=Path("var/lake"), help="data, credentials and the written files")
    args = p.parse_args(argv)
    directory = args.dir.resolve()
    try:
        seaweed = start(directory)
    except (SeaweedFSError, OSError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    print(f"S3 on {seaweed.s3_endpoint} (bucket {seaweed.bucket}), Iceberg REST catalog on {seaweed.catalog_uri}",
          flush=True)
    print(f"  sbcrawl lake load DIR --catalog {directory / 'catalog.json'}", flush=True)
    print(f"  Airflow: set -a; . {directory / 'airflow.env'}; set +a   (connections {S3_CONN_ID}, {LAKE_CONN_ID})",
          flush=True)
    serve_until_interrupted(seaweed.stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
