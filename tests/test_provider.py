"""What Airflow learns from the provider info: a connection type with its form, extra links, the
``[sbcrawl]`` configuration section; and the links' URLs."""

from __future__ import annotations

import pytest


def test_providers_manager_registers_connection_type_links_and_config():
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    pm = ProvidersManager()
    assert pm.providers["airflow-sbcrawl"].version == "0.1.0"
    hook = ProvidersManagerTaskRuntime().hooks["sbcrawl_iceberg"]
    assert hook.hook_class_name == "airflow_sbcrawl.hooks.lake.IcebergCatalogHook"
    assert hook.connection_id_attribute_name == "catalog_conn_id"
    assert {"airflow_sbcrawl.operators.links.CrawlReportLink",
            "airflow_sbcrawl.operators.links.CrawlManifestLink"} <= set(pm.extra_links_class_names)
    options = dict(pm.provider_configs)["airflow-sbcrawl"]["sbcrawl"]
    assert {"bucket", "prefix", "aws_conn_id", "providers_file", "crawl_options", "retries", "retry_delay_s",
            "lake_conn_id", "lake_namespace", "object_url_template"} == set(options["options"])


def test_connection_form_of_the_lake_catalog():
    """What the API server sends the UI's connection form for the type (hook_meta_data)."""
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService

    (meta,) = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "sbcrawl_iceberg"]
    assert meta.hook_name == "Iceberg REST catalog (SB Crawl lake)"
    fields = meta.standard_fields
    assert fields.url_schema.hidden and fields.port.hidden
    assert fields.host.title == "Catalog URI (if not in extra)" and fields.login.title == "Access key ID"
    assert fields.password.title == "Secret access key"


def test_config_section_defaults_come_from_the_provider_info(monkeypatch):
    from airflow.configuration import conf

    monkeypatch.delenv("AIRFLOW__SBCRAWL__BUCKET", raising=False)
    assert conf.get("sbcrawl", "bucket") == "sbcrawl"
    assert conf.get("sbcrawl", "lake_conn_id") == "sbcrawl_lake"
    assert conf.getint("sbcrawl", "retries") == 2


def test_object_url_follows_the_configured_template(monkeypatch):
    from airflow_sbcrawl.operators.links import object_url

    monkeypatch.delenv("AIRFLOW__SBCRAWL__OBJECT_URL_TEMPLATE", raising=False)
    assert object_url("lake-raw", "web/insee.fr/runs/r 1/report.md") == (
        "https://s3.console.aws.amazon.com/s3/buckets/lake-raw?prefix=web/insee.fr/runs/r%201/report.md")
    monkeypatch.setenv("AIRFLOW__SBCRAWL__OBJECT_URL_TEMPLATE", "http://localhost:8888/buckets/{bucket}/{key}")
    assert object_url("b", "k/x.md") == "http://localhost:8888/buckets/b/k/x.md"
    monkeypatch.setenv("AIRFLOW__SBCRAWL__OBJECT_URL_TEMPLATE", "http://x/{bucket}/{path}")
    with pytest.raises(ValueError, match=r"object_url_template .* use only \{bucket\} and \{key\}"):
        object_url("b", "k")


def test_links_point_at_the_report_and_the_manifest_folder(monkeypatch):
    """Narrow unit test: the crawl's return value stands in for the XCom the link reads."""
    from airflow_sbcrawl.operators import links

    monkeypatch.setenv("AIRFLOW__SBCRAWL__OBJECT_URL_TEMPLATE", "http://s3ui/{bucket}/{key}")
    result = {"bucket": "b", "report_key": "c/site/runs/r1/report.md",
              "manifest_keys": ["c/site/runs/r1/manifest-000001.jsonl", "c/site/runs/r1/manifest-000002.jsonl"]}
    values = {"ok": result, "failed": None}
    monkeypatch.setattr(links.XCom, "get_value", staticmethod(lambda *, ti_key, key: values[ti_key]))
    assert links.CrawlReportLink().get_link(None, ti_key="ok") == "http://s3ui/b/c/site/runs/r1/report.md"
    assert links.CrawlManifestLink().get_link(None, ti_key="ok") == "http://s3ui/b/c/site/runs/r1/"
    assert links.CrawlReportLink().get_link(None, ti_key="failed") == ""
    from airflow_sbcrawl.operators.crawl import SBCrawlOperator

    assert {link.name for link in SBCrawlOperator.operator_extra_links} == {"Crawl report", "Manifest"}
