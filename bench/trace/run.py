#!/usr/bin/env python3
"""Trace benchmark: what a traced call costs, pacer beside the floor and
uftrace, on the same binaries in one run.

1. Micro: bench/trace/calls.c, N calls of a tiny function, in the modes
     plain    built without -finstrument-functions (the baseline)
     off      built with the flag and linked with libpacer-trace, tracing off
     floor    the same binary with bench/trace/floor.c preloaded: per hook a
              TSC read and a 16-byte store into a thread-local ring, nothing
              else (the least a hook can do)
     pacer    the same binary, tracing on (PACER_TRACE_DIR)
     uftrace  the same binary under `uftrace record --no-libcall` (Debian's
              uftrace; without its PLT hooks on libc, it records what pacer
              records: the functions built with the flag)
   Rounds interleave the modes; figures are medians. Per call:
     loop     wall time of the loop, timed inside the program
     loop CPU the main thread's CPU time in the loop
     CPU      the whole process's CPU time (utime + stime of every thread,
              the writer's included; for uftrace, its recorder too), from
              wait4; this is the figure the ratios use
   each minus plain's, divided by the calls.

2. Real program: SQLite's shell built from Debian's source package
   (bench/trace/build-sqlite.sh) running bench/trace/sqlite.sql, plain and
   instrumented, under the floor, a counting hook (bench/trace/count.c: the
   calls, counted without pacer), `pacer trace record` and `uftrace record`.
   Calls recorded by pacer and by uftrace against the counting hook's count,
   CPU per call, trace bytes per call, then the time to read each trace:
   `pacer trace report` / `export --format chrome` (and perfetto) beside
   `uftrace report` / `uftrace dump --chrome` (output to /dev/null).

usage: bench/trace/run.py [BUILD_DIR]            (default: build-bench)
env:   TRACE_BENCH_CALLS (10000000), TRACE_BENCH_RUNS (9),
       TRACE_BENCH_REAL_RUNS (5), TRACE_BENCH_REAL=0 skips the real program
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class Proc:
    """subprocess with wait4's rusage: Popen.communicate would reap the
    child itself, so read the pipes by hand and wait4 afterwards."""

    @staticmethod
    def run(cmd, env=None, stdin=None, stdout=subprocess.PIPE):
        t0 = time.monotonic_ns()
        p = subprocess.Popen(cmd, env=env, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
        text = p.stdout.read() if stdout == subprocess.PIPE else b""
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic_ns() - t0
        if p.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                       err.decode(errors="replace")[-500:]))
        return text.decode(errors="replace"), wall, int(round((ru.ru_utime + ru.ru_stime) * 1e9))


def med(xs):
    return statistics.median(xs)


def cc(*args):
    subprocess.run([os.environ.get("CC", "cc"), *args], check=True)


def size_of(path, pattern):
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if re.search(pattern, n))


def micro(build, work, have_uftrace):
    calls = int(os.environ.get("TRACE_BENCH_CALLS", "10000000"))
    runs = int(os.environ.get("TRACE_BENCH_RUNS", "9"))
    lib = os.path.join(build, "src", "trace")
    plain, inst = os.path.join(work, "calls-plain"), os.path.join(work, "calls")
    cc("-O2", "-o", plain, os.path.join(HERE, "calls.c"))
    cc("-O2", "-finstrument-functions", "-o", inst, os.path.join(HERE, "calls.c"),
       "-L" + lib, "-lpacer-trace", "-Wl,-rpath," + lib)
    floor = os.path.join(work, "libfloor.so")
    cc("-O2", "-shared", "-fPIC", "-o", floor, os.path.join(HERE, "floor.c"))
    tdir, udir = os.path.join(work, "pacer.trace"), os.path.join(work, "uftrace.data")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("PACER_TRACE")}
    modes = {
        "plain": ([plain], base_env),
        "off": ([inst], base_env),
        "floor": ([inst], dict(base_env, LD_PRELOAD=floor)),
        "pacer": ([inst], dict(base_env, PACER_TRACE_DIR=tdir)),
    }
    if have_uftrace:
        modes["uftrace"] = (["uftrace", "record", "--no-libcall", "-d", udir, inst], base_env)
    res = {m: [] for m in modes}
    for _ in range(runs):
        for m, (cmd, env) in modes.items():
            shutil.rmtree(tdir, ignore_errors=True)
            shutil.rmtree(udir, ignore_errors=True)
            out, wall, cpu = Proc.run(cmd + [str(calls)], env=env)
            kv = dict(x.split("=") for x in out.split() if "=" in x)
            size = None
            if m == "pacer":
                size = size_of(tdir, r"\.ptrace$")
            elif m == "uftrace":
                size = size_of(udir, r"\.dat$")
            res[m].append((int(kv["loop_ns"]), int(kv["loop_cpu_ns"]), cpu, size))

    cpu_name = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu_name = line.split(":", 1)[1].strip()
                break
    print("micro: %d calls of a tiny function (bench/trace/calls.c), medians of %d interleaved runs (%d CPUs, %s)"
          % (calls, runs, os.cpu_count(), cpu_name))
    base = [med(r[i] for r in res["plain"]) for i in range(3)]
    per = {}
    print("  %-8s %14s %14s %18s %12s" % ("mode", "loop ns/call", "loop CPU", "process CPU ns/call", "bytes/event"))
    for m in modes:
        vals = [med(r[i] for r in res[m]) for i in range(3)]
        d = [(vals[i] - base[i]) / calls for i in range(3)]
        per[m] = d
        sizes = [r[3] for r in res[m] if r[3] is not None]
        bpe = "%.2f" % (med(sizes) / (2 * calls)) if sizes else "-"
        if m == "plain":
            print("  %-8s %14s %14s %18s %12s   (%.1f ms loop, %.1f ms process CPU)"
                  % (m, "(base)", "(base)", "(base)", bpe, vals[0] / 1e6, vals[2] / 1e6))
        else:
            print("  %-8s %14.2f %14.2f %18.2f %12s" % (m, d[0], d[1], d[2], bpe))
    ratio = per["pacer"][2] / per["floor"][2]
    print("  pacer / floor   = %.2fx in process CPU per call, the writer included (target <= 1.25x);"
          " %.2fx in the loop's own CPU" % (ratio, per["pacer"][1] / per["floor"][1]))
    print("  pacer's writer and start-up: %.2f ns/call (process CPU - loop CPU)" % (per["pacer"][2] - per["pacer"][1]))
    if have_uftrace:
        print("  uftrace / pacer = %.2fx in process CPU per call" % (per["uftrace"][2] / per["pacer"][2]))
    return ratio


def real(build, work, have_uftrace):
    runs = int(os.environ.get("TRACE_BENCH_REAL_RUNS", "5"))
    try:
        bindir = subprocess.run([os.path.join(HERE, "build-sqlite.sh"), os.path.join(build, "trace-sqlite")],
                                check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    except subprocess.CalledProcessError as e:
        print("real program: SQLite could not be built (%s); skipped" % e)
        return
    plain, inst = os.path.join(bindir, "sqlite3-plain"), os.path.join(bindir, "sqlite3-traced")
    with open(os.path.join(bindir, "source")) as f:
        source = f.read().strip()
    sql = os.path.join(HERE, "sqlite.sql")
    floor, count = os.path.join(work, "libfloor.so"), os.path.join(work, "libcount.so")
    cc("-O2", "-shared", "-fPIC", "-o", count, os.path.join(HERE, "count.c"), "-lpthread")
    pacer = os.path.join(build, "src", "cli", "pacer")
    tdir, udir = os.path.join(work, "sqlite.trace"), os.path.join(work, "sqlite.uftrace")
    count_out = os.path.join(work, "count.txt")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PACER_TRACE")}
    modes = {
        "plain": ([plain, ":memory:"], env),
        "floor": ([inst, ":memory:"], dict(env, LD_PRELOAD=floor)),
        "count": ([inst, ":memory:"], dict(env, LD_PRELOAD=count, COUNT_OUT=count_out)),
        "pacer": ([pacer, "trace", "record", "-o", tdir, "--", inst, ":memory:"], env),
    }
    if have_uftrace:
        modes["uftrace"] = (["uftrace", "record", "--no-libcall", "-d", udir, inst, ":memory:"], env)
    res = {m: [] for m in modes}
    outputs = {}
    for r in range(runs):
        for m, (cmd, e) in modes.items():
            if m == "pacer":
                shutil.rmtree(tdir, ignore_errors=True)
            if m == "uftrace":
                shutil.rmtree(udir, ignore_errors=True)
            with open(sql) as f:
                out, wall, cpu = Proc.run(cmd, env=e, stdin=f)
            outputs.setdefault(m, out)
            res[m].append((wall, cpu))
    # The last round's traces are kept for reading.
    pacer_rep, t_rep, c_rep = Proc.run([pacer, "trace", "report", tdir])
    _, t_exp, c_exp = Proc.run([pacer, "trace", "export", tdir, "--format", "chrome", "-o", "-"], stdout=subprocess.DEVNULL)
    _, t_pf, c_pf = Proc.run([pacer, "trace", "export", tdir, "--format", "perfetto", "-o", "-"], stdout=subprocess.DEVNULL)
    with open(count_out) as f:
        counted = dict(kv.split("=") for kv in f.read().split())
    counted = int(counted["enters"])
    m = re.search(r"(\d+) calls shown, (\d+) events", pacer_rep)
    pacer_calls = int(m.group(1))
    pacer_bytes = size_of(tdir, r"\.ptrace$")
    same = all(outputs[k] == outputs["plain"] for k in outputs)

    print("real program: SQLite's shell (%s, Debian source package sqlite3, amalgamation built by"
          " bench/trace/build-sqlite.sh) running bench/trace/sqlite.sql, medians of %d interleaved runs" % (source, runs))
    print("  calls: %d counted by a counting hook; pacer recorded %d (%s)%s"
          % (counted, pacer_calls, "equal" if pacer_calls == counted else "DIFFERENT",
             "" if same else "; WARNING: the program's output differed between modes"))
    ucalls = None
    if have_uftrace:
        urep, tu_rep, cu_rep = Proc.run(["uftrace", "report", "-d", udir, "--no-pager"])
        _, tu_exp, cu_exp = Proc.run(["uftrace", "dump", "-d", udir, "--chrome", "--no-pager"], stdout=subprocess.DEVNULL)
        ucalls = 0
        for line in urep.splitlines():
            f = line.split()
            # "  1.634  s   12.983 us           1  main": the calls column precedes the name
            if len(f) >= 6 and f[-2].isdigit():
                ucalls += int(f[-2])
        # a recursive function's rows count each call once; uftrace report's
        # Calls column is per function, so the sum is every call
        print("  uftrace recorded %d (%s)" % (ucalls, "equal" if ucalls == counted else "DIFFERENT"))
    base = med(r[1] for r in res["plain"])
    per = {}
    print("  %-8s %14s %16s %18s %14s" % ("mode", "wall ms", "process CPU ms", "CPU ns/call", "bytes/call"))
    for k in modes:
        wall, cpu = med(r[0] for r in res[k]), med(r[1] for r in res[k])
        per[k] = (cpu - base) / counted
        b = "-"
        if k == "pacer":
            b = "%.2f" % (pacer_bytes / counted)
        elif k == "uftrace":
            b = "%.2f" % (size_of(udir, r"\.dat$") / counted)
        print("  %-8s %14.1f %16.1f %18s %14s" % (k, wall / 1e6, cpu / 1e6,
                                                    "(base)" if k == "plain" else "%.2f" % per[k], b))
    print("  pacer / floor   = %.2fx in process CPU per call (the writer and pacer's launcher included)"
          % (per["pacer"] / per["floor"]))
    if have_uftrace:
        print("  uftrace / pacer = %.2fx in process CPU per call; trace size %.2fx"
              % (per["uftrace"] / per["pacer"], size_of(udir, r"\.dat$") / pacer_bytes))
    print("  reading the trace (wall s / CPU s):")
    print("    pacer trace report                 %6.2f / %6.2f" % (t_rep / 1e9, c_rep / 1e9))
    print("    pacer trace export --format chrome %6.2f / %6.2f" % (t_exp / 1e9, c_exp / 1e9))
    print("    pacer trace export --format perfetto %4.2f / %6.2f" % (t_pf / 1e9, c_pf / 1e9))
    if have_uftrace:
        print("    uftrace report                     %6.2f / %6.2f" % (tu_rep / 1e9, cu_rep / 1e9))
        print("    uftrace dump --chrome              %6.2f / %6.2f" % (tu_exp / 1e9, cu_exp / 1e9))


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-bench"))
    if not os.path.exists(os.path.join(build, "src", "trace", "libpacer-trace.so")):
        sys.exit("trace bench: %s/src/trace/libpacer-trace.so missing; build first" % build)
    have_uftrace = shutil.which("uftrace") is not None
    if not have_uftrace:
        print("trace bench: uftrace not installed; skipping it", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="trace-bench-") as work:
        micro(build, work, have_uftrace)
        if os.environ.get("TRACE_BENCH_REAL", "1") != "0":
            print()
            real(build, work, have_uftrace)


if __name__ == "__main__":
    main()
