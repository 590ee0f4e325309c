"""Development tools of a source checkout, kept out of the runtime wheel (``airflow_sbcrawl``).

* ``sim/``: synthetic statistics websites served over real HTTP on 127.0.0.1.
* ``bench/``: every benchmark (crawl policies, cost, the evaluation harness, recrawls, tables, throughput...).
* ``infra/``: real local services for tests and demos: SeaweedFS (S3 + Iceberg REST catalog), and a
  CeleryExecutor deployment on one machine (``multiworker``).
* ``demo.py``: the README's main job on embedded defaults.

Run as ``python -m sbcrawl_dev <command>`` (``--help`` lists the commands); ``scripts/setup.sh``'s editable
install puts the repository on the path, so the package imports from a checkout.
"""
