#!/usr/bin/env python3
"""pacerd on ClickHouse beside pacerd on SQLite, in one run on the same
machine (make bench):

  ingest     the load generator's 200 000 page spans (1 000 per request),
             into a fresh store of each kind, alternating, RUNS pairs: with 4
             and with 16 connections, timestamps over 30 days (the ingest
             benchmark's data), and with 4 connections, timestamps in the
             last minute (a fleet's uploads of what just happened): spans/s,
             medians and ClickHouse's ratio to SQLite (target >= 1);
  bytes      per span on disk after those runs: the SQLite file (and its
             WAL); ClickHouse's database once its parts are merged (OPTIMIZE
             FINAL), and its page_loads table alone;
  query      /api/v1/pages (all time, one version, a range cutting two days)
             over CH_ROWS page loads in ClickHouse (written by pacerd-chfill
             with the store's own encoder: the HTTP ingest of 100 M would take
             hours here) and over SQLITE_ROWS in SQLite (the store
             bench/server/scale.sh fills with pacerd-fill, through pacerd's
             ingest handler without HTTP, and shares): p50 and p99 of 50
             requests each (target p99 <= 200 ms at 100 M); bytes per span of
             both data sets.

  bench/server/clickhouse.py BUILD_DIR
  env: RUNS (3; 0 skips the ingest runs), CH_ROWS (100000000), SQLITE_ROWS (50000000; 0 skips
       SQLite's query data set, for ClickHouse's figures alone),
       WORK (BUILD_DIR/pacerd-bench: both stores, ClickHouse's data directory)

The two query data sets are kept under WORK and made again only when
missing. The file system of WORK is named first, with whether it has a
journal: on ext4 without one, every file created scans the inodes deleted
in the last minutes, and ClickHouse creates and deletes files by the
thousand (two per column of every part it writes or merges). A ClickHouse server is started for the run (its
own data directory there, free loopback ports) and stopped at the end."""
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import clickhouse_harness  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build-bench"
RUNS = int(os.environ.get("RUNS", "3"))
CH_ROWS = int(os.environ.get("CH_ROWS", "100000000"))
SQLITE_ROWS = int(os.environ.get("SQLITE_ROWS", "50000000"))
PACERD = os.path.join(BUILD, "src", "server", "pacerd")
LOADGEN = os.path.join(BUILD, "bench", "server", "pacerd-loadgen")
QUERYBENCH = os.path.join(BUILD, "bench", "server", "pacerd-querybench")
CHFILL = os.path.join(BUILD, "bench", "server", "pacerd-chfill")
FILL = os.path.join(BUILD, "bench", "server", "pacerd-fill")
WORK = os.environ.get("WORK") or os.path.join(BUILD, "pacerd-bench")
ADMIN = "admin-bench-token"
KEY = "benchkey-ch"


def start(store_args):
    out = open(os.path.join(WORK, "ch-out"), "w+")
    err = open(os.path.join(WORK, "ch-err"), "w")
    p = subprocess.Popen([PACERD, "--listen", "127.0.0.1:0"] + store_args +
                         ["--admin-token-file", os.path.join(WORK, "ch-admin"), "--keys-file",
                          os.path.join(WORK, "ch-keys")], stdout=out, stderr=err)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out.seek(0)
        m = re.search(r"listening on http://127.0.0.1:(\d+)", out.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    raise SystemExit("pacerd did not start: " + open(os.path.join(WORK, "ch-err")).read())


def stop(p):
    p.terminate()
    p.wait(timeout=120)


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def filesystem(path):
    """'ext4 on /dev/vda (no journal)', from /proc/self/mountinfo and /proc/fs/jbd2."""
    dev = os.stat(path).st_dev
    want = "%d:%d" % (os.major(dev), os.minor(dev))
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if left.split()[2] == want:
                fstype, source = right.split()[:2]
                name = os.path.basename(source)
                journal = ""
                if fstype in ("ext3", "ext4"):
                    has = os.path.isdir("/proc/fs/jbd2") and any(j.startswith(name + "-")
                                                                 for j in os.listdir("/proc/fs/jbd2"))
                    journal = " (journal)" if has else " (no journal)"
                return "%s on %s%s" % (fstype, source, journal)
    return "unknown"


def file_bytes(path):
    return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))


def sqlite_page_spans(path):
    """The page spans a store holds (0 when there is none or it cannot be read)."""
    if not os.path.exists(path):
        return 0
    try:
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        n = con.execute("SELECT SUM(count) FROM rollup_counts WHERE kind = 'page'").fetchone()[0]
        con.close()
        return n or 0
    except sqlite3.Error:
        return 0


