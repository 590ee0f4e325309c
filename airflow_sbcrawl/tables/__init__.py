"""Statistics tables in crawled files: readers per format, line classification, Parquet output.

No Airflow import anywhere in this package: it runs from the CLI, tests and the benchmark alike.
"""

from .api import FileResult, InputFile, detect_file, detect_to_dir
from .classifier import LineClassifier
from .detect import DETECTOR_VERSION, detect_tables
from .model import LINE_CLASSES, VALUE_STATUSES, DetectedTable, Observation, Provenance
from .output import read_tables, write_tables
from .readers import Limits, ReadError, ReadResult, Sheet, read_bytes, sniff_format
from .values import parse_value

__all__ = [
    "DETECTOR_VERSION",
    "LINE_CLASSES",
    "VALUE_STATUSES",
    "DetectedTable",
    "FileResult",
    "InputFile",
    "Limits",
    "LineClassifier",
    "Observation",
    "Provenance",
    "ReadError",
    "ReadResult",
    "Sheet",
    "detect_file",
    "detect_tables",
    "detect_to_dir",
    "parse_value",
    "read_bytes",
    "read_tables",
    "sniff_format",
    "write_tables",
]
