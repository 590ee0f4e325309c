"""Keyed observations (issue 20): identifier columns label rows, labels written once are carried, header spans
carried across, long-format tables read by their value column, every key unique or the table says why.

The sheets are cut from the layouts of real files (INSEE, Destatis, FBI, ONS, UN, CDC), a few lines each.
"""

import io
from collections import Counter

import pytest

from airflow_sbcrawl.tables import Provenance, detect_file, detect_tables

PROV = Provenance(source_url="http://stats.example/t", sha256="0" * 64)


def _keys(table):
    return Counter((o.row_labels, o.column_path) for o in table.observations)


def _by_cell(table):
    return {(o.row, o.col): o for o in table.observations}


def test_commune_codes_are_labels_kept_as_text_not_values():
    csv = ("CODGEO;LIBGEO;P20_POP;P14_POP\n01001;L'Abergement-Clémenciat;779;767\n01002;L'Abergement-de-Varey;256;241\n"
           "01004;Ambérieu-en-Bugey;14134;14204\n01005;Ambérieux-en-Dombes;1751;1662\n").encode()
    (table,) = detect_file(csv, name="base-cc-communes.csv").tables
    assert {o.col for o in table.observations} == {2, 3}
    assert all(o.value != 1001.0 for o in table.observations)
    first = _by_cell(table)[(1, 2)]
    assert first.row_labels == ("01001", "L'Abergement-Clémenciat") and first.column_path == ("P20_POP",)
    assert first.value == 779.0


def test_row_numbers_years_and_age_bands_label_rows_and_every_key_is_unique():
    """Destatis' special evaluation of deaths: Lfd. Nr. | Jahr | Bundesland | Alter | weeks 1..n."""
    header = [["Lfd.", "Jahr", "Bundesland", "Alter von ... bis", "Kalenderwoche", "", ""],
              ["Nr.", "", "", "unter … Jahren", "1", "2", "3"]]
    body, n = [], 0
    for land in ("Schleswig-Holstein", "Hamburg"):
        for age, base in (("Insgesamt", 700), ("0-65", 90), ("65-75", 110), ("75-85", 230), ("85 u. mehr", 300)):
            n += 1
            body.append([str(n), "2022", land, age, str(base + n), str(base + 2 * n), str(base + 3 * n)])
    (table,) = detect_tables(header + body, PROV)
    assert {o.col for o in table.observations} == {4, 5, 6}
    assert max(_keys(table).values()) == 1 and not table.warnings
    obs = _by_cell(table)[(3, 5)]  # Schleswig-Holstein, 0-65, week 2
    assert obs.row_labels == ("2", "2022", "Schleswig-Holstein", "0-65") and obs.column_path == ("Kalenderwoche", "2")


def test_a_label_written_on_its_blocks_first_row_is_carried_down():
    """FBI Crime in the United States, table 2: the area on its block's first line only."""
    rows = [["Area", "Year", "Population", "Violent crime"],
            ["Northeast", "2015", "56184737", "180474"],
            ["", "2016", "56209510", "178244"],
            ["", "Percent change", "", "-1.2"],
            ["Midwest", "2015", "67907403", "260951"],
            ["", "2016", "67941429", "271084"],
            ["", "Percent change", "", "3.9"]]
    (table,) = detect_tables(rows, PROV)
    obs = _by_cell(table)
    assert obs[(2, 3)].row_labels == ("Northeast", "2016")
    assert obs[(6, 3)].row_labels == ("Midwest", "Percent change")
    assert {o.col for o in table.observations} == {2, 3}
    assert max(_keys(table).values()) == 1


def test_the_year_on_january_rows_only_is_carried_down():
    rows = [["Jahr", "Monat", "männlich", "weiblich"]]
    for year in ("2019", "2020"):
        for k, month in enumerate(("Januar", "Februar", "März")):
            rows.append([year if k == 0 else "", month, str(49000 + k * 10), str(46000 + k * 10)])
    (table,) = detect_tables(rows, PROV)
    feb_2020 = _by_cell(table)[(5, 3)]
    assert feb_2020.row_labels == ("2020", "Februar") and feb_2020.column_path == ("weiblich",)
    assert max(_keys(table).values()) == 1


def test_blocks_under_series_codes_are_sections():
    """ONS labour market table A02: each block opens with its series identifiers, then the same periods."""
    rows = [["", "All aged 16 & over", "Total economically active", "Unemployed"]]
    for block, codes in (("All Persons", ["MGSL", "MGSF", "MGSC"]), ("Male", ["MGSM", "MGSG", "MGSD"])):
        rows.append([block, *codes])
        rows += [[period, "40513000", "25593000", "980000"] for period in ("Jan-Mar 1971", "Feb-Apr 1971")]
    (table,) = detect_tables(rows, PROV)
    assert max(_keys(table).values()) == 1 and not table.warnings
    assert _by_cell(table)[(6, 3)].row_labels == ("Male", "Feb-Apr 1971")


