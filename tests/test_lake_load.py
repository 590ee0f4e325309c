"""Loading detected tables into Iceberg on the real SeaweedFS catalog: create, load, reload, query."""

from __future__ import annotations

import hashlib
import json

import pytest

from airflow_sbcrawl.lake import (
    OBSERVATIONS,
    TABLES,
    CatalogConfig,
    connect,
    ensure_tables,
    load_tables,
    query,
    sample,
    scan,
)
from airflow_sbcrawl.tables.model import DetectedTable, Observation, Provenance

SHA_POP = hashlib.sha256(b"population.xlsx").hexdigest()
SHA_GDP = hashlib.sha256(b"gdp.csv").hexdigest()


def population_table(scale: float = 1.0) -> DetectedTable:
    """Population by region and year: 3 regions x 2 years, the last row a derived total."""
    years = ("2022", "2023")
    regions = (("North", 120.0), ("South", 80.5), ("Total", 200.5))
    observations = []
    for r, (region, base) in enumerate(regions):
        for c, year in enumerate(years):
            value = (base + c) * scale
            observations.append(
                Observation(
                    row=3 + r,
                    col=1 + c,
                    row_labels=(region,),
                    column_path=("Population (thousands)", year),
                    raw=f"{value:g}",
                    value=value,
                    status="ok",
                    line_class="derived" if region == "Total" else "data",
                )
            )
    return DetectedTable(
        provenance=Provenance(
            source_url="https://stats.example/pop/population.xlsx",
            sha256=SHA_POP,
            sheet="Table 1",
            crawl_run="run-1",
            detector_version="det-0.1",
        ),
        index=0,
        first_row=1,
        last_row=5,
        first_col=0,
        last_col=2,
        title="Population by region",
        header=[["", "Population (thousands)", ""], ["Region", "2022", "2023"]],
        line_classes=["header", "header", "data", "data", "derived"],
        observations=observations,
        notes=["Source: census"],
        confidence=0.93,
    )


def gdp_table() -> DetectedTable:
    observations = [
        Observation(1, 1, ("Agriculture",), ("GDP",), "12.5", 12.5, "ok"),
        Observation(2, 1, ("Industry",), ("GDP",), "..", None, "missing"),
    ]
    return DetectedTable(
        provenance=Provenance(source_url="https://stats.example/gdp.csv", sha256=SHA_GDP, crawl_run="run-1"),
        index=0,
        first_row=0,
        last_row=2,
        first_col=0,
        last_col=1,
        title="GDP by sector",
        header=[["Sector", "GDP"]],
        line_classes=["header", "data", "data"],
        observations=observations,
        confidence=0.8,
    )


def _counts(config: CatalogConfig) -> tuple[int, int]:
    out = query(config, "SELECT (SELECT count(*) FROM tables) AS t, (SELECT count(*) FROM observations) AS o")
    row = out.to_pylist()[0]
    return row["t"], row["o"]


def _duplicate_cells(config: CatalogConfig) -> list[dict]:
    return query(
        config,
        "SELECT table_id, row, col, count(*) AS n FROM observations GROUP BY ALL HAVING count(*) > 1",
    ).to_pylist()


def test_ensure_tables_is_idempotent_and_partitions_by_site(lake_config: CatalogConfig) -> None:
    catalog = connect(lake_config)
    first = ensure_tables(catalog, lake_config.namespace)
    second = ensure_tables(catalog, lake_config.namespace)
    assert set(first) == set(second) == {TABLES, OBSERVATIONS}
    assert sorted(catalog.list_tables(lake_config.namespace)) == [
        (lake_config.namespace, OBSERVATIONS),
        (lake_config.namespace, TABLES),
    ]
    for table in second.values():
        (field,) = table.spec().fields
        assert (field.name, str(field.transform)) == ("site", "identity")
        assert table.current_snapshot() is None  # creating twice wrote nothing


def test_load_then_reload_replaces_and_never_duplicates(lake_config: CatalogConfig) -> None:
    first = load_tables(lake_config, [population_table(), gdp_table()], site="stats-example")
    assert (first.sources, first.tables, first.observations) == (2, 2, 8)
    assert (first.replaced_tables, first.replaced_observations) == (0, 0)
    assert _counts(lake_config) == (2, 8)

    # The same population file again, with corrected numbers: its rows are replaced, GDP is untouched.
    again = load_tables(lake_config, [population_table(scale=10)], site="stats-example")
    assert (again.sources, again.tables, again.observations) == (1, 1, 6)
    assert (again.replaced_tables, again.replaced_observations) == (1, 6)
    assert again.snapshot_ids[TABLES] != first.snapshot_ids[TABLES]
    assert _counts(lake_config) == (2, 8)
    assert _duplicate_cells(lake_config) == []

    values = query(
        lake_config,
        """SELECT o.value, o.raw_value, o.line_class, t.title
           FROM observations o JOIN tables t USING (table_id)
           WHERE list_contains(o.row_labels, $region) AND o.column_path[-1] = $year""",
        {"region": "South", "year": "2023"},
    ).to_pylist()
    assert values == [{"value": 815.0, "raw_value": "815", "line_class": "data", "title": "Population by region"}]
    gdp = scan(lake_config, OBSERVATIONS, row_filter=f"source_sha256 = '{SHA_GDP}'").to_pylist()
    assert sorted((o["raw_value"], o["value"], o["status"]) for o in gdp) == [
        ("..", None, "missing"),
        ("12.5", 12.5, "ok"),
    ]


