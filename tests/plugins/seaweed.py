"""Fixtures for a real SeaweedFS (S3 + Iceberg REST catalog), started once per test session.

* ``seaweed`` (session): the running ``sbcrawl_dev.infra.SeaweedFS``; stopped at session end.
* ``seaweed_bucket`` (function): a fresh, empty S3 bucket name, emptied and deleted after the test.
* ``lake_config`` (function): a ``CatalogConfig`` on a fresh Iceberg namespace, dropped after the test.

The per-test bucket and namespace let tests share one server (a start costs ~1–2 s) without seeing each
other's objects or rows.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sbcrawl_dev.infra.seaweedfs import SeaweedFS


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    # Short directory name: weed's Unix sockets go inside it when the path fits in 108 bytes.
    server = SeaweedFS(tmp_path_factory.mktemp("sw"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _unique_name(request: pytest.FixtureRequest, max_len: int) -> str:
    # S3 bucket and Iceberg namespace rules: lowercase letters, digits, hyphens; start with a letter.
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    suffix = uuid.uuid4().hex[:8]
    return f"t-{slug[: max_len - len(suffix) - 3]}-{suffix}".replace("--", "-")


@pytest.fixture
def seaweed_bucket(seaweed: SeaweedFS, request: pytest.FixtureRequest) -> Iterator[str]:
    client = seaweed.boto3_client()
    bucket = _unique_name(request, 63)
    client.create_bucket(Bucket=bucket)
    try:
        yield bucket
    finally:
        _empty_and_delete(client, bucket)


def _empty_and_delete(client: Any, bucket: str) -> None:
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket):
        keys = [{"Key": obj["Key"]} for obj in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    client.delete_bucket(Bucket=bucket)


@pytest.fixture
def lake_config(seaweed: SeaweedFS, request: pytest.FixtureRequest) -> Iterator[Any]:
    from airflow_sbcrawl.lake.catalog import CatalogConfig, connect

    namespace = _unique_name(request, 50).replace("-", "_")
    config = CatalogConfig.from_seaweed(seaweed, namespace=namespace)
    try:
        yield config
    finally:
        catalog = connect(config)
        if catalog.namespace_exists(namespace):
            for identifier in catalog.list_tables(namespace):
                catalog.purge_table(identifier)
            catalog.drop_namespace(namespace)
