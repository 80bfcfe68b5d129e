#!/usr/bin/env python3
"""Cost of the agent's display and wait hooks for a program without a
toolkit adapter: runs bench-display (bench/agent/display.c) on a private
Xvfb without and with the agent, alternating, PAIRS times, and prints the
medians: ns of the main thread's CPU time per frame (an image upload and a
flush) and per main-loop iteration (a wait that does not block), through
the PLT (where the hooks sit) and through libxcb's and libc's own
functions (the floor), and the hooks' cost: the paired difference between
the two in the agent's runs (in the plain runs the same difference says
how exact the method is). The target: at most 100 ns per frame and per
iteration.

usage: bench/agent/display.py BUILD_DIR
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PAIRS = 5


def start_xvfb():
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    buf = b""
    deadline = time.monotonic() + 30
    while not buf.endswith(b"\n") and time.monotonic() < deadline:
        chunk = os.read(r, 16)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    if not buf.strip():
        proc.kill()
        sys.exit("display: Xvfb did not start")
    return proc, ":" + buf.decode().strip()


def run(exe, env):
    out = subprocess.run([exe], env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
    m = re.search(r"frame ([\d.]+), frame floor ([\d.]+), iteration ([\d.]+), iteration floor ([\d.]+), "
                  r"frame difference (-?[\d.]+), iteration difference (-?[\d.]+)", out)
    return [float(x) for x in m.groups()]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    exe = os.path.join(build, "bench", "agent", "bench-display")
    agent = os.path.join(build, "src", "agent", "libpacer-agent.so")
    if not shutil.which("Xvfb"):
        sys.exit("display: Xvfb is not installed")
    xvfb, display = start_xvfb()
    try:
        out = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        base = {k: v for k, v in os.environ.items() if not k.startswith("PACER_") and k != "WAYLAND_DISPLAY"}
        base["DISPLAY"] = display
        with_agent = dict(base, LD_PRELOAD=os.path.abspath(agent), PACER_OUT=out, PACER_AGENT_QUIET="1")
        plain, agent_runs = [], []
        for _ in range(PAIRS):
            plain.append(run(exe, base))
            agent_runs.append(run(exe, with_agent))
        os.unlink(out)
    finally:
        xvfb.terminate()
        xvfb.wait(10)
    med = statistics.median
    col = lambda runs, i: med(r[i] for r in runs)  # noqa: E731
    print("ns of CPU time per frame (1x1 xcb_put_image + xcb_flush) and per main-loop iteration (poll, no wait),")
    print("medians of %d alternating runs of 101 paired rounds each:" % PAIRS)
    print("                         plain      floor     agent      floor")
    print("  frame               %7.1f    %7.1f   %7.1f    %7.1f" % (col(plain, 0), col(plain, 1),
                                                                       col(agent_runs, 0), col(agent_runs, 1)))
    print("  iteration           %7.1f    %7.1f   %7.1f    %7.1f" % (col(plain, 2), col(plain, 3),
                                                                       col(agent_runs, 2), col(agent_runs, 3)))
    frame = med(r[4] for r in agent_runs)
    wait = med(r[5] for r in agent_runs)
    frame0 = med(r[4] for r in plain)
    wait0 = med(r[5] for r in plain)
    print("  the hooks' cost (median of the paired differences): %.1f ns per frame, %.1f ns per iteration"
          " (without the agent the same difference is %.1f and %.1f); target: at most 100"
          % (frame, wait, frame0, wait0))


if __name__ == "__main__":
    main()
