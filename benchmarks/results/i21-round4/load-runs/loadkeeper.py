"""Keeps the one-minute load average at or above TARGET with busy loops (nice 0) for at most SECONDS, and
logs the load every 15 s; stops early when /tmp/loadkeeper.stop exists. The background load of the
whole-suite runs in README.md.

    python loadkeeper.py TARGET SECONDS LOG
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

MAX_LOOPS = 10


def main(target: float, seconds: float, log_path: str) -> None:
    until = time.time() + seconds
    loops: list[subprocess.Popen] = []
    with open(log_path, "a") as log:
        while time.time() < until and not os.path.exists("/tmp/loadkeeper.stop"):
            load = os.getloadavg()[0]
            if load < target and len(loops) < MAX_LOOPS:
                loops.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
            elif load > target + 2 and loops:
                loops.pop().kill()
            log.write(f"{time.strftime('%H:%M:%S')} load1={load:.2f} loops={len(loops)}\n")
            log.flush()
            time.sleep(15)
    for loop in loops:
        loop.kill()


if __name__ == "__main__":
    main(float(sys.argv[1]), float(sys.argv[2]), sys.argv[3])
