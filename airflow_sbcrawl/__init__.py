"""airflow-sbcrawl: acquire the datasets a statistics website publishes, without crawling all of it."""

import json

__version__ = "0.1.0"

#: The Iceberg catalog connection form (type sbcrawl_iceberg): what each field means for this type.
_LAKE_FIELD_BEHAVIOUR = {
    "hidden-fields": ["schema", "port"],
    "relabeling": {"host": "Catalog URI (if not in extra)", "login": "Access key ID",
                   "password": "Secret access key"},
    "placeholders": {
        "host": "https://s3tables.eu-west-1.amazonaws.com/iceberg",
        "login": "optional: else the instance role or AWS_* variables",
        "password": "optional",
        "extra": json.dumps({
            "uri": "https://s3tables.eu-west-1.amazonaws.com/iceberg",
            "warehouse": "arn:aws:s3tables:eu-west-1:123456789012:bucket/stats-lake",
            "rest.sigv4-enabled": "true", "rest.signing-name": "s3tables", "rest.signing-region": "eu-west-1",
            "s3.region": "eu-west-1", "namespace": "sbcrawl"}, indent=2),
    },
}


def _option(description: str, default: str | None, example: str | None = None, type_: str = "string") -> dict:
    return {"description": description, "version_added": "0.1.0", "type": type_, "default": default,
            "example": example}


def get_provider_info() -> dict:
    """Provider metadata read by Airflow through the ``apache_airflow_provider`` entry point."""
    return {
        "package-name": "airflow-sbcrawl",
        "name": "SB Crawl",
        "description": "Budgeted crawls of statistics websites for datasets (SB-CLASSIFIER), to S3 and Iceberg.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "SB Crawl",
                "external-doc-url": "https://pypi.org/project/airflow-sbcrawl/",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": "SB Crawl",
                "python-modules": [
                    "airflow_sbcrawl.operators.crawl",
                    "airflow_sbcrawl.operators.tables",
                    "airflow_sbcrawl.operators.lake",
                ],
            }
        ],
        "hooks": [
            {
                # SBCrawlHook is the amazon provider's S3Hook (its "aws" connections), so it registers no
                # connection type of its own.
                "integration-name": "SB Crawl",
                "python-modules": ["airflow_sbcrawl.hooks.crawl", "airflow_sbcrawl.hooks.lake"],
            }
        ],
        "connection-types": [
            {
                "hook-class-name": "airflow_sbcrawl.hooks.lake.IcebergCatalogHook",
                "hook-name": "Iceberg REST catalog (SB Crawl lake)",
                "connection-type": "sbcrawl_iceberg",
                "ui-field-behaviour": _LAKE_FIELD_BEHAVIOUR,
            }
        ],
        "extra-links": [
            "airflow_sbcrawl.operators.links.CrawlReportLink",
            "airflow_sbcrawl.operators.links.CrawlManifestLink",
        ],
        "config": {
            "sbcrawl": {
                "description": "Settings of the airflow-sbcrawl example DAGs, read when a DAG file is parsed. "
                               "Each can be overridden per process by SBCRAWL_<OPTION> (e.g. SBCRAWL_BUCKET).",
                "options": {
                    "bucket": _option("S3 bucket the crawls write targets, manifests and checkpoints to.",
                                      "sbcrawl"),
                    "prefix": _option("Key prefix inside the bucket (empty: the bucket's root).", "crawls"),
                    "aws_conn_id": _option("The aws connection S3 is reached through.", "aws_default"),
                    "providers_file": _option("The statistics providers' list (one DAG per entry). Empty: "
                                              "providers.yaml next to the DAG files.", None,
                                              "/opt/airflow/config/providers.yaml"),
                    "crawl_options": _option("JSON object of crawl settings (CrawlConfig field names) applied "
                                             "to every crawl.", None, '{"delay": 2.0}'),
                    "retries": _option("Retries of each task; a crawl's retry resumes from its last "
                                       "checkpoint.", "2", type_="integer"),
                    "retry_delay_s": _option("Seconds before a retry.", "300", type_="float"),
                    "lake_conn_id": _option("The sbcrawl_iceberg connection of the lake catalog.", "sbcrawl_lake"),
                    "lake_namespace": _option("Iceberg namespace of the lake's tables. Empty: the connection's "
                                              "namespace extra, else sbcrawl.", None, "statistics"),
                    "object_url_template": _option(
                        "Browser URL of an S3 object or folder for the crawl report and manifest links; "
                        "{bucket} and {key} are filled in. Empty: the S3 connection's endpoint_url when it "
                        "has one (a local S3), else the AWS S3 console.",
                        None,
                        "http://localhost:8888/buckets/{bucket}/{key}"),
                },
            }
        },
    }
