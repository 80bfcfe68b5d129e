#!/usr/bin/env python3
"""Native leak tracking: the cost of `pacer run --leaks=native` at the
default sampling against the plain program and against heaptrack (Debian's
`heaptrack`), on the same program in the same run, in rotating order:
bench/leaks/workload (words counted in a hash table, strdup'd and freed by
the million, and three known leaks). Prints the median wall time of each,
the ratio to the plain program, pacer's added time over heaptrack's, and
the leaks each found. Each round runs the three once, in an order that
rotates; besides the medians it prints the spread (lowest–highest) and the
median of the per-round ratios, which a machine whose load drifts during
the run disturbs less, and the same for CPU time (user + system of every
process of the run: heaptrack's interpreter included), which other
processes on a shared machine disturb less than wall time.

    bench/leaks/heap.py BUILD_DIR [ROUNDS]
"""
import json
import os
import resource
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build-bench"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 11
prog = os.path.join(build, "bench", "leaks", "workload")
pacer = os.path.join(build, "src", "cli", "pacer")
docs = "6000"
tmp = tempfile.mkdtemp(prefix="pacer-bench-leaks-")
env = dict(os.environ, PACER_AGENT_LIB=os.path.join(build, "src", "agent", "libpacer-agent.so"))

if not shutil.which("heaptrack"):
    print("heaptrack is not installed (scripts/install-deps.sh installs it)")
    sys.exit(1)


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd):
    """Wall time and CPU time of one run."""
    c, t = cpu_children(), time.monotonic()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t, cpu_children() - c


runs = {
    "plain": lambda i: [prog, docs],
    "pacer --leaks=native": lambda i: [pacer, "run", "--leaks=native", "--out", os.path.join(tmp, "r%d.jsonl" % i),
                                       "--", prog, docs],
    "heaptrack": lambda i: ["heaptrack", "-o", os.path.join(tmp, "h%d" % i), prog, docs],
}
names = list(runs)
wall = {k: [] for k in runs}
cpu = {k: [] for k in runs}
for i in range(rounds):
    for k in names[i % 3:] + names[:i % 3]:
        w, c = timed(runs[k](i))
        wall[k].append(w)
        cpu[k].append(c)

P, H = "pacer --leaks=native", "heaptrack"
print("%d rounds, %s documents" % (rounds, docs))
for what, times in (("wall", wall), ("cpu", cpu)):
    med = {k: statistics.median(v) for k, v in times.items()}
    plain = med["plain"]
    print("%-22s %9s %15s %9s %15s" % (what + " time", "median s", "lowest-highest", "x plain", "per-round x"))
    for k in names:
        per = [t / p for t, p in zip(times[k], times["plain"])]
        print("%-22s %9.3f %7.3f-%-7.3f %9.2f %7.2f-%-7.2f" % (k, med[k], min(times[k]), max(times[k]),
                                                              med[k] / plain, min(per), max(per)))
    added_p, added_h = med[P] - plain, med[H] - plain
    ratio_plain = statistics.median(t / p for t, p in zip(times[P], times["plain"]))
    ratio_ht = statistics.median((t - p) / (h - p) for t, h, p in zip(times[P], times[H], times["plain"]))
    print("  %s added (medians): pacer %.3f s, heaptrack %.3f s: pacer adds %.2f of heaptrack's" %
          (what, added_p, added_h, added_p / added_h))
    print("  median of per-round ratios: pacer %.2fx plain; pacer's added %s %.2f of heaptrack's" %
          (ratio_plain, what, ratio_ht))

# the leaks each found
recs = [json.loads(l) for l in open(os.path.join(tmp, "r0.jsonl")) if l.strip()]
print("pacer: leaks (unreachable at exit), by allocation site:")
for r in recs:
    if r.get("type") == "leak" and r.get("origin") == "app":
        fn = next((f["function"] for f in r["stack"] if f["in_app"]), "?")
        print("  %-24s %9d bytes in %6d blocks" % (fn, r["bytes"], r["count"]))
ht = [f for f in os.listdir(tmp) if f.startswith("h0")][0]
out = subprocess.run(["heaptrack_print", "-f", os.path.join(tmp, ht), "--print-leaks", "1", "--print-peaks", "0",
                      "--print-allocators", "0", "--print-temporary", "0"], capture_output=True, text=True).stdout
leaks = out.split("MEMORY LEAKS", 1)[-1]
print("heaptrack: not freed at exit (reachable memory included), by allocation site:")
for size, calls, fn in re.findall(r"^([0-9.]+[KMG]?) leaked over (\d+) calls from\n(\S+)", leaks, flags=re.M):
    print("  %-24s %9s in %6s calls" % (fn, size, calls))
shutil.rmtree(tmp, ignore_errors=True)
