#!/usr/bin/env python3
"""What the Qt adapter's frame timing of a Qt Quick window costs per frame
(src/agent/qt/qt_core.cpp: a clock read and a store under the window's lock
per scene-graph signal, the frame's phases and frames.c's grading at
frameSwapped).

bench-quick-frames shows a Qt Quick window on a private Xvfb (the basic
render loop: every signal on the GUI thread), lets it render its first
frame (which binds the window's surface to the adapter under the agent),
then emits a frame's worth of the window's scene-graph signals CYCLES
times without rendering and reports its GUI thread's CPU time per cycle
(CLOCK_THREAD_CPUTIME_ID: counted by the kernel). It runs ROUNDS times
without the agent and with it preloaded, alternately; medians, and the
difference per frame. Under the agent, the window's frames records must
count the cycles (else the figure would not be the adapter's).

usage: bench/agent/quick_frames.py BUILD_DIR [CYCLES] [ROUNDS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from cpu import start_xvfb  # noqa: E402


def run(program, cycles, env):
    p = subprocess.run([program, str(cycles)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or "ns_per_cycle" not in p.stdout:
        sys.exit("quick_frames: bench-quick-frames failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
    return float(p.stdout.split()[-1])


def counted(records):
    n = 0
    with open(records) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "frames" and r.get("source") == "scene_graph":
                n += r["frames"]
    return n


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    program = os.path.join(build, "bench", "agent", "bench-quick-frames")
    agent = os.path.join(build, "src", "agent", "libpacer-agent.so")
    if not os.path.exists(program):
        print("quick_frames: %s was not built (no Qt 6 Quick headers), skipped" % program)
        return
    xvfb, display = start_xvfb()
    try:
        work = tempfile.mkdtemp(prefix="pacer-bench-quick-")
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("PACER_") and k not in ("LD_PRELOAD", "WAYLAND_DISPLAY")}
        base.update(DISPLAY=display, QT_QPA_PLATFORM="xcb", QSG_RENDER_LOOP="basic",
                    XDG_RUNTIME_DIR=work)
        bare, under = [], []
        for i in range(rounds):
            bare.append(run(program, cycles, base))
            out = os.path.join(work, "records-%d.jsonl" % i)
            under.append(run(program, cycles, dict(base, LD_PRELOAD=agent, PACER_OUT=out,
                                                   PACER_AGENT_QUIET="1")))
            n = counted(out)
            if n < cycles:
                sys.exit("quick_frames: the agent counted %d frames of %d cycles: not the adapter's figure" %
                         (n, cycles))
    finally:
        xvfb.kill()
        xvfb.wait()
    mb, mu = statistics.median(bare), statistics.median(under)
    print("A frame's worth of a Qt Quick window's scene-graph signals (Qt 6, basic render loop), %d per run, "
          "%d runs each (GUI thread CPU time):" % (cycles, rounds))
    print("  without the agent      %7.1f ns per frame" % mb)
    print("  with the Qt adapter    %7.1f ns per frame" % mu)
    print("  the adapter's cost:   %+7.1f ns per frame (%.4f %% of a 16.7 ms frame)" % (mu - mb, 100.0 * (mu - mb) / 16.667e6))


if __name__ == "__main__":
    main()
