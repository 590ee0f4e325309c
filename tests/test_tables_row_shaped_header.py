"""A table cut in two after a blank line, its second part's first row taken for a header (SAUS 10s1350,
seen with a region model refitted without SAUS: "Argentina | AR | 0.0 | 1.0 ..." under the United States,
every observation of the second part without a column path). Issue 20."""

from airflow_sbcrawl.tables.features import cell_kinds
from airflow_sbcrawl.tables.regions import _headless_continued


def _reactors(second_first_row: list[str]) -> list[list[str]]:
    return [["Country", "FIPS Code", "Reactors (number)", "", ""],
            ["", "", "1970", "1980", "1985"],
            ["Total", "", "64.0", "208.0", "297.0"],
            ["United States", "US", "15.0", "74.0", "89.0"],
            ["", "", "", "", ""],
            second_first_row,
            ["Armenia", "AM", "(NA)", "(NA)", "(NA)"],
            ["Belgium", "BE", "1.0", "3.0", "7.0"],
            ["Canada", "CA", "1.0", "9.0", "15.0"]]


def _detected():
    return ["header", "header", "derived", "data", "empty", "header", "data", "data", "data"]


def test_a_first_row_taken_for_a_header_after_a_blank_line_continues_the_table_above():
    text = _reactors(["Argentina", "AR", "0.0", "1.0", "2.0"])
    kinds, _ = cell_kinds(text, ".")
    classes = _detected()
    tables = _headless_continued([(0, 0, 3, 3), (5, 5, 8, 8)], classes, text, kinds)
    assert tables == [(0, 0, 8, 8)]
    assert classes[5] == "data"


def test_a_header_of_years_after_a_blank_line_still_starts_a_table():
    text = _reactors(["Country", "", "1990", "2000", "2010"])
    kinds, _ = cell_kinds(text, ".")
    classes = _detected()
    tables = _headless_continued([(0, 0, 3, 3), (5, 5, 8, 8)], classes, text, kinds)
    assert tables == [(0, 0, 3, 3), (5, 5, 8, 8)]
    assert classes[5] == "header"


def test_a_unit_line_read_as_a_row_above_the_header_of_years_leaves_the_years_their_header():
    """SAUS 10s0801 ("ACREAGE" over "STATE | (1,000)" over the years, the unit repeated over each block of
    columns): the unit line read as a row made the years a row too, and no column had a name."""
    from airflow_sbcrawl.tables.detect import _header_block

    text = [["", "", "ACREAGE", "", "", "ACREAGE"],
            ["STATE", "", "(1,000)", "", "", "(1,000)"],
            ["", "", "", "", "", ""],
            ["", "1988", "1989", "1990", "1991", "1992"],
            ["", "", "", "", "", ""],
            ["United States", "994423", "990723", "986850", "981736", "978503"],
            ["Alabama", "10600", "10600", "10100", "9900", "9800"],
            ["Alaska", "1030", "1010", "990", "970", "950"],
            ["Arizona", "36500", "36000", "36200", "35800", "35600"]]
    kinds, values = cell_kinds(text, ".")
    classes = ["header", "data", "empty", "header", "empty", "data", "data", "data", "data"]
    local, paths, _attributes, _warnings = _header_block(text, classes, list(range(9)), 0, 5, kinds, values, text)
    assert local[1] == "header" and local[3] == "header"
    assert 3 in paths
    assert all(local[i] == "data" for i in range(5, 9))