def test_a_merged_header_spans_its_columns_and_no_further():
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["Region", "2019", "", "", "", "", "", "Change"])
    ws.append(["", "Q1", "Q2", "Q3", "Q4", "H1", "H2", "(%)"])
    ws.merge_cells("B1:G1")
    ws.merge_cells("A1:A2")
    for name, base in (("North", 100), ("South", 200), ("East", 300)):
        ws.append([name, *(base + k for k in range(6)), 1.5])
    buf = io.BytesIO()
    wb.save(buf)
    (table,) = detect_file(buf.getvalue(), name="merged.xlsx").tables
    paths = {o.col: o.column_path for o in table.observations}
    assert paths[1] == ("2019", "Q1") and paths[6] == ("2019", "H2")
    assert paths[7] == ("Change", "(%)")
    assert max(_keys(table).values()) == 1


def test_repeated_column_names_are_told_apart_by_their_group():
    """CDC vaccination coverage: "2009-10 | Survey type | Target | 2010-11 | Survey type | Target"."""
    rows = [["Names", "2009-10", "SURVEY TYPE", "TARGET", "2010-11", "SURVEY TYPE", "TARGET"],
            ["Alabama", "94.0", "Census", "95.0", "93.0", "Census", "95.0"],
            ["Alaska", "NA", "Voluntary", "95.0", "91.2", "Census", "95.0"],
            ["Arizona", "95.0", "Census", "95.0", "94.1", "Census", "95.0"]]
    (table,) = detect_tables(rows, PROV)
    obs = _by_cell(table)
    assert obs[(1, 6)].column_path == ("2010-11", "TARGET") and obs[(1, 3)].column_path == ("2009-10", "TARGET")
    assert max(_keys(table).values()) == 1


def test_a_long_format_table_is_read_by_its_value_column_with_few_header_lines():
    from sbcrawl_dev.bench.tables_hostile import un_long_format

    (table,) = detect_file(un_long_format(60), name="SYB65_1_Population.csv").tables
    # one per line (the last may read as a note): codes, years, notes and sources are no values
    assert 60 * 4 * 4 - 1 <= len(table.observations) <= 60 * 4 * 4
    assert {o.col for o in table.observations} == {4}
    assert len(table.header) <= 2 and max(len(o.column_path) for o in table.observations) == 1
    assert max(_keys(table).values()) == 1 and not table.warnings
    obs = next(o for o in table.observations if o.row_labels[:3] == ("4", "Area 0, part of region", "2015"))
    assert obs.row_labels[3] == "Population mid-year estimates (millions)" and obs.value == 1000.0
    assert obs.unit == "millions"
    assert not any("United Nations" in label for o in table.observations for label in o.row_labels)


def test_statcan_long_format_takes_its_unit_from_the_unit_columns():
    header = '"REF_DATE","GEO","DGUID","Production","UOM","UOM_ID","SCALAR_FACTOR","SCALAR_ID","VECTOR","VALUE",' \
             '"STATUS","SYMBOL","TERMINATED","DECIMALS"'
    rows = [header]
    for year in ("1908", "1909"):
        for geo, dguid, v in (("Canada", "2016A000011124", "v47162"), ("Quebec", "2016A000224", "v47166")):
            rows.append(f'"{year}","{geo}","{dguid}","Production, potatoes","Hundredweight","156","thousands","3",'
                        f'"{v}","44273","","","","0"')
    (table,) = detect_file("\n".join(rows).encode(), name="32100358.csv").tables
    assert [o.col for o in table.observations] == [9] * 4
    first = table.observations[0]
    assert first.row_labels == ("1908", "Canada", "2016A000011124", "Production, potatoes", "v47162")
    assert first.unit == "thousands Hundredweight"


def test_keys_that_collide_are_flagged_with_why():
    rows = [["Region", "2020", "2021"], ["North", "1", "2"], ["North", "3", "4"], ["South", "5", "6"]]
    (table,) = detect_tables(rows, PROV)
    (warning,) = table.warnings
    assert "duplicate keys: 4 of 6 observations share 2 keys" in warning and "'North'" in warning


def test_a_marker_the_legend_defines_as_zero_is_zero():
    rows = [["Land", "2020", "2021"], ["Bremen", "12", "-"], ["Hamburg", "-", "7"], ["Berlin", "4", "."],
            ["", "", ""], ["Zeichenerklärung: - = nichts vorhanden; . = Zahlenwert unbekannt", "", ""]]
    (table,) = detect_tables(rows, PROV)
    obs = _by_cell(table)
    assert obs[(1, 2)].status == "nil" and obs[(1, 2)].value == 0.0 and obs[(1, 2)].raw == "-"
    assert obs[(3, 2)].status == "missing" and obs[(3, 2)].value is None
    (plain,) = detect_tables(rows[:4], PROV)  # without the legend a dash is a missing value
    assert _by_cell(plain)[(1, 2)].status == "missing"


@pytest.mark.parametrize("unit_line", ["Population (millions)", "Population, in thousands"])
def test_the_unit_named_in_a_header_goes_with_each_value(unit_line):
    rows = [["Country", unit_line], ["Belgium", "11.6"], ["Bulgaria", "6.8"], ["Czechia", "10.5"]]
    (table,) = detect_tables(rows, PROV)
    assert {o.unit for o in table.observations} == {"millions" if "millions" in unit_line else "thousands"}
