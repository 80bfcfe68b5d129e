#!/usr/bin/env python3
"""The agent's own threads' share of a GUI program's CPU time, over a
scripted session: each app runs under `pacer run` on a private Xvfb for
SECONDS (default 60) while xdotool moves the pointer, clicks, scrolls and
types in its window; just before the app is ended, the kernel's counts of
every thread are read:

  /proc/PID/task/TID/stat       utime + stime, in clock ticks (the figure)
  /proc/PID/task/TID/schedstat  time on a CPU, in ns (the same, finer)

The agent's threads are the ones it names pacer-* (pacer-watchdog,
pacer-writer, pacer-exit, pacer-upload when a server is given); the app's
main thread carries the hooks' cost, which bench/agent/display.py and
loop.py count per frame and per iteration. Counted, not timed: no wall
clock enters the figure. The target: at most 1 % of the process's CPU time.

Apps: Debian's gtk4-widget-factory (GTK 4 adapter) and gtk3-widget-factory
(GTK 3 adapter), drawn with cairo (GSK_RENDERER=cairo: Xvfb has no GPU, and
llvmpipe's CPU time would only make the agent's share look smaller); for
the Qt adapter, the Qt 6 demo shop (examples/qt, its requests going to a
closed port) and Debian's kcalc (Qt 5, KDE Frameworks).

The Qt adapter works on the app's main thread (QtCore's hooks on every
QObject made and destroyed, an event filter on the application), where the
threads' split cannot show it; so each Qt app also runs the same scripted
session (same seed) without pacer, and the process's CPU time of both runs
is printed side by side: one measurement each, on a shared machine, so the
difference is only indicative; the threads' share is the counted figure.

usage: bench/agent/cpu.py BUILD_DIR [SECONDS] [APP...]
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

APPS = ["gtk4-widget-factory", "gtk3-widget-factory", "qt-shop6", "kcalc"]
QT_APPS = ("qt-shop6", "kcalc")


def app_argv(build, app):
    """The command line of an app of APPS, or None when it is not here."""
    if app == "qt-shop6":
        path = os.path.join(build, "examples", "qt", "qt-shop6")
        return [path, "--api", "http://127.0.0.1:9", "--splash-ms", "0", "--lazy-ms", "2000"] \
            if os.path.exists(path) else None
    path = shutil.which(app)
    return [path] if path else None


def start_xvfb():
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
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
        sys.exit("cpu: Xvfb did not start")
    return proc, ":" + buf.decode().strip()


def app_pid(launcher, name, timeout=30):
    """The app: `pacer run` execs it in its own process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and launcher.poll() is None:
        try:
            with open("/proc/%d/comm" % launcher.pid) as c:
                if name.startswith(c.read().strip()):
                    return launcher.pid
        except OSError:
            pass
        time.sleep(0.05)
    return None


def window(env, pid, timeout=30):
    """The app's visible top-level and its geometry (x, y, w, h)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(pid)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for wid in r.stdout.split():
            g = subprocess.run(["xdotool", "getwindowgeometry", "--shell", wid], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
            vals = dict(line.split("=", 1) for line in g.split() if "=" in line)
            if int(vals.get("WIDTH", 0)) > 200 and int(vals.get("HEIGHT", 0)) > 200:
                return wid, int(vals["X"]), int(vals["Y"]), int(vals["WIDTH"]), int(vals["HEIGHT"])
        time.sleep(0.2)
    return None


def threads(pid):
    """{tid: (name, ticks, ns)} of every thread of pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                ns = int(f.read().split()[0])
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        out[tid] = (name, ticks, ns)
    return out


