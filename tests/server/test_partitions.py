"""Day partitions (docs/server.md, "Storage"): records sealed into blocks,
the sub-day rollups of hot days, late records of cold days, retention.

Every answer is held to ground truth computed here from what was sent:
counts exactly, percentiles within the sketches' 1 %, min and max exactly —
for ranges that cut days at every kind of boundary (whole 6-hour and 1-hour
buckets, the minutes left at each end), across days, for one version, after
a restart and after a SIGKILL. pacerd runs with --seal-rows 64, so that the
records go through blocks as they would at scale."""
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import Pacerd, attr, exact_quantile, page_span, proc_kib, span, traces  # noqa: E402

DAY = 86400 * 10**9
HOUR = 3600 * 10**9
T0 = 1_700_006_400 * 10**9  # a UTC midnight (2023-11-15)


def within(got, want, rel=0.01):
    return abs(got - want) <= rel * abs(want) + 1e-9


class Partitions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Pacerd(["--rollup-lag", "0", "--seal-rows", "64"])
        cls.rnd = random.Random(12)
        cls.loads = []  # (ts, version, page, total)
        # day 0 while it is the newest day: hot, into the sub-day rollups
        cls.send([T0 + cls.rnd.randrange(DAY) for _ in range(900)])
        # day 2: day 0 and day 1 are cold from now on
        cls.send([T0 + 2 * DAY + cls.rnd.randrange(DAY) for _ in range(300)])
        # late records of day 0 and day 1: in the daily rollups only, read from the blocks
        cls.send([T0 + cls.rnd.randrange(DAY) for _ in range(400)] +
                 [T0 + DAY + cls.rnd.randrange(DAY) for _ in range(200)])

    @classmethod
    def send(cls, times):
        for k in range(0, len(times), 150):
            for v in ("1.0", "1.1"):
                mine = []
                for ts in times[k:k + 150]:
                    if cls.rnd.random() < 0.5:
                        continue
                    total = round(cls.rnd.lognormvariate(5.0, 0.8), 3)
                    page = cls.rnd.choice(["HomeWindow", "CartWindow"])
                    cls.loads.append((ts, v, page, total))
                    mine.append(page_span(page, ts, total))
                if mine:
                    assert cls.d.ingest("/v1/traces", traces(mine, version=v)) == {}

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def check(self, lo, hi, version=None):
        """/api/v1/pages over [lo, hi) ns (whole seconds) against the loads sent."""
        q = "/api/v1/pages?app=shop&from=%d&to=%d" % (lo // 10**9, hi // 10**9)
        if version:
            q += "&version=" + version
        got = {p["page"]: p for p in self.d.query(q)["pages"]}
        lo, hi = lo // 10**9 * 10**9, hi // 10**9 * 10**9
        want = {}
        for ts, v, page, total in self.loads:
            if lo <= ts < hi and (not version or v == version):
                want.setdefault(page, []).append(total)
        self.assertEqual(sorted(got), sorted(want), q)
        for page, values in want.items():
            self.assertEqual(got[page]["count"], len(values), (q, page))
            m = got[page]["metrics"]["total_ms"]
            self.assertEqual(m["count"], len(values))
            self.assertAlmostEqual(m["min"], min(values), places=6)
            self.assertAlmostEqual(m["max"], max(values), places=6)
            for name, qq in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
                self.assertTrue(within(m[name], exact_quantile(values, qq)), (q, page, name, m[name]))

    def ranges(self):
        """Ranges that cut days in every way the pieces do."""
        m = 60 * 10**9
        return [
            (T0, T0 + DAY),                                   # a whole day
            (T0 + 6 * HOUR, T0 + 18 * HOUR),                  # whole 6-hour buckets
            (T0 + 7 * HOUR, T0 + 9 * HOUR),                   # whole hours
            (T0 + 90 * m, T0 + 20 * HOUR + 10 * m),           # 6 h, hours, and minutes at each end
            (T0 + 13 * m, T0 + 47 * m),                       # inside one hour
            (T0 + 5 * HOUR + 1 * m, T0 + DAY + 7 * HOUR),     # across a midnight, both days cut
            (T0 + 3 * HOUR + 17 * m, T0 + 2 * DAY + 22 * HOUR + 3 * m),  # a whole day between two cut ones
            (T0 + 2 * DAY + 4 * HOUR, T0 + 2 * DAY + 16 * HOUR + 59 * m),  # the hot day
            (T0 - DAY, T0 + 10 * DAY),                        # all of it
        ]

    def test_ranges_are_exact(self):
        for lo, hi in self.ranges():
            with self.subTest(lo=lo, hi=hi):
                self.check(lo, hi)
                self.check(lo, hi, version="1.1")

    def test_records_are_sealed_into_blocks(self):
        db = sqlite3.connect(self.d.db)
        left = db.execute("SELECT COUNT(*) FROM page_loads").fetchone()[0]
        blocks = db.execute("SELECT COUNT(*), SUM(n), MIN(day), MAX(day) FROM blocks WHERE tbl = 0").fetchone()
        hourly = dict(db.execute("SELECT day, hourly FROM partitions WHERE tbl = 0").fetchall())
        # the late records of the cold days settled into the sub-day rollups:
        # a range that cuts the day reads few of them (at most half a seal's
        # and the blocks holding the mark), day 1 has hourly buckets it never
        # had while hot
        late = db.execute("SELECT COALESCE(SUM(b.n), 0) FROM blocks AS b JOIN partitions AS p ON p.tbl = b.tbl"
                          " AND p.day = b.day WHERE b.tbl = 0 AND p.hourly IS NOT NULL AND b.r_hi > p.hourly"
                          ).fetchone()[0]
        day1_hours = db.execute("SELECT SUM(count) FROM subday WHERE kind = 'page' AND width = 3600 AND t >= ?1"
                                " AND t < ?2", ((T0 + DAY) // HOUR, (T0 + 2 * DAY) // HOUR)).fetchone()[0]
        # a block holds one hour at most (late rows make blocks of their hour, not of their day)
        spread = db.execute("SELECT MAX(t_hi / ?1 - t_lo / ?1) FROM blocks", (HOUR,)).fetchone()[0]
        db.close()
        self.assertEqual(spread, 0)
        self.assertLess(late, 2 * 64 + 150)
        self.assertGreater(day1_hours or 0, 50)
        self.assertLess(left, 64 + 150)
        self.assertEqual(left + blocks[1], len(self.loads))
        self.assertEqual((blocks[2], blocks[3]), (T0 // DAY, T0 // DAY + 2))
        # day 0 and 1 are cold (an hourly mark), day 2 hot
        self.assertIsNotNone(hourly[T0 // DAY])
        self.assertIsNotNone(hourly[T0 // DAY + 1])
        self.assertIsNone(hourly[T0 // DAY + 2])

    def test_samples_and_traces_read_blocks(self):
        got = self.d.query("/api/v1/samples?app=shop&version=1.0&limit=100000")
        mine = sorted((x for x in self.loads if x[1] == "1.0"), key=lambda x: -x[0])
        self.assertEqual([r["ts"] for r in got["records"]], [x[0] for x in mine])
        self.assertEqual([r["total_ms"] for r in got["records"]], [x[3] for x in mine])
        self.assertFalse(got["truncated"])
        # a trace whose page load is in a block
        tid = "%032x" % (self.rnd.getrandbits(120) | 1)
        s = page_span("TraceWindow", T0 + 3 * HOUR, 12.5)
        s["traceId"] = tid
        child = span("GET /x", T0 + 3 * HOUR + 1000, 10**6, trace=tid)
        self.assertEqual(self.d.ingest("/v1/traces", traces([s, child])), {})
        filler = [page_span("Filler", T0 + 2 * DAY + i, 1.0) for i in range(200)]  # seals what waits
        self.assertEqual(self.d.ingest("/v1/traces", traces(filler)), {})
        self.loads.extend((T0 + 2 * DAY + i, "1.0", "Filler", 1.0) for i in range(200))
        self.loads.append((T0 + 3 * HOUR, "1.0", "TraceWindow", 12.5))
        db = sqlite3.connect(self.d.db)
        in_table = db.execute("SELECT COUNT(*) FROM page_loads WHERE page = 'TraceWindow'").fetchone()[0]
        db.close()
        self.assertEqual(in_table, 0)  # sealed
        spans = self.d.query("/api/v1/traces/" + tid)["spans"]
        self.assertEqual([x["name"] for x in spans], ["TraceWindow", "GET /x"])
        self.assertEqual(spans[0]["record"], "page")

    def test_zz_restart_and_sigkill_keep_the_answers(self):
        before = [self.d.query("/api/v1/pages?app=shop&from=%d&to=%d" % (lo // 10**9, hi // 10**9))
                  for lo, hi in self.ranges()]
        self.d.restart()
        self.assertEqual([self.d.query("/api/v1/pages?app=shop&from=%d&to=%d" % (lo // 10**9, hi // 10**9))
                          for lo, hi in self.ranges()], before)
        # late rows again, then a SIGKILL before anything is written twice
        self.send([T0 + self.rnd.randrange(DAY) for _ in range(100)])
        self.d.kill(9)
        self.d.start()
        for lo, hi in self.ranges():
            self.check(lo, hi)


class ManyDays(unittest.TestCase):
    def test_records_over_thousands_of_days_keep_memory_bounded(self):
        """A client whose records each fall on a day of their own (a clock gone
        wrong, or worse): 20 000 days in four requests, from 2000 to 2054 —
        what cleaning lets in with the largest clock skew it takes (the days
        past tomorrow are cold from the start, so no sub-day rollups for
        them). Every record is stored and counted; the writer's rollup
        groups in memory stay bounded (it writes them in the middle of a
        group when there are too many), and so does RSS."""
        conf = os.path.join(tempfile.mkdtemp(prefix="pacerd-days-"), "analysis.conf")
        with open(conf, "w") as f:
            f.write("max-clock-skew-s = 1000000000\n")
        d = Pacerd(["--rollup-lag", "0", "--analysis-config", conf])
        try:
            start = proc_kib(d.proc.pid, "VmHWM")
            for k in range(4):
                spans = [page_span("P%d" % (i % 7), (11000 + k * 5000 + i) * DAY + 5, 10.0 + i % 100)
                         for i in range(5000)]
                self.assertEqual(d.ingest("/v1/traces", traces(spans)), {})
            pages = d.query("/api/v1/pages?app=shop")["pages"]
            self.assertEqual(sum(p["count"] for p in pages), 20000)
            # a range of a thousand whole days in the middle, and one that cuts two of them
            lo, hi = 20000 * DAY, 21000 * DAY
            got = d.query("/api/v1/pages?app=shop&from=%d&to=%d" % (lo // 10**9, hi // 10**9))["pages"]
            self.assertEqual(sum(p["count"] for p in got), 1000)
            got = d.query("/api/v1/pages?app=shop&from=%d&to=%d" % (lo // 10**9 + 1, hi // 10**9 + 10))["pages"]
            self.assertEqual(sum(p["count"] for p in got), 1000)  # day 20000's is at +5 ns: out; day 21000's in
            grown = proc_kib(d.proc.pid, "VmHWM") - start
            self.assertLess(grown, 160 * 1024, "peak RSS grew by %d KiB" % grown)
        finally:
            d.close()
            shutil.rmtree(os.path.dirname(conf), ignore_errors=True)


class LateSpread(unittest.TestCase):
    """Records that come in no order of time, days after their day (an
    import, spools of many devices): each seal holds a few of each hour of
    ten cold days. They settle into the sub-day rollups, and their small
    blocks are merged into blocks of their hour as they do."""

    @classmethod
    def setUpClass(cls):
        cls.d = Pacerd(["--rollup-lag", "0", "--seal-rows", "64"])
        cls.rnd = random.Random(7)
        cls.loads = []
        cls.send([T0 + 20 * DAY + cls.rnd.randrange(HOUR) for _ in range(100)])  # the hot day
        late = [T0 + k * DAY + h * HOUR + cls.rnd.randrange(HOUR) for k in range(10) for h in (3, 14)
                for _ in range(60)]
        cls.rnd.shuffle(late)
        cls.send(late)
        cls.send([T0 + 20 * DAY + HOUR + i for i in range(300)])  # seals what waits

    send = classmethod(Partitions.send.__func__)
    check = Partitions.check
    tearDownClass = classmethod(Partitions.tearDownClass.__func__)

    def test_late_records_settle_and_their_blocks_merge(self):
        m = 60 * 10**9
        for lo, hi in [(T0 + 3 * HOUR + 10 * m, T0 + 14 * HOUR + 20 * m),
                       (T0 + 2 * DAY + 3 * HOUR + 59 * m, T0 + 7 * DAY + 14 * HOUR + 1 * m),
                       (T0 + 4 * DAY + 14 * HOUR, T0 + 4 * DAY + 15 * HOUR),
                       (T0, T0 + 21 * DAY)]:
            with self.subTest(lo=lo, hi=hi):
                self.check(lo, hi)
                self.check(lo, hi, version="1.0")
        db = sqlite3.connect(self.d.db)
        n, rows = db.execute("SELECT COUNT(*), SUM(n) FROM blocks WHERE tbl = 0 AND day < ?1",
                             (T0 // DAY + 10,)).fetchone()
        late = db.execute("SELECT COALESCE(SUM(b.n), 0) FROM blocks AS b JOIN partitions AS p ON p.tbl = b.tbl"
                          " AND p.day = b.day WHERE b.tbl = 0 AND p.hourly IS NOT NULL AND b.r_hi > p.hourly"
                          ).fetchone()[0]
        db.close()
        self.assertEqual(rows, sum(1 for x in self.loads if x[0] < T0 + 10 * DAY))
        # a seal of 64 holds ~3 records of each of the 20 hours; merged, a
        # block holds those of every seal since the day last settled
        self.assertGreater(rows / n, 7)  # unmerged: ~3.8
        self.assertLess(late, 10 * 64)


class Retention(unittest.TestCase):
    def test_old_days_are_dropped_whole_and_rollups_kept_longer(self):
        for seal in ("32", "32768"):  # the records in blocks, or still in their table
            with self.subTest(seal_rows=seal):
                self.check_retention(seal)

    def check_retention(self, seal):
        today = time.time_ns() // DAY * DAY
        d = Pacerd(["--rollup-lag", "0", "--seal-rows", seal])
        try:
            sent = {}
            for k in range(8):  # 0 to 7 days ago
                day = today - k * DAY
                spans = [page_span("P%d" % (i % 2), day + i * 60 * 10**9, 100.0 + i) for i in range(50)]
                spans.append(span("op", day + 5 * 10**9, 10**6, [attr("a", k)]))
                self.assertEqual(d.ingest("/v1/traces", traces(spans)), {})
                logs = {"resourceLogs": [{"resource": {"attributes": [attr("service.name", "shop")]},
                                          "scopeLogs": [{"logRecords": [
                                              {"timeUnixNano": str(day + 10**9), "body": {"stringValue": "l%d" % k}}]}]}]}
                self.assertEqual(d.ingest("/v1/logs", logs), {})
                sent[k] = 50
            d.kill(15)
            d.extra_args = ["--rollup-lag", "0", "--seal-rows", seal, "--retention-days", "3",
                            "--rollup-retention-days", "5"]
            d.start()

            def dropped():  # the partitions, then the daily rollups, go last
                db = sqlite3.connect(d.db)
                days = {r[0] for r in db.execute("SELECT day FROM partitions")}
                rollups = db.execute("SELECT MIN(day) FROM rollup_counts").fetchone()[0]
                db.close()
                return min(days) >= today // DAY - 3 and rollups >= today // DAY - 5
            deadline = time.monotonic() + 20
            while not dropped():
                self.assertLess(time.monotonic(), deadline, "old partitions still there")
                time.sleep(0.1)
            db = sqlite3.connect(d.db)
            if seal == "32":
                self.assertEqual(db.execute("SELECT MIN(day) FROM blocks").fetchone()[0], today // DAY - 3)
            self.assertEqual(db.execute("SELECT COUNT(*) FROM page_loads WHERE ts < ?",
                                        (today - 3 * DAY,)).fetchone()[0], 0)
            left = db.execute("SELECT COUNT(*) FROM page_loads").fetchone()[0] + \
                (db.execute("SELECT SUM(n) FROM blocks").fetchone()[0] or 0)
            self.assertEqual(left, 4 * 50)
            self.assertEqual(db.execute("SELECT COUNT(*) FROM spans WHERE ts < ?", (today - 3 * DAY,)).fetchone()[0],
                             0)
            self.assertEqual(db.execute("SELECT COUNT(*) FROM logs WHERE ts < ?", (today - 3 * DAY,)).fetchone()[0], 0)
            self.assertEqual(db.execute("SELECT MIN(day) FROM rollup_counts").fetchone()[0], today // DAY - 5)
            db.close()
            # whole days answer from the daily rollups as long as they are kept; raw reads stop at 3 days
            pages = d.query("/api/v1/pages?app=shop")["pages"]
            self.assertEqual(sum(p["count"] for p in pages), sum(sent[k] for k in range(6)))
            self.assertEqual(len(d.query("/api/v1/spans/search?app=shop")["spans"]), 4)
            self.assertEqual(len(d.query("/api/v1/logs?app=shop")["logs"]), 4)
            # what is older than the store keeps is refused, and said so
            r = d.ingest("/v1/traces", traces([page_span("Old", today - 5 * DAY, 5.0)]))
            self.assertEqual(r["partialSuccess"]["rejectedSpans"], "1")
            self.assertIn("older than the store keeps (--retention-days 3)", r["partialSuccess"]["errorMessage"])
        finally:
            d.close()

    def test_rollups_are_not_kept_shorter_than_records(self):
        for args, why in ((["--rollup-retention-days", "3"], "give --retention-days too"),
                          (["--retention-days", "5", "--rollup-retention-days", "3"], "at most 3")):
            with self.assertRaises(RuntimeError) as e:
                Pacerd(args)
            self.assertIn(why, str(e.exception))


def net_span(ts, pattern_i, ms, status, nbytes):
    attrs = [attr("pacer.type", "net"), attr("pacer.lib", "curl"), attr("pacer.method", "GET"),
             attr("pacer.url", "http://api.example/api/p%d/%d" % (pattern_i, ts % 1000)),
             attr("pacer.status", status), attr("pacer.total_ms", float(ms)), attr("pacer.bytes_received", nbytes),
             attr("pacer.content_type", "image/png" if pattern_i == 2 else "application/json")]
    return span("GET /api/p%d" % pattern_i, ts, int(ms * 1e6), attrs)


class DashboardReads(unittest.TestCase):
    """The dashboard's reads of single records (/api/v1/records,
    /api/v1/request_stats) over records sealed into blocks answer as over
    the same records still waiting in their tables: two pacerds, one
    sealing every 16 records, the same records of two days and two
    versions, ranges that cut the days."""

    def test_sealed_records_answer_as_unsealed_ones(self):
        rnd = random.Random(11)
        loads = [page_span("P%d" % (i % 3), T0 + rnd.randrange(2 * DAY), round(rnd.uniform(5, 900), 3))
                 for i in range(400)]
        nets = [net_span(T0 + rnd.randrange(2 * DAY), i % 4, round(rnd.uniform(5, 500), 3),
                         500 if i % 7 == 0 else 200, 300 * 1024 if i % 4 == 2 else 1000 + i)
                for i in range(400)]
        sealed = Pacerd(["--seal-rows", "16", "--rollup-lag", "0"])
        plain = Pacerd()
        try:
            for d in (sealed, plain):
                for k in range(0, 400, 50):
                    for version, part in (("1.0", loads[k:k + 25] + nets[k:k + 25]),
                                          ("2.0", loads[k + 25:k + 50] + nets[k + 25:k + 50])):
                        self.assertEqual(d.ingest("/v1/traces", traces(part, version=version)), {})
            sealed.kill(9)  # what the blocks hold, read back from the file
            sealed.start()
            db = sqlite3.connect(sealed.db)
            self.assertGreater(db.execute("SELECT count(*) FROM blocks").fetchone()[0], 10)
            db.close()
            lo, hi = (T0 + DAY // 3) // 10**9, (T0 + DAY + DAY // 2) // 10**9
            want = {}
            for s in loads:
                ts = int(s["startTimeUnixNano"])
                if lo * 10**9 <= ts < hi * 10**9:
                    want.setdefault(s["name"], []).append(
                        [a["value"]["doubleValue"] for a in s["attributes"] if a["key"] == "pacer.total_ms"][0])
            queries = []
            for rng in ("", "&from=%d&to=%d" % (lo, hi)):
                for ver in ("", "&version=2.0"):
                    queries.append("/api/v1/request_stats?app=shop" + rng + ver)
                    for typ, sort in (("page", "total_ms"), ("page", "newest"), ("net", "total_ms"),
                                      ("net", "newest")):
                        queries.append("/api/v1/records?app=shop&type=%s&sort=%s&limit=7%s%s" % (typ, sort, rng, ver))
                    queries.append("/api/v1/records?app=shop&type=page&name=P1&sort=total_ms&limit=5" + rng + ver)
            for q in queries:
                self.assertEqual(sealed.query(q), plain.query(q), q)
            got = sealed.query("/api/v1/records?app=shop&type=page&name=P1&sort=total_ms&limit=5&from=%d&to=%d"
                               % (lo, hi))
            self.assertEqual([r["total_ms"] for r in got["records"]], sorted(want["P1"], reverse=True)[:5])
            stats = sealed.query("/api/v1/request_stats?app=shop")
            self.assertEqual(sorted((p["pattern"], p["count"]) for p in stats["requests"]),
                             [("/api/p%d/{id}" % i, 100) for i in range(4)])
        finally:
            sealed.close()
            plain.close()


if __name__ == "__main__":
    unittest.main()
