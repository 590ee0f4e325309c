"""Keyed observations on the layouts that still collided in round 5 of issue 20 (FUSTE and SAUS held out):
monthly series keyed by dates written half as text and half as serial day numbers, identifiers among the
measures, sparse rows of a World Bank export read as header lines, spelt-out markers, and the Statistical
Abstract's header lines spaced by blank lines that the role model reads as titles.
"""

from collections import Counter

import numpy as np

from airflow_sbcrawl.tables import Provenance, detect_file, detect_tables
from airflow_sbcrawl.tables.features import cell_kinds
from airflow_sbcrawl.tables.regions import _spaced_header
from airflow_sbcrawl.tables.values import parse_value

PROV = Provenance(source_url="http://stats.example/t", sha256="0" * 64)


def _keys(table):
    return Counter((o.row_labels, o.column_path) for o in table.observations if o.value is not None)


def _only(tables):
    (table,) = [t for t in tables if t.observations]
    return table


def test_monthly_series_are_keyed_by_their_dates_text_or_serial_numbers():
    """An EIA Monthly Energy Review sheet: the first months as text, the later ones as Excel serial days."""
    rows = [["Table 7.2a Electricity Net Generation", "", ""], ["", "", ""],
            ["Month", "Net Generation From Coal", "Net Generation From Petroleum"],
            ["", "(Million Kilowatthours)", "(Million Kilowatthours)"]]
    rows += [[f"1973-{m:02d}-01 00:00:00", f"{75190 + m * 13}.149", "Not Available"] for m in range(1, 13)]
    rows += [[str(26665 + 31 * k), f"{70000 + k * 17}.5", f"{31000 + k}.25"] for k in range(24)]
    table = _only(detect_tables(rows, PROV))
    coal = [o for o in table.observations if o.column_path[0] == "Net Generation From Coal"]
    assert len(coal) == 36 and {o.row_labels for o in coal} == {(r[0],) for r in rows[4:]}
    assert max(_keys(table).values()) == 1 and not any("duplicate keys" in w for w in table.warnings)
    assert not any(o.column_path == ("Month",) for o in table.observations)  # the dates are no values
    petroleum = [o for o in table.observations if o.col == 2 and o.row < 16]
    assert {o.status for o in petroleum} == {"missing"} and all(o.value is None for o in petroleum)


def test_not_available_and_withheld_are_markers():
    assert parse_value("Not Available", ".").status == "missing"
    assert parse_value("Withheld", ".").status == "confidential"
    kinds, _ = cell_kinds([["Not Available", "Not applicable", "Total"]], ".")
    assert kinds[0, 0] == kinds[0, 1] != kinds[0, 2]


def test_a_numbered_identifier_column_keys_the_rows_a_date_shares():
    """A hockey league's season schedule: several games a day, numbered out of order."""
    csv = "Date,Game Number,Visiting Team,Visiting Score,Home Team,Home Score\n"
    teams = ["Milwaukee", "Grand Rapids", "Manchester", "Providence", "Syracuse", "Rochester"]
    for day in range(12, 20):
        for k in range(3):
            game = 3 * (day - 12) + (2, 3, 1)[k]  # a day's games listed out of their numbers' order
            csv += f"2012-10-{day},{game},{teams[2 * k]},{(game * 7) % 6},{teams[2 * k + 1]},{(game * 5) % 7}\n"
    table = _only(detect_file(csv.encode(), name="schedule.csv").tables)
    assert max(_keys(table).values()) == 1
    assert {o.column_path for o in table.observations if o.value is not None} == {("Visiting Score",),
                                                                                 ("Home Score",)}
    first = next(o for o in table.observations if o.row == 1 and o.value is not None)
    assert first.row_labels[:2] == ("2012-10-12", "2")


def test_identifiers_among_the_measures_key_rows_that_share_their_label():
    """A supplementary table of a genome study: the chromosome, then its windows by start position."""
    csv = "Chromosome,Start position,End position,Average Fst wild vs. landraces,Average Fst elite vs. landraces\n"
    for chrom in ("Gm01", "Gm02", "Gm03"):
        for k in range(8):
            csv += f"{chrom},{k * 100000 + 1},{(k + 1) * 100000},0.{(k * 37) % 90 + 10}3,0.{(k * 53) % 90 + 10}7\n"
    table = _only(detect_file(csv.encode(), name="fst.csv").tables)
    assert max(_keys(table).values()) == 1 and not table.warnings
    obs = next(o for o in table.observations if o.row_labels[:2] == ("Gm02", "100001") and o.col == 3)
    assert obs.column_path == ("Average Fst wild vs. landraces",) and obs.value == 0.473
    # the measures stay values: a table of numbers keyed by two of them would hold none
    assert {o.col for o in table.observations if o.value is not None} >= {3, 4}