def ch_bytes(ch, db, table=None):
    where = " AND table = '%s'" % table if table else ""
    return int(ch.sql("SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '%s'%s" % (db, where))
               .strip() or 0)


def merge(ch, db):
    """Every table's parts merged, partition by partition: what a store that
    has run for a while holds."""
    for (t,) in ch.rows("SELECT name FROM system.tables WHERE database = '%s'" % db):
        for (p,) in ch.rows("SELECT DISTINCT partition FROM system.parts WHERE active AND database = '%s'"
                            " AND table = '%s'" % (db, t)):
            ch.sql("OPTIMIZE TABLE %s.%s PARTITION %s FINAL" % (db, t, p), timeout=3600)


def ingest(ch, backend, connections, spread, n):
    if backend == "sqlite":
        path = os.path.join(WORK, "ch-ingest.db")
        for s in ("", "-wal", "-shm"):
            if os.path.exists(path + s):
                os.remove(path + s)
        args = ["--db", path]
    else:
        db = "ingest%d" % n
        ch.sql("DROP DATABASE IF EXISTS " + db)
        args = ["--clickhouse", ch.url(db)]
    p, port = start(args)
    ch_cpu0 = cpu_s(ch.proc.pid)
    line = subprocess.run([LOADGEN, "--port", str(port), "--key", KEY, "--app", "bench", "--spans", "200000",
                           "--batch", "1000", "--connections", str(connections)] + spread[1], capture_output=True,
                          text=True, check=True).stdout.strip()
    pacerd_cpu = cpu_s(p.pid)
    stop(p)
    ch_cpu = cpu_s(ch.proc.pid) - ch_cpu0
    rate = int(re.search(r"spans_per_s=(\d+)", line).group(1))
    if backend == "sqlite":
        size = (file_bytes(path), None)
    else:
        merge(ch, db)
        size = (ch_bytes(ch, db), ch_bytes(ch, db, "page_loads"))
        ch.sql("DROP DATABASE IF EXISTS " + db)
    print("  %-10s %2d connections, %s: %s pacerd_cpu_s=%.2f%s" % (
        backend, connections, spread[0], line, pacerd_cpu,
        " clickhouse_cpu_s=%.2f" % ch_cpu if backend != "sqlite" else ""))
    return rate, size


def query_figures(port, label):
    now = int(time.time())
    out = {}
    for name, q in (("all time", "app=bench"), ("one version", "app=bench&version=1.1"),
                    ("cut range", "app=bench&from=%d&to=%d" % (now - 20 * 86400 - 4000, now - 86400 * 3 + 7000))):
        line = subprocess.run([QUERYBENCH, "--port", str(port), "--token", ADMIN, "--path", "/api/v1/pages?" + q,
                               "--n", "50"], capture_output=True, text=True, check=True).stdout.strip()
        p50 = float(re.search(r"p50_ms=([\d.]+)", line).group(1))
        p99 = float(re.search(r"p99_ms=([\d.]+)", line).group(1))
        out[name] = (p50, p99)
        print("  %-10s %-12s p50 %7.1f ms  p99 %7.1f ms  (%s)" % (label, name, p50, p99, line))
    return out


