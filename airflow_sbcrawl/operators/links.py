"""Extra links of SBCrawlOperator in the Airflow UI: the run's crawl report and its manifest folder.

Both are S3 objects; a browser reaches them through whatever console or UI fronts the store, so the URL
comes from the ``[sbcrawl] object_url_template`` option (``{bucket}`` and ``{key}`` filled in), e.g. the
SeaweedFS filer UI in ``docker/docker-compose.yaml``. Without it, a crawl whose S3 connection names an
``endpoint_url`` (a local S3: SeaweedFS, MinIO) links to the object on that endpoint (a folder: its S3
listing), and one on AWS to the AWS S3 console. The link is computed from the crawl's return value when the
task finishes (Airflow 3 stores it as an XCom); a failed try has none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow.providers.common.compat.sdk import BaseOperatorLink, XCom

if TYPE_CHECKING:
    from airflow.models.taskinstancekey import TaskInstanceKey
    from airflow.providers.common.compat.sdk import BaseOperator

DEFAULT_OBJECT_URL_TEMPLATE = "https://s3.console.aws.amazon.com/s3/buckets/{bucket}?prefix={key}"


def object_url(bucket: str, key: str, endpoint: str = "") -> str:
    """The browser URL of ``s3://bucket/key`` (a folder when ``key`` ends with "/") per
    ``[sbcrawl] object_url_template``; unset, on the S3 ``endpoint`` when there is one (path-style), else in
    the AWS S3 console."""
    from airflow_sbcrawl.settings import SECTION, airflow_option

    template = airflow_option("object_url_template")
    if template is None and endpoint:
        base = f"{endpoint.rstrip('/')}/{quote(bucket, safe='')}"
        return f"{base}?prefix={quote(key, safe='/')}" if key.endswith("/") else f"{base}/{quote(key, safe='/')}"
    template = template or DEFAULT_OBJECT_URL_TEMPLATE
    try:
        return template.format(bucket=quote(bucket, safe=""), key=quote(key, safe="/"))
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"[{SECTION}] object_url_template {template!r}: use only {{bucket}} and {{key}}") from exc


class _CrawlResultLink(BaseOperatorLink):
    """A link to an S3 key named in the crawl's return value (subclasses say which)."""

    def _key(self, result: dict[str, Any]) -> str:
        raise NotImplementedError

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        """The browser URL of the key, or "" when the try returned nothing (Airflow then shows no link)."""
        result = XCom.get_value(ti_key=ti_key, key="return_value")
        if not isinstance(result, dict) or not result.get("bucket"):
            return ""  # the try failed before it returned: nothing to show
        key = self._key(result)
        return object_url(result["bucket"], key, str(result.get("s3_endpoint") or "")) if key else ""


class CrawlReportLink(_CrawlResultLink):
    """The explainable crawl report (``report.md`` and its plots) of the run."""

    name = "Crawl report"

    def _key(self, result: dict[str, Any]) -> str:
        return str(result.get("report_key") or "")


class CrawlManifestLink(_CrawlResultLink):
    """The run's folder of manifest files (one JSON line per target stored)."""

    name = "Manifest"

    def _key(self, result: dict[str, Any]) -> str:
        keys = result.get("manifest_keys") or []
        return keys[0].rsplit("/", 1)[0] + "/" if keys else ""
