"""Catalog configuration and the errors a user sees when the catalog is wrong, dead or refuses us."""

from __future__ import annotations

import socket
import time

import pytest

from airflow_sbcrawl.lake import CatalogConfig, LakeError, connect, load_tables, scan
from sbcrawl_dev.infra.seaweedfs import SeaweedFS


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_config_from_seaweed_keeps_secrets_out_of_repr(seaweed: SeaweedFS) -> None:
    config = CatalogConfig.from_seaweed(seaweed, namespace="ns")
    assert (config.uri, config.warehouse, config.namespace) == (seaweed.catalog_uri, "lake", "ns")
    assert config.properties["rest.signing-name"] == "s3tables"
    assert seaweed.secret_key not in repr(config)
    assert seaweed.secret_key not in str(config.redacted_properties())
    assert config.with_namespace("other").properties == config.properties


def test_s3_tables_shape_matches_what_seaweed_hands_out(seaweed: SeaweedFS) -> None:
    built = CatalogConfig.s3_tables(
        uri=seaweed.catalog_uri,
        warehouse=seaweed.table_bucket,
        region=seaweed.region,
        access_key_id=seaweed.access_key,
        secret_access_key=seaweed.secret_key,
        s3_endpoint=seaweed.s3_endpoint,
    )
    assert built.properties == seaweed.pyiceberg_properties()


def test_properties_without_uri_are_rejected() -> None:
    with pytest.raises(LakeError, match="'uri'"):
        CatalogConfig.from_properties({"warehouse": "lake"})


def test_malformed_uri_is_named_in_the_error() -> None:
    config = CatalogConfig.from_properties({"uri": "127.0.0.1:8181", "warehouse": "lake"})
    with pytest.raises(LakeError, match=r"must start with http:// or https://, got '127.0.0.1:8181'"):
        connect(config)


def test_dead_server_gives_a_clear_error_quickly(seaweed: SeaweedFS) -> None:
    props = {**seaweed.pyiceberg_properties(), "uri": f"http://127.0.0.1:{_closed_port()}"}
    config = CatalogConfig.from_properties(props)
    started = time.monotonic()
    with pytest.raises(LakeError) as info:
        load_tables(config, [], site="s")
    message = str(info.value)
    assert config.uri in message
    assert "nothing answers there" in message
    assert seaweed.secret_key not in message
    assert time.monotonic() - started < 30


def test_wrong_secret_is_reported_as_refused_credentials(seaweed: SeaweedFS) -> None:
    props = {**seaweed.pyiceberg_properties(), "client.secret-access-key": "not-the-secret"}
    config = CatalogConfig.from_properties(props, namespace="never_created")
    with pytest.raises(LakeError, match="refused our credentials") as info:
        load_tables(config, [], site="s")
    assert "not-the-secret" not in str(info.value)


def test_scan_of_a_missing_table_names_it(lake_config: CatalogConfig) -> None:
    with pytest.raises(LakeError, match=rf"scan {lake_config.namespace}\.observations"):
        scan(lake_config)
