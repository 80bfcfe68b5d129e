#!/usr/bin/env python3
"""What wall-clock profiles of long iterations and frame phases cost,
counted from the kernel's CPU time per thread (/proc/.../schedstat, read by
the programs themselves just before they exit): no wall clock enters the
figures.

  profiler    bench-stall stalls 5 1200 (five 1200 ms iterations, half
              busy, half asleep) under `pacer run`, profiles off
              (PACER_PROFILE_AFTER_MS=0) and on (the default: from 100 ms,
              every 10 ms): the pacer-watchdog thread's CPU time, per
              sample taken (the records' profile_samples). The main
              thread's own figure is no measure here: it busy-waits for
              wall time, so its CPU time is its scheduling
  idle        bench-stall idle 5000 (no jank): the watchdog's CPU time per
              second with profiles off and on (it looks every 75 ms
              instead of 250 ms while the loop iterates, to see an
              iteration in time), the main thread's
              per iteration without the agent and with it
  frames      bench-frames 300 (a GTK 4 window animating 300 frames) on a
              private Xvfb: the main thread's CPU time per frame without
              the agent, with it (frames records with their phases) and
              with --frames=detail

Each run RUNS times (default 5); medians. usage: bench/agent/profile.py
BUILD_DIR [RUNS]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from cpu import start_xvfb  # noqa: E402


def run(build, argv, env_extra=None, agent=True, display=None):
    out = os.path.join(tempfile.mkdtemp(prefix="pacer-bench-profile-"), "r.jsonl")
    env = dict(os.environ, PACER_AGENT_QUIET="1", NO_AT_BRIDGE="1", GSK_RENDERER="cairo", **(env_extra or {}))
    if display:
        env["DISPLAY"] = display
    cmd = ([os.path.join(build, "src/cli/pacer"), "run", "--out", out] +
           (["--frames=detail"] if (env_extra or {}).get("DETAIL") else []) + ["--"] if agent else []) + argv
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("profile: %s failed: %s" % (" ".join(cmd), p.stderr[-2000:]))
    threads = {}
    for name, ns in re.findall(r"^thread (\S+) cpu_ns=([0-9]+)$", p.stdout, re.M):
        threads[name] = threads.get(name, 0) + int(ns)
    m = re.search(r"iterations=([0-9]+)", p.stdout)
    f = re.search(r"frames=([0-9]+) main_cpu_ns=([0-9]+)", p.stdout)
    records = []
    if agent and os.path.exists(out):
        with open(out) as fh:
            records = [json.loads(line) for line in fh if line.strip()]
    return {"threads": threads, "iterations": int(m.group(1)) if m else 0,
            "frames": int(f.group(1)) if f else 0, "main_cpu": int(f.group(2)) if f else 0, "records": records}


def main_thread(r, prog):
    return r["threads"].get(prog[:15], 0)


def med(xs):
    return statistics.median(xs)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    stall = [os.path.join(build, "bench/agent/bench-stall")]

    # profiler: per sample
    per_sample_wd, samples = [], []
    for _ in range(runs):
        off = run(build, stall + ["stalls", "5", "1200"], {"PACER_PROFILE_AFTER_MS": "0"})
        on = run(build, stall + ["stalls", "5", "1200"])
        n = sum(j.get("profile_samples", 0) for j in on["records"] if j["type"] == "jank")
        if not n:
            sys.exit("profile: no samples taken")
        samples.append(n)
        per_sample_wd.append((on["threads"].get("pacer-watchdog", 0) - off["threads"].get("pacer-watchdog", 0)) / n)
    print("profiler: %d samples per run (5 stalls of 1200 ms)" % med(samples))
    print("  watchdog CPU per sample: %.1f us (median of %d runs; profiles on minus off, over samples)"
          % (med(per_sample_wd) / 1000, runs))

    # idle: no jank
    wd_off, wd_on, it_plain, it_agent = [], [], [], []
    for _ in range(runs):
        plain = run(build, stall + ["idle", "5000"], agent=False)
        off = run(build, stall + ["idle", "5000"], {"PACER_PROFILE_AFTER_MS": "0"})
        on = run(build, stall + ["idle", "5000"])
        wd_off.append(off["threads"].get("pacer-watchdog", 0) / 5)
        wd_on.append(on["threads"].get("pacer-watchdog", 0) / 5)
        it_plain.append(main_thread(plain, "bench-stall") / max(plain["iterations"], 1))
        it_agent.append(main_thread(on, "bench-stall") / max(on["iterations"], 1))
    print("idle (no jank, 5 s):")
    print("  watchdog CPU per second: profiles off %.1f us, on %.1f us (ratio %.2f)"
          % (med(wd_off) / 1000, med(wd_on) / 1000, med(wd_on) / max(med(wd_off), 1)))
    print("  main thread CPU per iteration (2 ms of work): plain %.1f us, agent %.1f us (ratio %.3f)"
          % (med(it_plain) / 1000, med(it_agent) / 1000, med(it_agent) / max(med(it_plain), 1)))

    # frames: per frame
    xvfb, display = start_xvfb()
    try:
        frames = [os.path.join(build, "bench/agent/bench-frames"), "300"]
        plain_f, agent_f, detail_f = [], [], []
        for _ in range(runs):
            p = run(build, frames, agent=False, display=display)
            a = run(build, frames, display=display)
            d = run(build, frames, {"DETAIL": "1"}, display=display)
            plain_f.append(p["main_cpu"] / max(p["frames"], 1))
            agent_f.append(a["main_cpu"] / max(a["frames"], 1))
            detail_f.append(d["main_cpu"] / max(d["frames"], 1))
            if not any("phases_ms" in r for r in a["records"] if r["type"] == "frames"):
                sys.exit("profile: the agent's frames records have no phases")
        print("frames (GTK 4, 300 frames, cairo on Xvfb): main thread CPU per frame")
        print("  plain %.1f us, agent (frames, phases, pages) %.1f us (+%.1f us), --frames=detail %.1f us (+%.1f us)"
              % (med(plain_f) / 1000, med(agent_f) / 1000, (med(agent_f) - med(plain_f)) / 1000,
                 med(detail_f) / 1000, (med(detail_f) - med(plain_f)) / 1000))
    finally:
        xvfb.terminate()
        xvfb.wait()


if __name__ == "__main__":
    main()
