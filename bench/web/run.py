#!/usr/bin/env python3
"""The dashboard's load time over a store of 1,000,000 page loads (make bench).

  bench/web/run.py BUILD_DIR

The store: the query benchmark's database (bench/server/run.sh: 1,000,000
page loads, 20 pages, 2 versions, 30 days, built through the ingest path;
built here too when missing), copied once to BUILD_DIR/pacerd-bench/web-1m.db
with a generated month of start-ups, requests, jank and frames beside it
(tests/web/dashdata.py), so that every page has data. pacerd serves it with
the dashboard of BUILD_DIR/web; Debian's chromium (playwright-core) logs in
and loads each page 7 times (after one warm-up load), each in a fresh
document, over the whole 31 days: navigation → the page's data drawn. Prints
per page the median and the worst load, the median time its API requests
took together (the server's share; the rest is the browser's), and the
median's ratio to the target of 1 s."""
import json
import os
import shutil
import statistics
import subprocess
import sqlite3
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "web"))
import dashdata  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else "build-bench"
work = os.path.join(build, "pacerd-bench")
os.makedirs(work, exist_ok=True)
chromium = shutil.which("chromium") or "/usr/bin/chromium"
if not (os.path.isfile(os.path.join(build, "web", "index.html")) and os.path.exists(chromium)
        and os.path.isdir(os.path.join(ROOT, "web", "node_modules", "playwright-core"))):
    print("  skipped: needs the built dashboard (%s/web), chromium and web/node_modules" % build)
    sys.exit(0)

tmp = tempfile.mkdtemp(prefix="pacer-webbench-")
admin = "admin-%d" % time.time_ns()
key = "benchkey-%d" % time.time_ns()
open(os.path.join(tmp, "admin"), "w").write(admin + "\n")
open(os.path.join(tmp, "keys"), "w").write("bench %s\n" % key)


def start(db, web=True):
    args = [os.path.join(build, "src", "server", "pacerd"), "--listen", "127.0.0.1:0", "--db", db,
            "--admin-token-file", os.path.join(tmp, "admin"), "--keys-file", os.path.join(tmp, "keys")]
    if web:
        args += ["--web-root", os.path.join(build, "web")]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if "listening on" not in line:
        raise SystemExit("pacerd did not start: %r" % line)
    return p, line.split("listening on ")[1].strip()


def stop(p):
    p.terminate()
    p.wait(timeout=60)


def rows(db):
    """The page loads of a store: the daily rollups count every one (most
    live in blocks, docs/server.md "Storage")."""
    try:
        return sqlite3.connect(db).execute(
            "SELECT COALESCE(SUM(count), 0) FROM rollup_counts WHERE kind = 'page'").fetchone()[0]
    except sqlite3.Error:
        return 0


# the times of the page loads (tbl 0), sealed into blocks or not yet
TIMES_SQL = ("SELECT MIN(lo), MAX(hi) FROM (SELECT MIN(t_lo) AS lo, MAX(t_hi) AS hi FROM blocks WHERE tbl = 0"
             " UNION ALL SELECT MIN(ts), MAX(ts) FROM page_loads)")


pages_db = os.path.join(work, "pages-1m.db")
db = os.path.join(work, "web-1m.db")
try:
    if rows(db) < 1000000:
        if rows(pages_db) < 1000000:
            for f in (pages_db, pages_db + "-wal", pages_db + "-shm"):
                if os.path.exists(f):
                    os.remove(f)
            print("  building %s (1,000,000 page loads over 30 days, through the ingest path)" % pages_db)
            p, base = start(pages_db, web=False)
            subprocess.run([os.path.join(build, "bench", "server", "pacerd-loadgen"), "--port", base.rsplit(":", 1)[1],
                            "--key", key, "--app", "bench", "--spans", "1000000", "--batch", "2000", "--connections", "2",
                            "--fresh", "--pages", "20", "--versions", "2", "--days", "30"], check=True,
                           stdout=subprocess.DEVNULL)
            stop(p)
        con = sqlite3.connect(pages_db)
        con.execute("VACUUM INTO ?", (db,))
        con.close()
        hi = sqlite3.connect(db).execute(TIMES_SQL).fetchone()[1] // 10**9
        p, base = start(db, web=False)
        n = dashdata.send(base, key, dashdata.Gen(app="bench", end_s=hi, days=30, sessions_per_day=24))
        stop(p)
        print("  %s: the 1,000,000 page loads and %d requests of generated start-ups, requests, jank, frames" % (db, n))
    con = sqlite3.connect(db)
    lo, hi = con.execute(TIMES_SQL).fetchone()
    con.close()
    total = rows(db)
    frm, to = lo // 10**9 // 86400 * 86400, (hi // 10**9 // 86400 + 1) * 86400
    p, base = start(db)
    cfg = {"base": base, "token": admin, "query": "app=bench&from=%d&to=%d" % (frm, to), "n": 7, "chromium": chromium,
           "pages": ["overview", "pages", "startup", "requests", "jank", "frames"]}
    cfg_path = os.path.join(tmp, "bench.json")
    json.dump(cfg, open(cfg_path, "w"))
    r = subprocess.run(["node", os.path.join(ROOT, "web", "test", "bench.mjs"), cfg_path], capture_output=True,
                       text=True, timeout=900)
    stop(p)
    if r.returncode:
        raise SystemExit("the browser failed: " + r.stderr[-3000:])
    out = json.loads(r.stdout)
    print("  %d page loads in the store; range %d days; 7 loads per page after a warm-up, chromium headless"
          % (total, (to - frm) // 86400))
    print("  %-10s %10s %10s %14s %9s  %s" % ("page", "median ms", "worst ms", "API ms (med.)", "requests", "ratio to 1 s"))
    for name, runs in out.items():
        ready = statistics.median(x["ready_ms"] for x in runs)
        api = statistics.median(x["api_ms"] for x in runs)
        print("  %-10s %10.0f %10.0f %14.0f %9d  %.2f x" % (name, ready, max(x["ready_ms"] for x in runs), api,
                                                         runs[0]["requests"], ready / 1000))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