def main():
    os.makedirs(WORK, exist_ok=True)
    with open(os.path.join(WORK, "ch-admin"), "w") as f:
        f.write(ADMIN + "\n")
    with open(os.path.join(WORK, "ch-keys"), "w") as f:
        f.write("bench %s\n" % KEY)
    print("stores and ClickHouse's data in %s: %s" % (WORK, filesystem(WORK)))
    if not clickhouse_harness.available():
        print("skipped: %s missing (scripts/install-deps.sh installs it)" % clickhouse_harness.SERVER)
        return
    ch = clickhouse_harness.ClickHouse(directory=os.path.join(WORK, "clickhouse"))
    try:
        print("ingest: %d pairs of 200000 page spans, 1000 per request, SQLite and ClickHouse alternating" % RUNS)
        if RUNS == 0:
            print("  (RUNS=0: skipped)")
        rates = {}
        sizes = {}
        n = 0
        configs = [(4, ("30 days", [])), (16, ("30 days", [])), (4, ("last minute", ["--recent"]))]
        for connections, spread in configs:
            for i in range(RUNS):
                for backend in (("sqlite", "clickhouse") if i % 2 == 0 else ("clickhouse", "sqlite")):
                    n += 1
                    rate, size = ingest(ch, backend, connections, spread, n)
                    rates.setdefault((backend, connections, spread[0]), []).append(rate)
                    if spread[0] == "30 days":
                        sizes.setdefault(backend, []).append(size)
        for connections, spread in configs if RUNS else ():
            s = statistics.median(rates[("sqlite", connections, spread[0])])
            c = statistics.median(rates[("clickhouse", connections, spread[0])])
            print("  %2d connections, %-11s: SQLite median %d spans/s, ClickHouse median %d spans/s: %.2f x SQLite"
                  " (target >= 1)" % (connections, spread[0], s, c, c / s))
        if RUNS:
            sq = statistics.median(x[0] for x in sizes["sqlite"]) / 200000
            cd = statistics.median(x[0] for x in sizes["clickhouse"]) / 200000
            cp = statistics.median(x[1] for x in sizes["clickhouse"]) / 200000
            print("bytes per span after 200000 (the load generator's spans: random ids, 30 days, a session per request):")
            print("  SQLite file %.1f; ClickHouse database %.1f, its page_loads %.1f (target <= 40)" % (sq, cd, cp))

        # ClickHouse: 100 M
        db = "q%d" % CH_ROWS
        have = 0
        if db in ch.sql("SHOW DATABASES").split():
            have = int(ch.sql("SELECT count() FROM %s.page_loads" % db).strip() or 0)
        merged = os.path.join(WORK, db + ".merged")
        if have != CH_ROWS:
            ch.sql("DROP DATABASE IF EXISTS " + db)
            if os.path.exists(merged):
                os.remove(merged)
            print("query: writing %d page loads into ClickHouse (pacerd-chfill; once, kept in %s)" % (CH_ROWS, WORK))
            t0 = time.monotonic()
            subprocess.run([CHFILL, "--url", ch.url(db), "--rows", str(CH_ROWS)], check=True, stderr=subprocess.DEVNULL)
            print("  %.0f s" % (time.monotonic() - t0))
        if not os.path.exists(merged):
            t0 = time.monotonic()
            merge(ch, db)
            open(merged, "w").close()
            print("  merged in %.0f s" % (time.monotonic() - t0))
        p, port = start(["--clickhouse", ch.url(db)])
        print("query: /api/v1/pages, 50 requests each")
        chq = query_figures(port, "ClickHouse")
        stop(p)
        chb = ch_bytes(ch, db) / CH_ROWS
        chp = ch_bytes(ch, db, "page_loads") / CH_ROWS
        print("bytes per page span, ClickHouse at %g M: %.1f" % (CH_ROWS / 1e6, chb))
        for (t, b) in ch.rows("SELECT table, sum(bytes_on_disk) FROM system.parts WHERE active AND database = '%s'"
                              " GROUP BY table ORDER BY table" % db):
            print("  %-12s %5.2f" % (t, int(b) / CH_ROWS))
        for (t, c, b) in ch.rows("SELECT table, name, data_compressed_bytes FROM system.columns WHERE database = '%s'"
                                 " AND table IN ('page_loads', 'trace_index') AND data_compressed_bytes > 0"
                                 " ORDER BY table, name" % db):
            print("  %-12s   %-16s %5.2f" % (t, c, int(b) / CH_ROWS))
        if SQLITE_ROWS == 0:
            return
        # SQLite: the store bench/server/scale.sh builds (the same file, filled once)
        path = os.path.join(WORK, "scale-%d.db" % SQLITE_ROWS)
        if sqlite_page_spans(path) != SQLITE_ROWS:
            for s in ("", "-wal", "-shm"):
                if os.path.exists(path + s):
                    os.remove(path + s)
            print("query: writing %d page loads into SQLite (pacerd-fill: pacerd's ingest handler without HTTP;"
                  " once, kept in %s)" % (SQLITE_ROWS, WORK))
            t0 = time.monotonic()
            subprocess.run([FILL, "--db", path, "--spans", str(SQLITE_ROWS), "--days", "30"], check=True,
                           stdout=subprocess.DEVNULL)
            print("  %.0f s" % (time.monotonic() - t0))
        p, port = start(["--db", path])
        sqq = query_figures(port, "SQLite")
        stop(p)
        sqb = file_bytes(path) / SQLITE_ROWS
        print("side by side:")
        print("  %-12s %28s %28s" % ("", "ClickHouse, %g M" % (CH_ROWS / 1e6), "SQLite, %g M" % (SQLITE_ROWS / 1e6)))
        for name in ("all time", "one version", "cut range"):
            print("  %-12s %12.1f ms (p99 %6.1f) %12.1f ms (p99 %6.1f)   ClickHouse p99 = %.2f x the target of 200 ms"
                  % (name, chq[name][0], chq[name][1], sqq[name][0], sqq[name][1], chq[name][1] / 200))
        print("  %-12s %22.1f (page_loads %.1f) %16.1f" % ("bytes/span", chb, chp, sqb))
    finally:
        ch.close()


if __name__ == "__main__":
    main()