def session(env, wid, x, y, w, h, seconds, rng):
    """Pointer moves, clicks, scrolls and keys over the window for SECONDS.
    Clicks stay out of the title bar's ends (the close button)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        px, py = x + rng.randrange(20, w - 20), y + rng.randrange(60, h - 20)
        roll = rng.random()
        if roll < 0.1:  # the page switcher in the middle of the header bar
            px, py = x + rng.randrange(int(w * 0.35), int(w * 0.65)), y + 25
            cmd = ["mousemove", str(px), str(py), "click", "1"]
        elif roll < 0.4:
            cmd = ["mousemove", str(px), str(py), "click", "1"]
        elif roll < 0.6:
            cmd = ["mousemove", str(px), str(py), "click", "--repeat", "3", rng.choice(["4", "5"])]
        elif roll < 0.75:
            cmd = ["key", "--window", wid, rng.choice(["Tab", "Right", "Down", "space", "Escape"])]
        else:
            cmd = ["mousemove", str(px), str(py)]
        subprocess.run(["xdotool"] + cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.25))


def bare(env, app, argv, seconds):
    """The same session without pacer: the process's CPU time in ns."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pid = app_pid(proc, app)
        win = window(env, pid) if pid else None
        if not win:
            return None
        session(env, *win, seconds, random.Random(1))
        return sum(n for _, _, n in threads(pid).values())
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure(build, env, app, argv, seconds):
    pacer = os.path.join(build, "src", "cli", "pacer")
    out = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
    launcher = subprocess.Popen([pacer, "run", "--out", out, "--"] + argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    try:
        pid = app_pid(launcher, app)
        if not pid:
            print("  %s: did not start" % app)
            return None
        win = window(env, pid)
        if not win:
            print("  %s: no window" % app)
            return None
        session(env, *win, seconds, random.Random(1))
        counts = threads(pid)
    finally:
        if launcher.poll() is None:
            try:
                pid and os.kill(pid, signal.SIGTERM)
            except (OSError, NameError):
                pass
        try:
            _, err = launcher.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            launcher.kill()
            _, err = launcher.communicate()
    kinds = {}
    with open(out) as f:
        for line in f:
            t = json.loads(line).get("type")
            kinds[t] = kinds.get(t, 0) + 1
    records = "%d (%s)" % (sum(kinds.values()), ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    os.unlink(out)
    total_ticks = sum(t for _, t, _ in counts.values())
    total_ns = sum(n for _, _, n in counts.values())
    agent = {tid: v for tid, v in counts.items() if v[0].startswith("pacer-")}
    agent_ticks = sum(t for _, t, _ in agent.values())
    agent_ns = sum(n for _, _, n in agent.values())
    hz = os.sysconf("SC_CLK_TCK")
    print("  %s: %d threads, process CPU %.2f s (%d ticks), %s records; summary: %s"
          % (app, len(counts), total_ticks / hz, total_ticks, records, err.strip().splitlines()[-1] if err else ""))
    for tid, (name, ticks, ns) in sorted(agent.items(), key=lambda kv: kv[1][0]):
        print("    %-16s %4d ticks  %9.3f ms" % (name, ticks, ns / 1e6))
    pct_ticks = 100.0 * agent_ticks / total_ticks if total_ticks else 0.0
    pct_ns = 100.0 * agent_ns / total_ns if total_ns else 0.0
    print("    agent threads: %.3f %% of the process's CPU time (stat ticks), %.3f %% (schedstat ns); target: at most 1 %%"
          % (pct_ticks, pct_ns))
    return pct_ticks, pct_ns, total_ns


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    for tool in ("Xvfb", "xdotool"):
        if not shutil.which(tool):
            sys.exit("cpu: %s is not installed" % tool)
    xvfb, display = start_xvfb()
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PACER_") and k not in ("WAYLAND_DISPLAY", "LD_PRELOAD")}
        env.update(DISPLAY=display, GDK_BACKEND="x11", GSK_RENDERER="cairo", NO_AT_BRIDGE="1", GTK_A11Y="none",
                   QT_QPA_PLATFORM="xcb")
        print("agent threads' share of the process's CPU time over a %g s scripted session (xdotool):" % seconds)
        for app in sys.argv[3:] or APPS:
            argv = app_argv(build, app)
            if not argv:
                print("  %s: not installed" % app)
                continue
            got = measure(build, env, app, argv, seconds)
            if got and app in QT_APPS:
                without = bare(env, app, argv, seconds)
                if without:
                    print("    the same session without pacer: process CPU %.3f s; with pacer %.3f s (%+.2f %%, one run each)"
                          % (without / 1e9, got[2] / 1e9, 100.0 * (got[2] - without) / without))
    finally:
        xvfb.terminate()
        xvfb.wait(10)


if __name__ == "__main__":
    main()
