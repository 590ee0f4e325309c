"""Keeps the 1-minute load average at or above TARGET with busy loops (nice 0), bounded in time; logs the load.

Usage: python loadkeeper.py TARGET SECONDS LOG (stop early with ``touch /tmp/loadkeeper.stop``). It adds a
busy loop while the load is under TARGET (at most 10) and removes one when the load is 2 above it, so other
work on the machine counts towards the load too.
"""

import os
import subprocess
import sys
import time

target, until, log = float(sys.argv[1]), time.time() + float(sys.argv[2]), sys.argv[3]
loops: list[subprocess.Popen] = []
with open(log, "a") as out:
    while time.time() < until and not os.path.exists("/tmp/loadkeeper.stop"):
        load1 = os.getloadavg()[0]
        if load1 < target and len(loops) < 10:
            loops.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
        elif load1 > target + 2 and loops:
            loops.pop().kill()
        out.write(f"{time.strftime('%H:%M:%S')} load1={load1:.2f} loops={len(loops)}\n")
        out.flush()
        time.sleep(15)
for loop in loops:
    loop.kill()
