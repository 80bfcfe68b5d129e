"""The ClickHouse store without a single writer: two pacerd instances on one
database, batches sent to both — one after the other (the second is a
duplicate), at the same moment (one attempt's batch is fresh, the other's a
retry), after an attempt that wrote its rows and could not commit (its
rows are read once, its batch counted by the retry), and with a slow fresh
attempt committing after its retry did (it counts instead, never both) —
checked through the query API before and after consolidation, against the
exact numbers sent. Then: credentials from a file, bad URLs, retention, and
ClickHouse refusing inserts, going away and coming back. Skipped (exit 77) without
clickhouse-server (scripts/install-deps.sh installs it)."""
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import clickhouse_harness  # noqa: E402
from pacerd_harness import ADMIN, KEYS, PACERD, Pacerd, Poster, healthz_probes, page_span, scrape, span, traces  # noqa: E402

T0 = 1_700_006_400 * 10**9
ARGS = ["--clickhouse-slot", "2", "--clickhouse-settle", "10", "--clickhouse-day", "10"]


def body(n, page, base):
    return traces([page_span(page, base + i * 1000, 10.0 + i) for i in range(n)])


class TwoInstances(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.a = Pacerd(ARGS, backend="clickhouse")
        cls.b = Pacerd(ARGS, backend="clickhouse", database=cls.a.database)

    @classmethod
    def tearDownClass(cls):
        cls.b.close()
        cls.a.close()

    def count(self, page, d=None):
        pages = {p["page"]: p for p in (d or self.a).query("/api/v1/pages?app=shop")["pages"]}
        p = pages.get(page)
        return (p["count"], p["metrics"]["total_ms"]["count"]) if p else (0, 0)

    def raw(self, page):
        return self.a.sql("SELECT count(), uniqExact(span_id) FROM page_loads WHERE page = '%s'" % page)[0]

    def test_resent_to_the_other_instance_is_a_duplicate(self):
        x = body(40, "DupWindow", T0)
        self.assertEqual(self.a.ingest("/v1/traces", x, batch_id="dup-1"), {})
        self.assertEqual(self.b.ingest("/v1/traces", x, batch_id="dup-1"), {})  # after a lost answer
        self.assertEqual(self.count("DupWindow"), (40, 40))
        self.assertEqual(self.count("DupWindow", self.b), (40, 40))
        # the duplicate stored nothing new: 40 identities (a group commit that failed under load
        # and ran again may have left a copy of the first's rows, which reads drop)
        self.assertEqual(self.raw("DupWindow")[1], 40)
        self.assertIn(self.raw("DupWindow")[0], (40, 80))
        m = self.a.sql("SELECT count(), sum(fresh) FROM pending WHERE kind = -1 AND batch = 'dup-1'")[0]
        self.assertEqual(m, (1, 1))

    def test_the_same_batches_at_once_on_both(self):
        n = 24
        bodies = [body(30, "RaceWindow", T0 + k * 10**9) for k in range(n)]
        errors = []

        def send(d, k, gate):
            gate.wait()
            st, _, _ = d.request("POST", "/v1/traces", bodies[k], token=KEYS["shop"],
                                 headers={"X-Pacer-Batch-Id": "race-%d" % k})
            if st != 200:
                errors.append((k, st))

        for k in range(n):
            gate = threading.Barrier(2)
            ts = [threading.Thread(target=send, args=(d, k, gate)) for d in (self.a, self.b)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        self.assertEqual(errors, [])
        self.assertEqual(self.count("RaceWindow"), (n * 30, n * 30))
        self.assertEqual(self.raw("RaceWindow")[1], n * 30)
        # every batch has exactly one fresh attempt at most, and some attempt of it committed
        rows = self.a.sql("SELECT batch, sum(fresh), count() FROM pending WHERE kind = -1 AND batch LIKE 'race-%'"
                          " GROUP BY batch")
        self.assertEqual(len(rows), n)
        self.assertTrue(all(f <= 1 for _, f, _ in rows), rows)

    def test_an_attempt_that_could_not_commit_then_the_retry(self):
        x = body(25, "CutWindow", T0 + 5 * 10**12)
        self.a.ch.sql("DETACH TABLE pending", self.a.database)  # the commit fails: rows written, no commit
        try:
            st, _, _ = self.a.request("POST", "/v1/traces", x, token=KEYS["shop"], headers={"X-Pacer-Batch-Id": "cut-1"})
            self.assertEqual(st, 503)
        finally:
            self.a.ch.sql("ATTACH TABLE pending", self.a.database)
        self.assertEqual(self.raw("CutWindow"), (25, 25))  # the rows of the attempt that did not commit
        self.assertEqual(self.count("CutWindow"), (0, 0))  # counted by no query
        self.assertEqual(self.b.ingest("/v1/traces", x, batch_id="cut-1"), {})  # the uploader sends it again
        self.assertEqual(self.raw("CutWindow"), (50, 25))  # twice on disk, read once
        self.assertEqual(self.count("CutWindow"), (25, 25))
        page = self.a.query("/api/v1/samples?app=shop&version=1.0&limit=100000")["records"]
        self.assertEqual(sum(1 for r in page if r.get("page") == "CutWindow"), 25)

    def test_a_slow_fresh_attempt_committing_after_its_retry(self):
        x = body(20, "SlowWindow", T0 + 6 * 10**12)
        self.a.ch.sql("DETACH TABLE pending", self.a.database)
        try:
            self.assertEqual(self.a.request("POST", "/v1/traces", x, token=KEYS["shop"],
                                            headers={"X-Pacer-Batch-Id": "slow-1"})[0], 503)
        finally:
            self.a.ch.sql("ATTACH TABLE pending", self.a.database)
        self.assertEqual(self.b.ingest("/v1/traces", x, batch_id="slow-1"), {})  # the retry commits first
        self.assertEqual(self.count("SlowWindow"), (20, 20))
        # now the first attempt commits after all, as it would have: fresh, the same rows
        retry = self.a.sql("SELECT att FROM pending WHERE kind = -1 AND batch = 'slow-1'")[0][0]
        begun = [r[0] for r in self.a.sql("SELECT att FROM attempts WHERE batch = 'slow-1'")]
        self.assertEqual(len(begun), 2)
        fresh = [a for a in begun if a != retry][0]  # the attempt that wrote its rows and did not commit
        cols = "kind, app, version, name, grain, t, cnt, failed, sk"
        self.a.ch.sql("INSERT INTO pending (att, rday, batch, fresh, %s) SELECT %d, rday, batch, 1, %s FROM pending"
                      " WHERE att = %d AND kind = -1 UNION ALL SELECT %d, rday, '', 1, %s FROM pending"
                      " WHERE att = %d AND kind >= 0" % (cols, fresh, cols, retry, fresh, cols, retry), self.a.database)
        self.assertEqual(self.count("SlowWindow"), (20, 20))  # the fresh attempt counts, the retry no more
        self.a.wait_consolidated()
        self.assertEqual(self.count("SlowWindow"), (20, 20))

    def test_zz_after_consolidation(self):
        self.a.wait_consolidated()
        self.assertEqual(self.count("RaceWindow"), (24 * 30, 24 * 30))
        self.assertEqual(self.count("DupWindow"), (40, 40))
        self.assertEqual(self.count("CutWindow"), (25, 25))
        # both instances ran the keeper: a slot done twice is read once
        slots = self.a.sql("SELECT lvl, slot, count() c FROM slots GROUP BY lvl, slot")
        self.assertTrue(slots)


class Operation(unittest.TestCase):
    def test_credentials_from_a_file(self):
        ch = clickhouse_harness.shared()
        d = Pacerd(backend="clickhouse")
        try:
            d.kill(15)
            path = os.path.join(d.dir, "clickhouse-url")
            with open(path, "w") as f:
                f.write(ch.url(d.database, user="pacer") + "\n")
            d.store_args = ["--clickhouse-file", path]
            d.start()
            self.assertEqual(d.ingest("/v1/traces", body(3, "CredWindow", T0), batch_id="cred"), {})
            self.assertEqual(d.query("/api/v1/pages?app=shop")["pages"][0]["count"], 3)
            d.kill(15)
            with open(path, "w") as f:
                f.write(ch.url(d.database, user="pacer").replace(clickhouse_harness.PASSWORD, "wrong-secret") + "\n")
            with self.assertRaises(RuntimeError) as e:
                d.start()
            self.assertIn("pacer@127.0.0.1", str(e.exception))
            self.assertIn("Wrong password", str(e.exception))
            self.assertNotIn("wrong-secret", str(e.exception))
            self.assertNotIn(clickhouse_harness.PASSWORD, d.stderr_text())
        finally:
            d.proc = None
            d.close()

    def test_requests_on_their_way_commit_together(self):
        # an upload whose body is still arriving, and three small ones meanwhile:
        # with --clickhouse-gather the writer waits for the one on its way, so one
        # attempt inserts all four; without, the small ones commit and are
        # answered while it is still arriving
        for gather in ("5000", "0"):
            d = Pacerd(["--clickhouse-gather", gather, "--threads", "8"], backend="clickhouse")
            self.addCleanup(d.close)
            tag = "gather%s-" % gather
            big = json.dumps(body(2000, "GatherWindow0", T0)).encode()
            c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
            c.putrequest("POST", "/v1/traces")
            for k, v in (("Authorization", "Bearer " + KEYS["shop"]), ("Content-Type", "application/json"),
                         ("Content-Length", str(len(big))), ("X-Pacer-Batch-Id", tag + "0")):
                c.putheader(k, v)
            c.endheaders()
            c.send(big[:len(big) // 2])
            # pacerd has its headers (it admitted it) and holds half its body
            deadline = time.monotonic() + 60
            while scrape(d)["pacerd_http_body_bytes_in_flight"] < len(big) // 2:
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.02)
            out = [None] * 4

            def send(i):
                out[i] = d.ingest("/v1/traces", body(50, "GatherWindow%d" % i, T0 + i * 10**11),
                                  batch_id=tag + str(i))

            threads = [threading.Thread(target=send, args=(i,)) for i in (1, 2, 3)]
            for t in threads:
                t.start()
            if gather == "0":
                for t in threads:
                    t.join(60)
                self.assertEqual(out[1:], [{}] * 3)  # answered before the large one is complete
            else:
                time.sleep(0.5)
            c.send(big[len(big) // 2:])
            r = c.getresponse()
            self.assertEqual((r.status, json.loads(r.read())), (200, {}))
            c.close()
            for t in threads:
                t.join()
            self.assertEqual(out[1:], [{}] * 3)
            atts = dict(d.sql("SELECT batch, att FROM attempts WHERE batch LIKE '%s%%'" % tag))
            self.assertEqual(sorted(atts), [tag + str(i) for i in range(4)])
            small = {atts[tag + str(i)] for i in (1, 2, 3)}
            if gather != "0":
                self.assertEqual(small, {atts[tag + "0"]})  # one attempt
            else:
                self.assertNotIn(atts[tag + "0"], small)  # the small ones did not wait for it
            pages = {p["page"]: p["count"] for p in d.query("/api/v1/pages?app=shop")["pages"]}
            self.assertEqual([pages.get("GatherWindow%d" % i) for i in range(4)], [2000, 50, 50, 50])

    def test_bad_urls(self):
        creds = Pacerd(backend="sqlite")  # its token and keys files
        creds.kill(15)
        self.addCleanup(creds.close)
        files = ["--admin-token-file", creds.admin_file, "--keys-file", creds.keys_file]
        for url, want in (("ftp://127.0.0.1/x", "expected http://"), ("http:///pacer", "no host"),
                          ("http://127.0.0.1:1/bad-name", "database name"), ("http://127.0.0.1:1/db?x=1", "unknown"),
                          ("http://h1:1,h2:2/db", "cluster=NAME"), ("http://127.0.0.1:1/db", "cannot create")):
            out = subprocess.run([PACERD, "--listen", "127.0.0.1:0", "--clickhouse", url] + files,
                                 capture_output=True, text=True, timeout=60)
            self.assertNotEqual(out.returncode, 0, url)
            self.assertIn(want, out.stderr, url)
        out = subprocess.run([PACERD, "--listen", "127.0.0.1:0", "--db", "x.db", "--clickhouse", "http://h/"] + files,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 2)
        self.assertIn("one of --db, --clickhouse", out.stderr)

    def test_the_application_layer_is_on_the_state_instance(self):
        d = Pacerd(ARGS, backend="clickhouse")
        try:
            self.assertIn("the application layer runs on the instance given --state", d.stderr_text())
            for path in ("/api/v1/issues?app=shop", "/api/v1/issues/0123456789abcdef", "/api/v1/cleaning?app=shop"):
                st, _, text = d.request("GET", path, token=ADMIN)
                self.assertEqual(st, 501, path)
                self.assertIn("runs on the clickhouse instance given --state",
                              text.decode() if isinstance(text, bytes) else text)
            # cleaning still applies: an impossible record is refused and not stored
            bad = traces([page_span("BadWindow", T0 + 5, -3.0)])
            r = d.ingest("/v1/traces", bad, batch_id="bad")
            self.assertEqual(r["partialSuccess"]["rejectedSpans"], "1")
            self.assertEqual(d.sql("SELECT count() FROM page_loads WHERE page = 'BadWindow'")[0][0], 0)
        finally:
            d.close()
        creds = Pacerd(backend="sqlite")
        creds.kill(15)
        self.addCleanup(creds.close)
        for extra in (["--webhook", "http://127.0.0.1:1/hook"],):
            out = subprocess.run([PACERD, "--listen", "127.0.0.1:0", "--clickhouse", "http://127.0.0.1:1/db",
                                  "--admin-token-file", creds.admin_file, "--keys-file", creds.keys_file] + extra,
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertIn("only on the instance that runs the application layer (--state FILE", out.stderr)
        out = subprocess.run([PACERD, "--listen", "127.0.0.1:0", "--db", "x.db", "--state", "s.db",
                              "--admin-token-file", creds.admin_file, "--keys-file", creds.keys_file],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--state: for the ClickHouse store", out.stderr)

    def test_a_database_of_an_older_layout_is_refused(self):
        ch = clickhouse_harness.shared()
        db = "old%d" % os.getpid()
        ch.sql("CREATE DATABASE IF NOT EXISTS " + db)
        self.addCleanup(ch.sql, "DROP DATABASE IF EXISTS " + db)
        ch.sql("CREATE TABLE %s.page_loads (ts Int64, app String) ENGINE = MergeTree ORDER BY ts" % db)
        creds = Pacerd(backend="sqlite")  # its token and keys files
        creds.kill(15)
        self.addCleanup(creds.close)
        out = subprocess.run([PACERD, "--listen", "127.0.0.1:0", "--clickhouse", ch.url(db),
                              "--admin-token-file", creds.admin_file, "--keys-file", creds.keys_file],
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("page_loads was made by an older pacerd (its ts kept whole)", out.stderr)
        # nothing was changed in it
        self.assertEqual(ch.sql("SELECT name FROM system.columns WHERE database = '%s' AND table = 'page_loads'"
                                " ORDER BY name" % db).split(), ["app", "ts"])

    def test_retention_drops_whole_days(self):
        d = Pacerd(ARGS + ["--clickhouse-retention-days", "3"], backend="clickhouse")
        try:
            self.assertEqual(d.ingest("/v1/traces", body(5, "KeepWindow", T0), batch_id="keep"), {})
            today = int(time.time()) // 86400
            # what an earlier day received (a copy, as if it came then)
            cols = [r[0] for r in d.sql("SELECT name FROM system.columns WHERE database = currentDatabase()"
                                        " AND table = 'page_loads' AND default_kind != 'ALIAS'")]
            d.ch.sql("INSERT INTO page_loads SELECT %s FROM page_loads"
                     % ", ".join(str(today - 5) if c == "rday" else c for c in cols), d.database)
            self.assertEqual(d.sql("SELECT count() FROM page_loads")[0][0], 10)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and d.sql("SELECT count() FROM page_loads")[0][0] != 5:
                time.sleep(0.5)
            self.assertEqual(d.sql("SELECT count(), min(rday) FROM page_loads")[0], (5, today))
        finally:
            d.close()

    def test_zz_clickhouse_away_and_back(self):
        d = Pacerd(ARGS, backend="clickhouse")
        try:
            self.assertEqual(d.ingest("/v1/traces", body(10, "AwayWindow", T0), batch_id="away-1"), {})
            d.ch.stop()
            st, h, _ = d.request("POST", "/v1/traces", body(10, "AwayWindow", T0 + 10**9), token=KEYS["shop"],
                                 headers={"X-Pacer-Batch-Id": "away-2"})
            self.assertEqual(st, 503)
            self.assertTrue(h.get("Retry-After"))
            st, _, health = d.request("GET", "/healthz")
            self.assertEqual(st, 503)
            self.assertIn(b"127.0.0.1:%d" % d.ch.http, health)
            self.assertEqual(d.request("GET", "/api/v1/pages?app=shop", token=ADMIN)[0], 503)
            d.ch.start()
            self.assertEqual(d.ingest("/v1/traces", body(10, "AwayWindow", T0 + 10**9), batch_id="away-2"), {})
            self.assertEqual(d.json("GET", "/healthz"), {"status": "ok"})
            pages = {p["page"]: p for p in d.query("/api/v1/pages?app=shop")["pages"]}
            self.assertEqual(pages["AwayWindow"]["count"], 20)
            self.assertIn("writes succeed again", d.stderr_text())
        finally:
            d.close()

    def test_zz_healthz_while_clickhouse_refuses_inserts_or_is_away(self):
        """A client keeps posting while ClickHouse answers reads but refuses
        inserts, then while it is stopped: every check of /healthz answers
        503 for as long as the batches fail (a read that succeeds does not
        make it 200), one line in the log per change; and 200 again once an
        insert commits, nothing acknowledged lost."""
        ch = clickhouse_harness.shared()
        database = "hz%d" % os.getpid()
        self.addCleanup(ch.sql, "DROP DATABASE IF EXISTS " + database)
        d = Pacerd(ARGS, backend="clickhouse", database=database,
                   store_args=["--clickhouse", ch.url(database, user="pacer")])
        self.addCleanup(d.close)
        self.addCleanup(ch.set_pacer_profile, "default")

        def make(k):
            return body(20, "HealthWindow", T0 + k * 10**9), "hz-%d" % k, 20

        self.assertEqual(d.ingest("/v1/traces", body(20, "HealthWindow", T0 - 10**12), batch_id="hz-first"), {})
        acked = 20
        for fault, status in (("reads", "read_only"), ("away", "io")):
            client = Poster(d, lambda k, f=fault: make(k + (0 if f == "reads" else 1000)))
            try:
                if fault == "reads":
                    ch.set_pacer_profile("reads")
                else:
                    ch.stop()
                seen = len(client.outcomes)
                deadline = time.monotonic() + 60
                while 503 not in client.statuses(seen) and time.monotonic() < deadline:
                    time.sleep(0.05)
                probes = healthz_probes(d)
                self.assertEqual([(st, h["status"]) for st, h in probes], [(503, status)] * len(probes), probes)
                failing = len(client.outcomes)
                time.sleep(0.5)
                self.assertNotIn(200, client.statuses(failing))
                if fault == "reads":
                    self.assertIn("readonly mode", probes[-1][1]["error"])
                else:
                    self.assertIn("127.0.0.1:%d" % ch.http, probes[-1][1]["error"])
                self.assertEqual(scrape(d)["pacerd_store_up"], 0)
                if fault == "reads":
                    ch.set_pacer_profile("default")
                else:
                    ch.start()
                deadline = time.monotonic() + 60
                while d.request("GET", "/healthz")[0] != 200 and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.assertEqual(d.json("GET", "/healthz"), {"status": "ok"})
                back = len(client.outcomes)
                deadline = time.monotonic() + 60
                while client.statuses(back).count(200) < 3 and time.monotonic() < deadline:
                    time.sleep(0.05)
            finally:
                client.stop()
            self.assertGreaterEqual(client.statuses(back).count(200), 3)
            acked += client.acked
            log = d.stderr_text()
            self.assertEqual(log.count("writes fail"), 1 if fault == "reads" else 2, log)
            self.assertEqual(log.count("writes succeed again"), 1 if fault == "reads" else 2, log)
        pages = {p["page"]: p for p in d.query("/api/v1/pages?app=shop")["pages"]}
        self.assertEqual(pages["HealthWindow"]["count"], acked)


class SpanIds(unittest.TestCase):
    """A span id that is its trace id's low half (pacer's SDK: a trace of
    one span) is stored as 8 zero bytes in span_xor; another SDK's (random,
    several spans in a trace) as itself XOR that half. Both come back
    exactly: by trace id and through span search, as SQLite answers them."""

    def test_sdk_span_ids_take_no_room_and_come_back(self):
        sdk = [page_span("IdWindow", T0 + 1000 * i, 10.0 + i) for i in range(6)]
        for s in sdk:
            s["spanId"] = s["traceId"][16:]
        foreign = [page_span("IdWindow", T0 + 500 + 1000 * i, 20.0 + i) for i in range(4)]
        shared = "5b8efff798038103d269b633813fc60c"
        plain = [span("render", T0 + 7000 + i, 10**6, trace=shared, span_id="%016x" % (0x9a01ff0042 + i))
                 for i in range(3)]
        plain.append(span("render", T0 + 7100, 10**6, trace=shared, span_id=shared[16:]))
        sent = {s["spanId"]: s["traceId"] for s in sdk + foreign + plain}
        answers = []
        for backend in ("sqlite", "clickhouse"):
            d = Pacerd(ARGS if backend == "clickhouse" else (), backend=backend)
            try:
                for k in range(2):  # sent again: stored once
                    d.ingest("/v1/traces", traces(sdk + foreign + plain), batch_id="ids")
                got = {}
                for t in sorted(set(sent.values())):
                    spans = d.query("/api/v1/traces/" + t)["spans"]
                    for x in spans:
                        self.assertNotIn(x["spanId"], got)
                        got[x["spanId"]] = x["traceId"]
                self.assertEqual(got, sent, backend)
                search = d.query("/api/v1/spans/search?app=shop&name=render")
                self.assertEqual(sorted(x["spanId"] for x in search["spans"]), sorted(x["spanId"] for x in plain))
                answers.append((d.query("/api/v1/traces/" + shared), search,
                                [d.query("/api/v1/traces/" + s["traceId"]) for s in sdk + foreign]))
                if backend == "clickhouse":
                    rows = d.sql("SELECT lower(hex(trace_id)), hex(span_xor) FROM page_loads FINAL")
                    stored = dict(rows)
                    self.assertEqual(len(stored), len(rows))
                    for s in sdk + foreign:
                        low = int(s["traceId"][16:], 16) ^ int(s["spanId"], 16)
                        self.assertEqual(stored[s["traceId"]], "%016X" % low)
                    self.assertEqual(list(stored.values()).count("0" * 16), len(sdk))
                    rows = d.sql("SELECT hex(span_xor) FROM spans FINAL")
                    self.assertEqual(sorted(x for (x,) in rows),
                                     sorted("%016X" % (int(shared[16:], 16) ^ int(x["spanId"], 16)) for x in plain))
            finally:
                d.close()
        self.assertEqual(answers[1], answers[0])


if __name__ == "__main__":
    if not clickhouse_harness.available():
        print("skipped: %s missing (run scripts/install-deps.sh)" % clickhouse_harness.SERVER)
        sys.exit(1 if os.environ.get("CI") else 77)
    unittest.main()
