#!/usr/bin/env python3
"""Agent overhead, seen from outside: time to first paint of a new window
as the X server sees it, with and without the agent, side by side.

    bench/agent/ttff.py BUILD_DIR [ROUNDS] [--renderer cairo|gl|ngl|vulkan|default]

For each app — the demo (shop-app) and Debian's gtk4-widget-factory — each
round runs it once plain, once under `pacer run` (records written to a
temporary directory) and once under `pacer run` with the agent idle (below),
the order turning through every permutation so drift hits all sides alike;
a round's plain and `pacer run` runs are its pair.
Before each run, xfirstpaint (bench/agent/xfirstpaint.c) watches the X
server for a new toplevel and reports the CLOCK_MONOTONIC time of the
first DAMAGE event on it: the first frame's pixels reaching the server.
The launcher takes the same clock just before it spawns the app; the app
is ended with SIGTERM once it painted. Neither the app's nor the agent's
clock enters the figure.

Prints per app the median of each side, the median of the per-pair ratios
(agent / plain) and a bootstrap 95 % interval of that median (resampling
the pairs). The target: the interval's upper end at most 1.02. Runs on its
own Xvfb display when there is no DISPLAY. Default: 300 rounds per app
(about 10 minutes for both): first paints on Xvfb vary enough from run to
run that the interval spans about ±1.4 % at 150 rounds and ±0.9 % at 300
(2-core VM), while the cost to resolve is about 1 %.

Where the difference comes from: each round also runs the app under `pacer
run` with PACER_AGENT_DISABLE=1 (the launcher's exec and config check, the
agent loaded but idle), in a rotating order with the other two, and the
median per-round difference of each to the plain run is printed. For every
run the kernel's own counts of the process (wait4: minor page faults, CPU
time, from exec to the end a moment after its first paint) are kept, and
the cost of one page fault on this machine is measured first (anonymous
pages touched once): where it is high (a virtual machine that traps page
faults), a start-up's page faults weigh in its first paint.

Both sides draw with GTK's cairo renderer (GSK_RENDERER=cairo) unless
--renderer says otherwise: Xvfb has no GPU, so GTK's GL renderer runs on
llvmpipe, whose shader compiles on the first frame make the time to first
paint vary between runs two to three times as much as with cairo
(interquartile range on gtk4-widget-factory: ~40 ms against ~17 ms), while
the agent's work is the same whichever renderer draws. `--renderer default`
leaves GSK_RENDERER as the environment has it.
"""
import os
import itertools
import mmap
import random
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]
renderer = "cairo"
if "--renderer" in args:
    i = args.index("--renderer")
    if i + 1 >= len(args):
        sys.exit("ttff: --renderer wants a GSK renderer name (cairo, gl, ngl, vulkan) or default")
    renderer = args[i + 1]
    del args[i:i + 2]
build = os.path.abspath(args[0] if args else "build")
pairs = int(args[1]) if len(args) > 1 else 300
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pacer = os.path.join(build, "src", "cli", "pacer")
agent = os.path.join(build, "src", "agent", "libpacer-agent.so")
watcher = os.path.join(build, "bench", "agent", "xfirstpaint")
shop_app = os.path.join(build, "examples", "shop-app")
config = os.path.join(root, "examples", "shop.xml")
BOOTSTRAP = 4000


def start_xvfb():
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = os.read(r, 16)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    return proc, ":" + buf.decode().strip()


retried = 0  # runs done again: the app could not open the display


def first_paint_once(argv, env):
    """Spawns argv once; the ms from just before the spawn to the X server's
    first damage on a new toplevel, or None when the app ended without one
    (a busy Xvfb now and then resets a new client's connection)."""
    w = subprocess.Popen([watcher, "30000"], env=env, stdout=subprocess.PIPE, text=True)
    if w.stdout.readline().strip() != "ready":
        raise RuntimeError("xfirstpaint did not start")
    t0 = time.monotonic_ns()
    errf = tempfile.TemporaryFile(mode="w+")
    app = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=errf)
    line = []
    while not line:
        ready, _, _ = select.select([w.stdout], [], [], 0.5)
        if ready:
            line = w.stdout.readline().split() or ["eof"]
        elif app.poll() is not None:
            w.kill()
            line = ["ended"]
    w.wait()
    app.send_signal(signal.SIGTERM)
    usage = reap(app)
    errf.seek(0)
    err = errf.read()
    errf.close()
    if line[0] == "ended":
        if "cannot open display" in err:
            return None
        raise RuntimeError("%s ended without painting (exit %d): %s" % (argv[0], app.returncode, err.strip()))
    if len(line) < 2 or line[0] != "paint":
        raise RuntimeError("no first paint from %s" % argv[0])
    return (int(line[1]) - t0) / 1e6, usage