def test_table_rows_carry_provenance_and_shape(lake_config: CatalogConfig) -> None:
    table = population_table()
    load_tables(lake_config, [table], site="stats-example", crawl_run="run-7")
    (row,) = scan(lake_config, TABLES).to_pylist()
    assert row["table_id"] == table.table_id
    assert row["source_url"] == "https://stats.example/pop/population.xlsx"
    assert row["source_sha256"] == SHA_POP
    assert (row["member"], row["sheet"], row["cell_range"], row["table_index"]) == ("", "Table 1", "A2:C6", 0)
    assert json.loads(row["header"]) == table.header
    assert (row["n_rows"], row["n_cols"], row["n_observations"]) == (5, 3, 6)
    assert row["confidence"] == pytest.approx(0.93)
    assert (row["detector_version"], row["crawl_run"], row["site"]) == ("det-0.1", "run-7", "stats-example")
    assert row["notes"] == ["Source: census"]
    assert row["loaded_at"] is not None


def test_same_source_on_another_site_is_kept_apart(lake_config: CatalogConfig) -> None:
    load_tables(lake_config, [gdp_table()], site="site-a")
    load_tables(lake_config, [gdp_table()], site="site-b")
    load_tables(lake_config, [gdp_table()], site="site-a")
    per_site = query(lake_config, "SELECT site, count(*) AS n FROM observations GROUP BY site ORDER BY site")
    assert per_site.to_pylist() == [{"site": "site-a", "n": 2}, {"site": "site-b", "n": 2}]


def test_a_table_repeated_in_one_batch_is_written_once(lake_config: CatalogConfig) -> None:
    result = load_tables(lake_config, [gdp_table(), gdp_table()], site="s")
    assert (result.tables, result.observations) == (1, 2)
    assert _counts(lake_config) == (1, 2)


def test_empty_batch_creates_tables_and_writes_nothing(lake_config: CatalogConfig) -> None:
    result = load_tables(lake_config, [], site="s")
    assert (result.sources, result.tables, result.observations) == (0, 0, 0)
    assert result.snapshot_ids == {TABLES: None, OBSERVATIONS: None}
    assert _counts(lake_config) == (0, 0)


def test_sample_returns_observations_with_their_table(lake_config: CatalogConfig) -> None:
    load_tables(lake_config, [population_table(), gdp_table()], site="stats-example")
    rows = sample(lake_config, 3, site="stats-example")
    assert len(rows) == 3
    assert {r["site"] for r in rows} == {"stats-example"}
    assert all(r["title"] in ("Population by region", "GDP by sector") for r in rows)
    assert sample(lake_config, 5, site="nowhere") == []


def test_load_requires_a_site(lake_config: CatalogConfig) -> None:
    with pytest.raises(ValueError, match="site"):
        load_tables(lake_config, [gdp_table()], site="")


def test_a_keyed_table_detected_from_a_file_loads_and_its_series_is_selected_by_labels(
    lake_config: CatalogConfig,
) -> None:
    """The lake's query of docs/tables.md on a table detected from a file laid out as Destatis publishes it
    (row numbers, years, Länder written once per block, age bands), loaded into the SeaweedFS catalog."""
    from airflow_sbcrawl.lake import SERIES_SQL, series
    from airflow_sbcrawl.tables import detect_file

    lines = ["Sterbefälle nach Kalenderwochen;;;;;;", "Lfd. Nr.;Jahr;Bundesland;Alter;KW 1;KW 2;KW 3"]
    n = 0
    for land in ("Bremen", "Hamburg"):
        for k, age in enumerate(("Insgesamt", "0-65", "65 u. mehr")):
            n += 1
            lines.append(f"{n};2022;{land if k == 0 else ''};{age};{100 + n};{200 + n};{300 + n}")
    lines += [";;;;;;", "- = nichts vorhanden;;;;;;"]
    (table,) = detect_file("\n".join(lines).encode(), name="sterbefaelle.csv").tables
    load_tables(lake_config, [table], site="destatis")
    rows = series(lake_config, ["Hamburg", "0-65"], site="destatis")
    assert [(r["column_path"], r["value"]) for r in rows] == [(["KW 1"], 105.0), (["KW 2"], 205.0), (["KW 3"], 305.0)]
    assert {tuple(r["row_labels"]) for r in rows} == {("5", "2022", "Hamburg", "0-65")}
    assert series(lake_config, ["Hamburg", "0-65"], site="elsewhere") == []
    # every key is unique in the lake: row labels + column path
    dup = query(lake_config, "SELECT count(*) AS n FROM observations GROUP BY table_id, row_labels, column_path "
                             "HAVING count(*) > 1").to_pylist()
    assert dup == []
    (loaded,) = scan(lake_config, TABLES).to_pylist()
    assert loaded["warnings"] == []
    assert "list_has_all(o.row_labels, $labels)" in SERIES_SQL
