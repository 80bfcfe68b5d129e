#!/usr/bin/env python3
"""What the Qt adapter costs the thread that makes Qt objects: QtCore's hooks
run for every QObject constructed and destroyed, and the adapter looks at
each new object's class at the event loop's next turn (src/agent/qt/).

A PyQt6 script (Debian's /usr/bin/python3 with python3-pyqt6, QtCore only)
makes and destroys OBJECTS QObjects in batches of 1000, each batch followed
by a turn of the event loop, and reports its own thread's CPU time
(CLOCK_THREAD_CPUTIME_ID: counted by the kernel, not a wall clock). It runs
ROUNDS times with the agent preloaded (PACER_OUT set: the adapter is
attached as in a measured app) and as many times without, alternately; the
medians and their difference per object are printed. Python's own cost per
object is the floor the difference is measured against in the same run.

usage: bench/agent/qt_objects.py BUILD_DIR [OBJECTS] [ROUNDS]
"""
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPT = r"""
import sys, time
from PyQt6 import QtCore
app = QtCore.QCoreApplication(sys.argv)
n = int(sys.argv[1])
t0 = time.thread_time_ns()
for _ in range(n // 1000):
    objs = [QtCore.QObject() for _ in range(1000)]
    app.processEvents()
    del objs
    app.processEvents()
print(time.thread_time_ns() - t0)
"""

PYTHON = "/usr/bin/python3"


def run(script, n, env):
    p = subprocess.run([PYTHON, script, str(n)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("qt_objects: the script failed: " + p.stderr)
    return int(p.stdout.split()[-1])


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    agent = os.path.join(build, "src", "agent", "libpacer-agent.so")
    if subprocess.run([PYTHON, "-c", "import PyQt6.QtCore"], capture_output=True).returncode != 0:
        print("qt_objects: %s cannot import PyQt6 (python3-pyqt6), skipped" % PYTHON)
        return
    work = tempfile.mkdtemp(prefix="pacer-bench-qt-")
    script = os.path.join(work, "objects.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PACER_") and k != "LD_PRELOAD"}
    with_agent = dict(base, LD_PRELOAD=agent, PACER_OUT=os.path.join(work, "records.jsonl"),
                      PACER_AGENT_QUIET="1")
    bare, under = [], []
    for _ in range(rounds):
        bare.append(run(script, n, base))
        under.append(run(script, n, with_agent))
    mb, mu = statistics.median(bare), statistics.median(under)
    print("Qt objects made and destroyed by a PyQt6 script, %d per run, %d runs each (thread CPU time):" % (n, rounds))
    print("  without the agent  %8.1f ms  (%.0f ns per object)" % (mb / 1e6, mb / n))
    print("  with the Qt adapter %7.1f ms  (%.0f ns per object)" % (mu / 1e6, mu / n))
    print("  the adapter's cost: %+.0f ns per object (%+.1f %% of the script's own)" % ((mu - mb) / n, 100.0 * (mu - mb) / mb))


if __name__ == "__main__":
    main()
