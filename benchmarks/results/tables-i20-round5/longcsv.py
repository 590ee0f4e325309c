# longcsv.py FILE: detect_file on one file; seconds (wall, CPU), peak RSS (VmHWM), lines with values, header lines, longest path
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from airflow_sbcrawl.tables import detect_file
r = detect_file(sys.argv[1])
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
rows = {(t.index, o.row) for t in r.tables for o in t.observations}
print(json.dumps({"tables": len(r.tables), "seconds": round(wall, 2), "cpu": round(cpu, 2), "peak_rss_mb": round(hwm / 1024, 1),
                  "lines": sum(1 for _ in open(sys.argv[1])), "data_lines": len(rows),
                  "numeric": sum(o.value is not None for t in r.tables for o in t.observations),
                  "header_lines": sum(len(t.header) for t in r.tables),
                  "longest_path": max((len(o.column_path) for t in r.tables for o in t.observations), default=0),
                  "warnings": [w[:120] for t in r.tables for w in t.warnings]}))
