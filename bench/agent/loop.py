#!/usr/bin/env python3
"""Cost of the agent's main-loop monitor per GMainContext iteration: runs
bench-loop (bench/agent/loop.c) without and with the agent, alternating,
PAIRS times, and prints the medians and the difference per iteration.

usage: bench/agent/loop.py BUILD_DIR
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

PAIRS = 5


def run(exe, env):
    out = subprocess.run([exe], env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
    m = re.search(r"g_poll ([\d.]+), empty wrapper ([\d.]+)", out)
    return float(m.group(1)), float(m.group(2))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    exe = os.path.join(build, "bench", "agent", "bench-loop")
    agent = os.path.join(build, "src", "agent", "libpacer-agent.so")
    out = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
    base = {k: v for k, v in os.environ.items() if not k.startswith("PACER_")}
    with_agent = dict(base, LD_PRELOAD=os.path.abspath(agent), PACER_OUT=out, PACER_AGENT_QUIET="1")
    plain, floor, monitor, monitor_floor = [], [], [], []
    for _ in range(PAIRS):
        p, f = run(exe, base)
        m, mf = run(exe, with_agent)
        plain.append(p), floor.append(f), monitor.append(m), monitor_floor.append(mf)
    med = statistics.median
    print("ns per main-loop iteration (idle source, non-blocking), medians of %d alternating runs:" % PAIRS)
    print("  GLib, g_poll                 %7.1f" % med(plain))
    print("  GLib, empty poll wrapper     %7.1f   (+%.1f: any poll hook)" % (med(floor), med(floor) - med(plain)))
    print("  agent monitor, g_poll        %7.1f   (+%.1f ns per iteration, ratio %.2f)"
          % (med(monitor), med(monitor) - med(plain), med(monitor) / med(plain)))
    print("  agent monitor, empty wrapper %7.1f" % med(monitor_floor))
    os.unlink(out)


if __name__ == "__main__":
    main()
