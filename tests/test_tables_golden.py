"""Detection output of a few real files against what it was before detection was made faster.

Recorded with the detector before its hot paths were vectorised (issue 12, speed); any change to these
outputs must be one meant to change results, and then these expectations are recorded anew. Per table:
sheet, cell range, runs of line classes (a letter per class), number of observations, digest of them.
"""

import hashlib
import itertools
import json
from pathlib import Path

import pytest

from airflow_sbcrawl.tables import detect_file

REAL = Path(__file__).parent / "data" / "tables_real"
LETTER = {"metadata": "m", "header": "h", "group": "g", "data": "d", "derived": "s", "notes": "n", "empty": "."}

EXPECTED = {
    'abs-6302002.xls': [
        ('Index', 'A2:L21', 'm1 .2 m2 .1 m2 .1 h1 .1 d1 s2 d1 s2 d1 s2', 81, 'b1ee972f08d664ec'),
        ('Data1', 'A1:J113', 'h10 d103', 927, '89fea0e916192e5a'),
    ],
    'bfs-Weinverbrauch.xlsx': [
        ('T7.6.3', 'A1:J121', 'm1 .2 h2 .1 h2 .1 h1 .3' + ' s1 d2 .1' * 8 + ' d3 .1' * 15 + ' d3 .2 n9 .1 n1', 648,
         'f18c769cc4af225e'),
    ],
    'messytables-begrotingsanalyse-2011.csv': [
        ('messytables-begrotingsanalyse-2011.csv', 'A1:T43', 'h2 .1 h4 d6 g1 d24 g1 d1 g1 d2', 390, 'ab4c37e2e9fd00d7'),
    ],
    'readxl-deaths.xlsx': [
        ('arts', 'A1:F19', 'm4 h1 d10 n4', 40, 'b10b11dc98d5501a'),
        ('other', 'A1:F19', 'm4 h1 d10 n4', 40, 'dd93bb17d3a8d43e'),
    ],
    'tidyxl-titanic.xlsx': [
        ('Sheet1', 'A1:G11', 'h3 d8', 32, '80b54d01e3de0ef5'),
    ],
}


def _runs(classes: list[str]) -> str:
    """Line classes as runs of letters: "h3 d8" for three header lines and eight data lines."""
    return " ".join(f"{LETTER[c]}{len(list(run))}" for c, run in itertools.groupby(classes))


def _digest(observations) -> str:
    return hashlib.sha256(json.dumps([list(o) for o in observations]).encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_detection_output_is_unchanged(name):
    result = detect_file(REAL / name)
    got = [
        (t.provenance.sheet, t.cell_range, _runs(t.line_classes), len(t.observations),
         _digest(t.observations))
        for t in result.tables
    ]
    assert got == EXPECTED[name]


def test_the_digest_sees_one_changed_value():
    table = detect_file(REAL / "tidyxl-titanic.xlsx").tables[0]
    changed = [table.observations[0]._replace(value=(table.observations[0].value or 0) + 1), *table.observations[1:]]
    assert _digest(table.observations) == EXPECTED["tidyxl-titanic.xlsx"][0][4] != _digest(changed)
