"""OpenLineage facets of the operators: what each task read and wrote, for lineage tools (Marquez, ...).

Used when ``apache-airflow-providers-openlineage`` is installed (the ``openlineage`` extra); without it every
function returns None and the operators run as before. Dataset names follow OpenLineage's conventions:
a website is ``namespace=<scheme>://<host>``, ``name=<path>``; S3 is ``namespace=s3://<bucket>``,
``name=<key prefix>``; an Iceberg table is ``namespace=<catalog URI>``, ``name=<namespace>.<table>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

Dataset = tuple[str, str]  # (namespace, name)


def site(url: str) -> Dataset:
    """The website of ``url``: its origin as namespace, its path as name."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path or "/"


def s3(bucket: str, key_prefix: str) -> Dataset:
    """An S3 folder (or object)."""
    return f"s3://{bucket}", key_prefix.rstrip("/") or "/"


def iceberg(catalog_uri: str, namespace: str, table: str) -> Dataset:
    """An Iceberg table of a REST catalog."""
    return catalog_uri.rstrip("/"), f"{namespace}.{table}"


def operator_lineage(inputs: Iterable[Dataset], outputs: Iterable[Dataset]) -> Any | None:
    """An ``OperatorLineage`` of these datasets, or None when the OpenLineage provider is not installed."""
    try:
        from airflow.providers.common.compat.openlineage.facet import Dataset as OLDataset
        from airflow.providers.openlineage.extractors import OperatorLineage
    except ImportError:
        return None
    return OperatorLineage(inputs=[OLDataset(namespace=ns, name=name) for ns, name in dict.fromkeys(inputs)],
                           outputs=[OLDataset(namespace=ns, name=name) for ns, name in dict.fromkeys(outputs)])
