"""airflow-sbcrawl: acquire the datasets a statistics website publishes, without crawling all of it."""

__version__ = "0.1.0"


def get_provider_info() -> dict:
    """Provider metadata read by Airflow through the ``apache_airflow_provider`` entry point."""
    return {
        "package-name": "airflow-sbcrawl",
        "name": "SB Crawl",
        "description": "Budgeted crawls of statistics websites for datasets (SB-CLASSIFIER), to S3 and Iceberg.",
        "versions": [__version__],
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
                # Not a new connection type: the S3 sink and state store use the amazon provider's
                # S3Hook and its "aws" connections.
                "integration-name": "SB Crawl",
                # The lake catalog is any (e.g. "generic") connection whose extra holds the pyiceberg
                # properties: see airflow_sbcrawl.hooks.lake.
                "python-modules": ["airflow_sbcrawl.hooks.s3", "airflow_sbcrawl.hooks.tables",
                                   "airflow_sbcrawl.hooks.lake"],
            }
        ],
        "integrations": [
            {
                "integration-name": "SB Crawl",
                "external-doc-url": "https://pypi.org/project/airflow-sbcrawl/",
                "tags": ["software"],
            }
        ],
    }
