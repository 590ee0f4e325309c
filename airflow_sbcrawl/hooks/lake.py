"""The Iceberg REST catalog as an Airflow connection of type ``sbcrawl_iceberg``.

The connection's **extra is the pyiceberg catalog properties**, exactly as
``pyiceberg.catalog.load_catalog`` takes them (the connection form labels the fields accordingly and
shows an example extra: see ``connection-types`` in ``airflow_sbcrawl.get_provider_info``). For AWS S3
Tables, Glue's Iceberg REST endpoint and the local SeaweedFS alike::

    AIRFLOW_CONN_SBCRAWL_LAKE='{"conn_type": "sbcrawl_iceberg",
      "login": "<access key id>", "password": "<secret access key>",
      "extra": {"uri": "https://s3tables.eu-west-1.amazonaws.com/iceberg",
                "warehouse": "arn:aws:s3tables:eu-west-1:123456789012:bucket/stats-lake",
                "rest.sigv4-enabled": "true", "rest.signing-name": "s3tables",
                "rest.signing-region": "eu-west-1", "s3.region": "eu-west-1",
                "namespace": "sbcrawl"}}'

* ``login`` / ``password`` (optional) fill ``s3.access-key-id`` / ``s3.secret-access-key`` and their
  ``client.*`` twins (pyiceberg signs catalog calls with ``client.*`` and reads/writes data files with
  ``s3.*``) unless the extra sets them; with neither, pyiceberg uses boto3's default credential chain
  (instance role, IRSA, ``AWS_*`` variables).
* ``host`` (optional) is the catalog URI when the extra has no ``uri``.
* ``namespace`` (optional, not a pyiceberg property) is the Iceberg namespace of the lake's tables.

The hook reads any connection of that shape whatever its type, so a ``generic`` one made before the type
existed keeps working.

Secrets are registered with Airflow's log masker and never logged; ``describe()`` shows the redacted set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow.providers.common.compat.sdk import BaseHook

from airflow_sbcrawl.lake.catalog import DEFAULT_NAMESPACE, SECRET_KEYS, CatalogConfig

#: The connection type of the lake catalog (declared in the provider info).
CONN_TYPE = "sbcrawl_iceberg"


class IcebergCatalogHook(BaseHook):
    """Builds a ``lake.CatalogConfig`` from an Airflow connection (see the module docstring for its shape)."""

    conn_name_attr = "catalog_conn_id"
    default_conn_name = "sbcrawl_lake"
    conn_type = CONN_TYPE
    hook_name = "Iceberg REST catalog (SB Crawl lake)"

    def __init__(self, catalog_conn_id: str = default_conn_name, namespace: str | None = None) -> None:
        super().__init__()
        self.catalog_conn_id = catalog_conn_id
        self.namespace = namespace

    def get_config(self) -> CatalogConfig:
        """The catalog's pyiceberg properties and namespace from the connection (secrets masked in logs)."""
        conn = self.get_connection(self.catalog_conn_id)
        props = {str(k): v for k, v in (conn.extra_dejson or {}).items()}
        namespace = self.namespace or props.pop("namespace", None) or DEFAULT_NAMESPACE
        props.pop("namespace", None)
        if not props.get("uri") and conn.host:
            host = conn.host if "://" in conn.host else f"{conn.schema or 'https'}://{conn.host}"
            props["uri"] = f"{host}:{conn.port}" if conn.port and host.count(":") < 2 else host
        for prefix in ("s3", "client"):
            if conn.login:
                props.setdefault(f"{prefix}.access-key-id", conn.login)
            if conn.password:
                props.setdefault(f"{prefix}.secret-access-key", conn.password)
        _mask(props)
        return CatalogConfig.from_properties(props, namespace=namespace)

    def describe(self) -> str:
        """Connection id, URI, warehouse and namespace, for logs: no secret in it."""
        config = self.get_config()
        return (f"catalog connection {self.catalog_conn_id!r}: {config.uri} (warehouse {config.warehouse!r}, "
                f"namespace {config.namespace!r})")


def _mask(props: Mapping[str, Any]) -> None:
    """Register every secret value with the log masker, whatever the key's spelling in the extra."""
    try:
        from airflow.sdk.log import mask_secret
    except ImportError:  # pragma: no cover - older task SDKs
        return
    for key, value in props.items():
        if value and (key in SECRET_KEYS or "secret" in key or "token" in key or "credential" in key):
            mask_secret(str(value))


def catalog_connection(properties: Mapping[str, Any], *, namespace: str | None = None) -> str:
    """The JSON of an ``AIRFLOW_CONN_<ID>`` value for the catalog with ``properties`` (e.g. a local
    SeaweedFS's ``pyiceberg_properties()``)."""
    extra = {str(k): str(v) for k, v in properties.items()}
    if namespace:
        extra["namespace"] = namespace
    return json.dumps({"conn_type": CONN_TYPE, "extra": extra})
