"""Keyed observations on the Statistical Abstract layouts that still collided in round 5 of issue 20 (SAUS
held out): runs of the same years under spanning names spaced by blank lines and stub labels, a year
column whose section label carries a footnote number, and a body continued after blank lines (under a
section's label) that the start model begins as a table without a header.
"""

from airflow_sbcrawl.tables.body import _identifies
from airflow_sbcrawl.tables.features import cell_kinds
from airflow_sbcrawl.tables.regions import _distinguishing_header, _headless_continued

YEARS = ["2001", "2002", "2003"]


def _hires_and_separations(span_line):
    """Table 622's layout: a title, "See notes", the spans, the stub's name, then the years twice."""
    blank = [""] * 7
    text = [["Table 622. Hires and separations", *blank[1:]], blank, ["See notes", *blank[1:]], blank,
            span_line, blank, ["Industry", *blank[1:]], ["", *YEARS, *YEARS], blank,
            ["Total", "63768", "59800", "57788", "65611", "60410", "57849"],
            ["Mining", "281", "237", "260", "279", "259", "270"]]
    classes = ["metadata", "empty", "metadata", "empty", "metadata", "empty", "metadata", "header", "empty",
               "data", "data"]
    kinds, _ = cell_kinds(text, ".")
    return text, classes, kinds


def test_spanning_names_that_tell_runs_of_the_same_years_apart_are_header_lines():
    text, classes, kinds = _hires_and_separations(["", "Annual hires", "", "", "Annual separations", "", ""])
    first = _distinguishing_header(classes, text, kinds, 0, 7, 10)
    assert first == 4 and classes[4] == classes[6] == "header"  # the spans and the stub's name between
    assert classes[0] == classes[2] == "metadata"  # the numbered title and "See notes" stay titles
    # the role model may read the spans as a group line of a table without a body (table 7's "2000 \\3")
    text, classes, kinds = _hires_and_separations(["", "Annual hires", "", "", "Annual separations", "", ""])
    classes[4] = "group"
    assert _distinguishing_header(classes, text, kinds, 0, 7, 10) == 4 and classes[4] == "header"


def test_a_title_over_merged_cells_or_a_line_that_tells_nothing_apart_stays_a_title():
    for line in (["", "Hires", "Hires", "Hires", "Hires", "Hires", "Hires"],  # merged: its text in each
                 ["", "Annual hires and separations", "", "", "", "", ""]):  # one span over both runs
        text, classes, kinds = _hires_and_separations(line)
        assert _distinguishing_header(classes, text, kinds, 0, 7, 10) == 7
        assert classes[4] == classes[6] == "metadata"


def test_a_body_continued_under_a_section_label_after_blank_lines_is_the_same_table():
    """Table 695: persons by year, then "CHANGE FROM PREVIOUS YEAR" over the same columns of years."""
    blank = ["", "", ""]
    text = [["Year", "All races", "White"], ["1959", "176557", "156956"], ["1960", "179503", "158863"], blank,
            ["CHANGE FROM PREVIOUS YEAR", "", ""], blank, ["1960", "2946", "1907"], ["1961", "1774", "1443"]]
    classes = ["header", "data", "data", "empty", "metadata", "empty", "data", "data"]
    kinds, _ = cell_kinds(text, ".")
    assert _headless_continued([(0, 0, 2, 2), (4, 6, 7, 7)], classes, text, kinds) == [(0, 0, 7, 7)]
    assert classes[4] == "group"
    # figures beyond the columns above, or a headed table below, start a table of their own
    wider = [[*r, ""] for r in text]
    wider[6][3] = "12"
    kinds, _ = cell_kinds(wider, ".")
    classes = ["header", "data", "data", "empty", "metadata", "empty", "data", "data"]
    assert _headless_continued([(0, 0, 2, 2), (4, 6, 7, 7)], classes, wider, kinds) == [(0, 0, 2, 2), (4, 6, 7, 7)]
    classes = ["header", "data", "data", "empty", "metadata", "empty", "header", "data"]
    kinds, _ = cell_kinds(text, ".")
    assert _headless_continued([(0, 0, 2, 2), (4, 6, 7, 7)], classes, text, kinds) == [(0, 0, 2, 2), (4, 6, 7, 7)]


def test_a_year_column_under_a_section_label_with_a_footnote_number_labels_the_rows():
    """Table 718: index values by year, then the percent changes by year under a label ending in "\\1" that
    the body holds as a line of its own."""
    text = [["Year", "Crude materials"]] + [[str(y), f"{30 + y % 7}.{y % 10}"] for y in range(1947, 1952)]
    text += [["PERCENT CHANGE FROM PRIOR YEAR SHOWN \\1", ""]] + [[str(y), f"{y % 7}.5"] for y in range(1948, 1952)]
    _, values = cell_kinds(text, ".")
    body = list(range(1, len(text)))
    assert _identifies(text, body, 0, values, "Year", None)
    text[6][0] = "PERCENT CHANGE 1948 TO 1951"  # a figure in the label: not a column of years only
    assert not _identifies(text, body, 0, values, "", None)
