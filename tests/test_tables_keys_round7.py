"""Keyed observations on the Statistical Abstract layouts that still collided in round 6 of issue 20 (SAUS
held out): a body line taken for a header because its "Unit" column holds a number, sections headed by
their total line whose rows repeat names under a unit column, and the year of a second reading written
one line under the header.
"""

from airflow_sbcrawl.tables.body import Columns, _row_labels, body_like, header_paths, marked_paths
from airflow_sbcrawl.tables.detect import _header_block
from airflow_sbcrawl.tables.features import cell_kinds

YEARS = ["1970", "1971", "1972", "1973"]


def _gas_utilities():
    """Table 920's layout: Item | Unit | years, each section's total line first, then its parts."""
    return [["Item", "Unit", *YEARS],
            ["End users", "1000", "41482", "42242", "42955", "43711"],
            ["Residential", "1000", "38097", "38789", "39428", "40116"],
            ["Commercial", "1000", "3131", "3199", "3264", "3331"],
            ["Sales", "Trillions British thermal units", "16044", "16686", "17082", "16480"],
            ["Residential", "Trillions British thermal units", "4923", "5040", "5142", "4994"],
            ["Percent of total", "Percent", "30.68", "30.2", "30.1", "30.3"],
            ["Revenues", "Million dollars", "10283", "11357", "12465", "12987"],
            ["Prices", "Dollars", "0.64", "0.68", "0.73", "0.8"],
            ["Mains mileage", "Miles", "913", "931", "948", "963"]]


def test_a_number_in_a_column_of_units_that_the_body_holds_there_does_not_make_a_header():
    text = _gas_utilities()
    kinds, values = cell_kinds(text, ".")
    body = list(range(2, len(text)))
    assert body_like([1], body, kinds, values, 0, 5) == {1}  # "End users | 1000 | 41482 ..." is a row
    # a number the column of words never holds is no unit: the line stays a header
    text[1][1] = "2500"
    kinds, values = cell_kinds(text, ".")
    assert body_like([1], body, kinds, values, 0, 5) == set()
    # nor does the rule take a header of years over a column of words
    assert body_like([0], body, kinds, values, 0, 5) == set()


def test_rows_repeated_under_section_totals_are_qualified_by_the_total_not_by_its_unit():
    stubs = [["End users", "Percent"], ["Residential", "Percent"], ["Commercial", "Percent"],
             ["Sales", "Percent"], ["Residential", "Percent"], ["Commercial", "Percent"]]
    columns = Columns([0, 1], [2, 3], [], False)
    labels = _row_labels(stubs, [()] * len(stubs), columns, qualify=True)
    assert labels[1] == ("End users", "Residential", "Percent")
    assert labels[4] == ("Sales", "Residential", "Percent")
    assert len(set(labels)) == len(labels)
    # one label column: the parent's own label, as before
    single = _row_labels([["Sales"], ["Residential"], ["Revenues"], ["Residential"]], [()] * 4,
                         Columns([0], [1], [], False), qualify=True)
    assert single == [("Sales",), ("Sales", "Residential"), ("Revenues",), ("Revenues", "Residential")]


def _producer_prices(year_line):
    """Table 721's layout: "2006 \\1" and the blank beside it, whose year is written one line lower."""
    return [["Stage of processing", "2005", "2006 \\1", "", "2007"], year_line,
            ["Finished goods", "155.7", "160.3", "160.4", "166.6"],
            ["Consumer foods", "155.7", "156.7", "156.7", "167.0"],
            ["Bakery products", "201.1", "207.8", "207.7", "216.6"]]


def _block(text, classes):
    kinds, values = cell_kinds(text, ".")
    return _header_block(text, classes, list(range(len(text))), 0, 4, kinds, values, text)


def test_a_line_of_years_alone_right_under_the_header_is_its_last_line():
    text = _producer_prices(["", "", "", "2006", ""])
    classes = ["header", "data", "data", "data", "data"]
    local, path_idx, _, _ = _block(text, classes)
    assert local[1] == "header" and path_idx == [0, 1]
    header = [text[i] for i in path_idx]
    paths = marked_paths(header, [1, 2, 3, 4], None, header_paths(header, [1, 2, 3, 4]))
    assert len(set(paths.values())) == 4  # the two readings of 2006 are two columns
    assert paths[2] == ("2006 \\1",) and paths[1] == ("2005",)  # the mark kept only where it tells apart
    assert classes[1] == "data"  # the classifier's classes are not changed


def test_a_row_of_years_with_a_label_or_after_a_blank_line_stays_in_the_body():
    for line in (["Year", "", "", "2006", ""], ["", "1999", "2001", "2006", ""]):  # a label; most columns
        local, path_idx, _, _ = _block(_producer_prices(line), ["header", "data", "data", "data", "data"])
        assert local[1] == "data" and path_idx == [0]
    text = _producer_prices(["", "", "", "2006", ""])
    text.insert(1, [""] * 5)  # a blank line between the header and the years
    local, path_idx, _, _ = _block(text, ["header", "empty", "data", "data", "data", "data"])
    assert local[2] == "data" and path_idx == [0]