def test_sparse_rows_of_a_world_bank_export_are_body_lines_not_header():
    """World Development Indicators, Data sheet: many countries have no figure for an indicator."""
    years = [str(y) for y in range(1990, 2000)]
    rows = [["Data Source", "World Development Indicators", *[""] * 12], [""] * 14,
            ["Country Name", "Country Code", "Indicator Name", "Indicator Code", *years]]
    names = ["Aruba", "Andorra", "Afghanistan", "Angola", "Albania", "Arab World", "Argentina", "Armenia",
             "Australia", "Austria", "Azerbaijan", "Burundi"]
    for k, name in enumerate(names):
        figures = [f"{8 + (k * y) % 7}.{y}" for y in range(10)] if k % 3 == 2 else [""] * 10
        rows.append([name, name[:3].upper(), "Road sector energy consumption (% of total)", "IS.ROD.ENGY.ZS",
                     *figures])
    table = _only(detect_tables(rows, PROV))
    assert len(table.header) == 1 and table.header[0][4] == "1990"
    assert max(_keys(table).values()) == 1
    assert {o.column_path for o in table.observations if o.value is not None} == {(y,) for y in years}


def test_header_lines_spaced_by_blank_lines_above_the_learned_header_are_header():
    """The Statistical Abstract's layout (table 1360): stub and spanning names, a blank line, the years."""
    text = [["Table 1360. Stock markets", "", "", ""], ["", "", "", ""], ["See notes", "", "", ""],
            ["", "", "", ""], ["Country", "FIPS Code", "Market capitalization (bil. dol.)", ""],
            ["", "", "", ""], ["", "", "1990", "1995"], ["United States", "US", "3059.4", "6857.6"],
            ["Argentina", "AR", "3.3", "37.8"], ["Source: Standard & Poor's", "", "", ""]]
    kinds, _ = cell_kinds(text, ".")
    figures = ((kinds == 1) | (kinds == 2)).any(axis=1) & ~np.array([i == 6 for i in range(len(text))])
    classes = ["metadata", "empty", "metadata", "empty", "metadata", "empty", "header", "data", "data", "notes"]
    first = _spaced_header(classes, text, kinds, figures, 0, 6, 8)
    assert first == 4 and classes[4] == "header"
    assert classes[0] == classes[2] == "metadata"  # the title and "See notes" stay titles
    # a title with its number at the right, a line of links, a title over merged cells are no header lines
    for line in (["Weinverbrauch", "", "", "T 7.6.3"], ["Related Information:", "Summary", "Notes", ""],
                 ["Crop production", "Crop production", "Crop production", ""]):
        classes = ["metadata", "empty", "metadata", "empty", "metadata", "empty", "header", "data", "data", "notes"]
        text[4] = line
        kinds, _ = cell_kinds(text, ".")
        assert _spaced_header(classes, text, kinds, figures, 0, 6, 8) == 6 and classes[4] == "metadata"


def test_a_undata_export_with_six_text_columns_is_one_header_line_over_its_values():
    """data.un.org's long form: a figure that reads as a year (1993 deaths) does not make its line a header
    line, the "Value Footnotes" column keys nothing, the "Unit" column gives the unit."""
    from sbcrawl_dev.bench.tables_hostile import un_demographic_long

    data = un_demographic_long(2)
    table = _only(detect_file(data, name="UNdata_Export_20240101.csv").tables)
    n_lines = 2 * 2 * 9 * 3 * 16
    assert len(table.header) == 1 and table.header[0][6] == "Value"
    values = [o for o in table.observations if o.value is not None]
    assert len(values) == n_lines and {o.col for o in values} == {6}
    assert {o.column_path for o in values} == {("Value",)} and {o.unit for o in values} == {"Number"}
    assert max(_keys(table).values()) == 1
    first = values[0]
    assert first.row_labels == ("Country 000, Republic of", "Population by age and sex", "Both Sexes", "Total",
                                "2005")
    # a line of the body whose value reads as a year, placed among the others, stays a body line
    lines = data.decode().splitlines()
    lines.insert(40, '"Country 001","Deaths by age and sex","Female","65 +","Number","2021","1993","5"')
    table = _only(detect_file("\n".join(lines).encode(), name="UNdata_Export.csv").tables)
    assert len(table.header) == 1 and any(o.value == 1993.0 and o.row == 40 for o in table.observations)
