"""longcsv.py TAG: the two 2.4 MB long-format CSVs of ``bench tables-hostile`` read by ``detect_file`` in a fresh
process each (``tables_hostile.measure``: wall seconds and the child's peak RSS; CPU seconds of the child from
``getrusage``); the tree measured is the one
on PYTHONPATH, which the child inherits."""

import json
import pathlib
import resource
import sys

from sbcrawl_dev.bench.tables_hostile import measure, un_demographic_long, un_long_format

folder = pathlib.Path("/tmp/h20g/longcsv")
folder.mkdir(parents=True, exist_ok=True)
for name, data in (("un-long-format-2.4MB.csv", un_long_format(800)),
                   ("undata-demographic-2.4MB.csv", un_demographic_long(30))):
    path = folder / name
    if not path.exists():
        path.write_bytes(data)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = measure(path)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2)
    print(sys.argv[1], name, json.dumps(result), flush=True)