def reap(app):
    """Waits for app (SIGKILL after 20 s); its rusage as the kernel counted
    it: the launcher's exec and the app's, up to its end."""
    deadline = time.monotonic() + 20
    while True:
        pid, status, usage = os.wait4(app.pid, os.WNOHANG)
        if pid == app.pid:
            app.returncode = os.waitstatus_to_exitcode(status)
            return usage
        if time.monotonic() > deadline:
            app.kill()
            deadline = float("inf")
        time.sleep(0.005)


def first_paint_ms(argv, env, usages=None):
    """ms to the first paint; the run's (minor faults, CPU ms) appended to
    usages."""
    global retried
    for _ in range(5):
        got = first_paint_once(argv, env)
        if got is not None:
            ms, u = got
            if usages is not None:
                usages.append((u.ru_minflt, (u.ru_utime + u.ru_stime) * 1e3))
            return ms
        retried += 1
    raise RuntimeError("%s could not open the display five times in a row" % argv[0])


def page_fault_us():
    """One anonymous page fault's cost here, in µs: the median of 5 passes
    touching 16 MiB once per page."""
    n = 4096
    runs = []
    for _ in range(5):
        m = mmap.mmap(-1, n * 4096)
        t = time.perf_counter_ns()
        for i in range(0, n * 4096, 4096):
            m[i] = 1
        runs.append((time.perf_counter_ns() - t) / n / 1e3)
        m.close()
    return statistics.median(runs)


def bootstrap_ci(ratios, rng):
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(BOOTSTRAP))
    return meds[int(0.025 * BOOTSTRAP)], meds[int(0.975 * BOOTSTRAP) - 1]


def measure(name, argv, env, work):
    out = os.path.join(work, name + ".jsonl")
    agented_argv = [pacer, "run", "--out", out] + (["--config", config] if name == "shop-app" else []) + ["--"] + argv
    idle_env = dict(env, PACER_AGENT_DISABLE="1")
    sides = {"plain": (argv, env), "pacer": (agented_argv, env), "idle": (agented_argv, idle_env)}
    for a, e in sides.values():  # warm the page cache
        first_paint_ms(a, e)
    ms = {k: [] for k in sides}
    usage = {k: [] for k in sides}
    turns = list(itertools.permutations(sides))  # each side before each other as often
    for i in range(pairs):
        for k in turns[i % len(turns)]:
            ms[k].append(first_paint_ms(*sides[k], usages=usage[k]))
    plain, agented = ms["plain"], ms["pacer"]
    ratios = [b / a for a, b in zip(plain, agented)]
    lo, hi = bootstrap_ci(ratios, random.Random(1))
    med = statistics.median(ratios)
    print("%s: time to first paint seen by the X server, %d rounds, GSK_RENDERER=%s"
          % (name, pairs, env.get("GSK_RENDERER", "(unset)")))
    print("  plain        median %8.2f ms" % statistics.median(plain))
    print("  under pacer  median %8.2f ms" % statistics.median(agented))
    print("  ratio        median %8.4f   95%% CI [%.4f, %.4f]   (per pair; target: upper end <= 1.02: %s)"
          % (med, lo, hi, "met" if hi <= 1.02 else "NOT met"))
    print("  where it goes (median per-round difference to plain; the kernel's counts per run, medians):")
    for k, what in (("plain", "plain"), ("idle", "pacer run, agent idle"), ("pacer", "pacer run")):
        diff = statistics.median(b - a for a, b in zip(plain, ms[k]))
        faults = statistics.median(u[0] for u in usage[k])
        cpu = statistics.median(u[1] for u in usage[k])
        print("    %-22s %+7.2f ms   %6d page faults   %7.1f ms CPU" % (what, diff, faults, cpu))


def main():
    for f in (pacer, agent, watcher, shop_app):
        if not os.path.exists(f):
            sys.exit("ttff: %s is missing; build first (the X watcher needs libxdamage-dev)" % f)
    xvfb = None
    env = dict(os.environ, GIO_USE_PROXY_RESOLVER="dummy", NO_AT_BRIDGE="1", PACER_AGENT_QUIET="1")
    env.pop("WAYLAND_DISPLAY", None)
    if renderer != "default":
        env["GSK_RENDERER"] = renderer
    if not env.get("DISPLAY"):
        if not shutil.which("Xvfb"):
            sys.exit("ttff: no display and no Xvfb")
        xvfb, env["DISPLAY"] = start_xvfb()
    print("one page fault here: %.2f us (anonymous pages touched once, median of 5 passes)" % page_fault_us())
    work = tempfile.mkdtemp(prefix="pacer-bench-agent-")
    apps = [("shop-app", [shop_app, "--api", "http://127.0.0.1:9"])]
    factory = shutil.which("gtk4-widget-factory")
    if factory:
        apps.append(("gtk4-widget-factory", [factory]))
    else:
        print("gtk4-widget-factory: not installed (package gtk-4-examples), skipped")
    try:
        for name, argv in apps:
            measure(name, argv, env, work)
        if retried:
            print("(%d run(s) done again: the app could not open the display)" % retried)
    finally:
        if xvfb:
            xvfb.terminate()
            xvfb.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
