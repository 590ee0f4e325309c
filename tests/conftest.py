"""Shared pytest set-up: fixtures live in tests/plugins/, one module per piece of real infrastructure."""

pytest_plugins = [
    "tests.plugins.sim",
    "tests.plugins.seaweed",
    "tests.plugins.airflow",
    "tests.plugins.harness",
    "tests.plugins.checkpoints",
]
