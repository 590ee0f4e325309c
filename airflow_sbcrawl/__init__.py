"""airflow-sbcrawl: acquire the datasets a statistics website publishes, without crawling all of it."""

__version__ = "0.1.0"
