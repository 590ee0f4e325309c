"""How to reach the Iceberg REST catalog: one dataclass built from plain properties, and ``connect()``.

The property shape is that of AWS S3 Tables (and Glue's REST endpoint): ``type=rest`` + SigV4 signing with
``rest.signing-name=s3tables``; SeaweedFS's catalog accepts the same, so code tested locally runs on AWS
by changing properties only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.catalog import Catalog, load_catalog

DEFAULT_NAMESPACE = "sbcrawl"

# Property keys that carry secrets: kept out of repr, logs and error messages.
SECRET_KEYS = frozenset(
    {
        "s3.secret-access-key",
        "s3.session-token",
        "client.secret-access-key",
        "client.session-token",
        "token",
        "credential",
    }
)


class LakeError(RuntimeError):
    """The catalog could not be reached or refused an operation; the message says which and where."""


@dataclass(frozen=True)
class CatalogConfig:
    """Everything needed to open the catalog; secrets live in ``properties`` and are never shown."""

    uri: str
    warehouse: str
    namespace: str = DEFAULT_NAMESPACE
    name: str = "sbcrawl"
    # The full pyiceberg property set (uri and warehouse included), credentials too: hidden from repr.
    properties: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, Any], *, namespace: str = DEFAULT_NAMESPACE, name: str = "sbcrawl"
    ) -> CatalogConfig:
        """From pyiceberg-style properties (e.g. an Airflow connection's extra); ``uri`` is required."""
        props = {str(k): str(v) for k, v in properties.items() if v is not None}
        props.setdefault("type", "rest")
        if not props.get("uri"):
            raise LakeError("catalog properties need a 'uri' (the Iceberg REST endpoint)")
        return cls(
            uri=props["uri"], warehouse=props.get("warehouse", ""), namespace=namespace, name=name, properties=props
        )

    @classmethod
    def s3_tables(
        cls,
        *,
        uri: str,
        warehouse: str,
        region: str,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        s3_endpoint: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> CatalogConfig:
        """The AWS S3 Tables / SeaweedFS shape. Without keys, pyiceberg falls back to boto3's default chain."""
        props = {
            "type": "rest",
            "uri": uri,
            "warehouse": warehouse,
            "rest.sigv4-enabled": "true",
            "rest.signing-name": "s3tables",
            "rest.signing-region": region,
            "s3.region": region,
            "client.region": region,
        }
        if s3_endpoint:
            props["s3.endpoint"] = s3_endpoint
        # pyiceberg signs catalog requests with the client.* keys and reads/writes files with the s3.* ones.
        for suffix, value in (
            ("access-key-id", access_key_id),
            ("secret-access-key", secret_access_key),
            ("session-token", session_token),
        ):
            if value:
                props[f"s3.{suffix}"] = value
                props[f"client.{suffix}"] = value
        return cls.from_properties(props, namespace=namespace)

    @classmethod
    def from_seaweed(cls, server: Any, *, namespace: str = DEFAULT_NAMESPACE) -> CatalogConfig:
        """From a running ``sbcrawl_dev.infra.SeaweedFS`` (anything with ``pyiceberg_properties()``)."""
        return cls.from_properties(server.pyiceberg_properties(), namespace=namespace)

    def with_namespace(self, namespace: str) -> CatalogConfig:
        """The same catalog, its tables in another namespace."""
        return CatalogConfig(self.uri, self.warehouse, namespace, self.name, dict(self.properties))

    def redacted_properties(self) -> dict[str, str]:
        """The properties with every secret replaced by ``***``: safe to log or show."""
        return {k: ("***" if k in SECRET_KEYS else v) for k, v in self.properties.items()}


def connect(config: CatalogConfig) -> Catalog:
    """Open the catalog; a clear ``LakeError`` when it is unreachable, misaddressed or refuses us."""
    if not config.uri.startswith(("http://", "https://")):
        raise LakeError(f"Iceberg REST catalog URI must start with http:// or https://, got {config.uri!r}")
    try:
        # Opening a REST catalog already calls GET /v1/config, so a dead server fails here, not later.
        return load_catalog(config.name, **config.properties)
    except Exception as err:
        raise explain(err, config, "connect to") from err


def explain(err: BaseException, config: CatalogConfig, action: str) -> LakeError:
    """Turn a pyiceberg/requests/botocore failure into one sentence that names the catalog and the cause."""
    if isinstance(err, LakeError):
        return err
    text = f"{type(err).__name__}: {err}"
    for key, value in config.properties.items():
        if key in SECRET_KEYS and value:
            text = text.replace(value, "***")
    lowered = text.lower()
    if any(s in lowered for s in ("connection refused", "failed to establish", "max retries exceeded")):
        cause = "nothing answers there (is the server running?)"
    elif "name or service not known" in lowered or "nodename nor servname" in lowered:
        cause = "the host name does not resolve"
    elif any(s in lowered for s in ("403", "forbidden", "signature", "accessdenied", "unauthorized", "401")):
        cause = "the catalog refused our credentials"
    elif "timed out" in lowered or "timeout" in lowered:
        cause = "the catalog did not answer in time"
    else:
        cause = "the catalog reported an error"
    return LakeError(
        f"could not {action} Iceberg REST catalog at {config.uri} (warehouse {config.warehouse!r}): {cause}. {text}"
    )
