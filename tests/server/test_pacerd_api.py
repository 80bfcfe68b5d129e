"""pacerd end to end over loopback HTTP: ingest of pacer and plain
OpenTelemetry spans, percentiles against exact values, time ranges, auth,
config service, health, persistence across a restart. Everything runs
twice: with the rollups written right away (--rollup-lag 0) and with every
record waiting to be added to them (--rollup-lag 3600000), when queries
read the records from the raw rows and a SIGKILL leaves the rebuilding of
the rollups to the next start. On ClickHouse (PACER_TEST_STORE=clickhouse)
the second run reads everything from the consolidated rollups instead."""
import json
import os
import random
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import ADMIN, BACKEND, KEYS, Pacerd, attr, exact_quantile, page_span, span, traces  # noqa: E402

DAY = 86400 * 10**9
T0 = 1_700_006_400 * 10**9  # a UTC midnight (2023-11-15)

GOOD_XML = """<pacer>
  <page id="ShopHomeWindow" tag="1"><api id="/api/config"/></page>
  <thresholds jank-ms="500"/>
</pacer>
"""


def within(got, want, rel=0.01):
    return abs(got - want) <= rel * abs(want) + 1e-9


class PacerdApi(unittest.TestCase):
    ARGS = ["--rollup-lag", "0"]
    CONSOLIDATED = False  # ClickHouse: wait until every commit is in the rollups' last tier

    @classmethod
    def setUpClass(cls):
        cls.d = Pacerd(cls.ARGS)
        rnd = random.Random(5)
        # 3 days, 2 pages, 2 versions; each span at a known time
        cls.loads = []  # (ts, version, page, total, initial, status)
        for i in range(3000):
            ts = T0 + rnd.randrange(3 * DAY)
            version = "1.%d" % (i % 2)
            page = "ShopHomeWindow" if i % 3 else "ShopCartWindow"
            total = rnd.lognormvariate(5.5, 0.7)
            initial = total * rnd.uniform(0.1, 0.5)
            status = "abandoned" if i % 50 == 0 else "complete"
            cls.loads.append((ts, version, page, total, initial, status))
        for v in ("1.0", "1.1"):
            mine = [x for x in cls.loads if x[1] == v]
            for k in range(0, len(mine), 500):
                body = traces([page_span(p, ts, tot, ini, status=st) for ts, _, p, tot, ini, st in mine[k:k + 500]],
                              version=v)
                r = cls.d.ingest("/v1/traces", body, batch_id="load-%s-%d" % (v, k))
                assert r == {}, r
        if cls.CONSOLIDATED:
            cls.d.wait_consolidated()

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def check_pages(self, answer, loads):
        pages = {p["page"]: p for p in answer["pages"]}
        names = sorted(set(x[2] for x in loads))
        self.assertEqual(sorted(pages), names)
        for name in names:
            mine = [x for x in loads if x[2] == name]
            got = pages[name]
            self.assertEqual(got["count"], len(mine))
            self.assertEqual(got["incomplete"], sum(1 for x in mine if x[5] != "complete"))
            for metric, idx in (("total_ms", 3), ("initial_draw_ms", 4)):
                values = [x[idx] for x in mine]
                m = got["metrics"][metric]
                self.assertEqual(m["count"], len(values))
                for q in ("p50", "p90", "p99"):
                    want = exact_quantile(values, int(q[1:]) / 100)
                    self.assertTrue(within(m[q], want), "%s %s %s: %s vs exact %s" % (name, metric, q, m[q], want))

    def test_health(self):
        self.assertEqual(self.d.json("GET", "/healthz"), {"status": "ok"})

    def test_pages_all_versions(self):
        self.check_pages(self.d.query("/api/v1/pages?app=shop"), self.loads)

    def test_pages_one_version(self):
        self.check_pages(self.d.query("/api/v1/pages?app=shop&version=1.1"), [x for x in self.loads if x[1] == "1.1"])

    def test_pages_time_range_cutting_days(self):
        # from the middle of day 0 to the middle of day 2: a cut day on each side and one whole day
        lo, hi = T0 + DAY // 3, T0 + 2 * DAY + DAY // 2
        lo_s, hi_s = lo // 10**9, hi // 10**9
        want = [x for x in self.loads if lo_s * 10**9 <= x[0] < hi_s * 10**9]
        self.check_pages(self.d.query("/api/v1/pages?app=shop&from=%d&to=%d" % (lo_s, hi_s)), want)
        # a range inside one day (raw rows only) and one of whole days (rollups only)
        a, b = (T0 + DAY + 1000 * 10**9) // 10**9, (T0 + DAY + 40000 * 10**9) // 10**9
        self.check_pages(self.d.query("/api/v1/pages?app=shop&from=%d&to=%d" % (a, b)),
                         [x for x in self.loads if a * 10**9 <= x[0] < b * 10**9])
        a, b = (T0 + DAY) // 10**9, (T0 + 3 * DAY) // 10**9
        self.check_pages(self.d.query("/api/v1/pages?app=shop&from=%d&to=%d" % (a, b)),
                         [x for x in self.loads if a * 10**9 <= x[0] < b * 10**9])

    def test_schema_names_what_the_answers_hold(self):
        s = self.d.query("/api/v1/schema")
        # the severities grading gives, the most severe first; what the issues API filters by
        self.assertEqual(s["issues"]["severities"], ["critical", "major", "minor"])
        self.assertEqual(s["issues"]["statuses"], ["new", "ongoing", "resolved", "regressed"])
        self.assertIn("slow_page", s["issues"]["kinds"])
        # each group kind's metrics: the record schema's metric fields, with
        # their units and meanings, as `pacer schema` (libpacer) prints them
        p = subprocess.run([os.environ.get("PACER", "build/src/cli/pacer"), "schema", "--format", "json"],
                           capture_output=True, text=True, timeout=30, check=True)
        types = {t["name"]: t for t in json.loads(p.stdout)["types"]}
        for kind, rtype in (("page", "page"), ("startup", "startup"), ("request", "net")):
            want = [{"name": f["name"], "unit": f["unit"], "meaning": f["meaning"]}
                    for f in types[rtype]["fields"] if "metric" in f["flags"]]
            self.assertEqual(s["groups"][kind]["metrics"], want, kind)
        self.assertEqual([(m["name"], m["unit"]) for m in s["groups"]["span"]["metrics"]], [("duration_ms", "ms")])
        self.assertEqual(sorted(s["groups"]), ["page", "request", "span", "startup"])
        # and the answers hold those names
        names = {m["name"] for m in s["groups"]["page"]["metrics"]}
        for page in self.d.query("/api/v1/pages?app=shop")["pages"]:
            self.assertTrue(set(page["metrics"]) <= names, page["metrics"].keys())
        st, _, body = self.d.request("GET", "/api/v1/schema?app=shop", token=ADMIN)
        self.assertEqual(st, 400, body)
        self.assertEqual(self.d.request("GET", "/api/v1/schema")[0], 401)

    def test_apps(self):
        apps = self.d.query("/api/v1/apps")["apps"]
        shop = [a for a in apps if a["app"] == "shop"][0]
        self.assertTrue({"1.0", "1.1"} <= set(shop["versions"]))

    def test_batch_id_is_idempotent(self):
        body = traces([page_span("IdemWindow", T0 + 5, 100.0)], app="other")
        self.d.ingest("/v1/traces", body, app="other", batch_id="idem-1")
        self.d.ingest("/v1/traces", body, app="other", batch_id="idem-1")
        self.d.ingest("/v1/traces", body, app="other", batch_id="idem-2")  # another batch with the same content counts
        pages = {p["page"]: p for p in self.d.query("/api/v1/pages?app=other")["pages"]}
        self.assertEqual(pages["IdemWindow"]["count"], 2)
        self.d.json("POST", "/v1/traces", body, token=KEYS["other"], headers={"X-Pacer-Batch-Id": "bad id!"}, expect=400)

    def test_startup_requests_and_generic_spans(self):
        ts = T0 + 10 * DAY
        cold = [span("startup cold", ts + i, 10**6, [attr("pacer.type", "startup"), attr("pacer.kind", "cold"),
                                                     attr("pacer.cold_ms", 800.0 + i),
                                                     attr("pacer.first_screen_ms", 100.0 + i),
                                                     attr("pacer.outlier", i == 9)]) for i in range(10)]
        warm = [span("startup warm", ts, 10**6, [attr("pacer.type", "startup"), attr("pacer.kind", "warm"),
                                                 attr("pacer.warm_ms", 50.0)])]
        nets = [span("GET", ts + i, 5 * 10**6, [attr("pacer.type", "net"), attr("pacer.method", "GET"),
                                                 attr("pacer.url", "http://api.example/api/items/%d?x=1" % (100 + i)),
                                                 attr("pacer.status", 500 if i == 0 else 200),
                                                 attr("pacer.total_ms", 10.0 * (i + 1))]) for i in range(5)]
        generic = [span("SELECT items", ts, (i + 1) * 10**6, status=2 if i == 0 else 0) for i in range(4)]
        self.assertEqual(self.d.ingest("/v1/traces", traces(cold + warm + nets + generic, version="2.0")), {})
        rng = "&from=%d&to=%d" % (ts // 10**9, ts // 10**9 + 60)
        st = {s["kind"]: s for s in self.d.query("/api/v1/startup?app=shop" + rng)["startup"]}
        self.assertEqual(st["cold"]["count"], 10)
        self.assertEqual(st["cold"]["metrics"]["cold_ms"]["count"], 9)  # the outlier stays out of percentiles
        self.assertEqual(st["cold"]["metrics"]["cold_ms"]["max"], 808.0)
        self.assertEqual(st["warm"]["metrics"]["warm_ms"]["p50"], 50.0)
        rq = self.d.query("/api/v1/requests?app=shop&version=2.0")["requests"]
        self.assertEqual(len(rq), 1)
        self.assertEqual((rq[0]["method"], rq[0]["pattern"], rq[0]["count"], rq[0]["errors"]),
                         ("GET", "/api/items/{id}", 5, 1))
        self.assertTrue(within(rq[0]["metrics"]["total_ms"]["p50"], 30.0))
        sp = self.d.query("/api/v1/spans?app=shop&version=2.0")["spans"]
        self.assertEqual([(s["name"], s["count"], s["errors"]) for s in sp], [("SELECT items", 4, 1)])
        self.assertEqual(sp[0]["metrics"]["duration_ms"]["max"], 4.0)

    def test_logs_and_metrics_are_stored(self):
        logs = {"resourceLogs": [{"resource": {"attributes": [attr("service.name", "shop")]},
                                  "scopeLogs": [{"logRecords": [
                                      {"timeUnixNano": str(T0), "severityNumber": 13, "severityText": "WARN",
                                       "body": {"stringValue": "main loop stalled 812 ms"},
                                       "attributes": [attr("pacer.type", "jank"), attr("pacer.busy_ms", 812.5)]}]}]}]}
        self.assertEqual(self.d.ingest("/v1/logs", logs), {})
        metrics = {"resourceMetrics": [{"resource": {"attributes": [attr("service.name", "shop")]},
                                        "scopeMetrics": [{"metrics": [
                                            {"name": "pacer.frames.slow", "unit": "1",
                                             "sum": {"dataPoints": [{"timeUnixNano": str(T0), "asInt": "7",
                                                                     "attributes": [attr("pacer.page", "P")]}]}}]}]}]}
        self.assertEqual(self.d.ingest("/v1/metrics", metrics), {})
        self.assertEqual(self.d.sql("SELECT type, severity_number, body FROM logs"),
                         [("jank", 13, "main loop stalled 812 ms")])
        self.assertEqual(self.d.sql("SELECT name, type, value FROM metric_points"), [("pacer.frames.slow", "sum", 7.0)])

    def test_auth(self):
        body = traces([page_span("AuthWindow", T0, 1.0)])
        st, h, _ = self.d.request("POST", "/v1/traces", body)
        self.assertEqual(st, 401)
        self.assertIn("Bearer", h.get("WWW-Authenticate", ""))
        self.assertEqual(self.d.request("POST", "/v1/traces", body, token="wrong")[0], 401)
        self.assertEqual(self.d.request("POST", "/v1/traces", body, token=ADMIN)[0], 403)
        self.assertEqual(self.d.request("GET", "/api/v1/pages?app=shop")[0], 401)
        self.assertEqual(self.d.request("GET", "/api/v1/pages?app=shop", token=KEYS["shop"])[0], 403)
        self.assertEqual(self.d.request("PUT", "/v1/config/shop", GOOD_XML, token=KEYS["shop"])[0], 403)
        self.assertEqual(self.d.request("GET", "/v1/config/shop", token=KEYS["other"])[0], 403)
        # a key writes only into its own app
        r = self.d.ingest("/v1/traces", traces([page_span("X", T0, 1.0)], app="shop"), app="other")
        self.assertEqual(r["partialSuccess"]["rejectedSpans"], "1")
        self.assertIn("service.name", r["partialSuccess"]["errorMessage"])
        # tokens never reach the log
        log = self.d.stderr_text()
        for secret in [ADMIN] + list(KEYS.values()):
            self.assertNotIn(secret, log)

    def test_config_service(self):
        self.assertEqual(self.d.request("GET", "/v1/config/cfgapp", token=ADMIN)[0], 404)
        bad = "<pacer>\n  <page id=\"A\">\n    <api/>\n  </page>\n</pacer>\n"
        st, _, body = self.d.request("PUT", "/v1/config/cfgapp", bad, token=ADMIN, content_type="application/xml")
        self.assertEqual(st, 400)
        import json
        err = json.loads(body)
        self.assertEqual(err["line"], 3)
        self.assertIn("3:", err["error"])
        r = self.d.json("PUT", "/v1/config/cfgapp", GOOD_XML, token=ADMIN)
        self.assertEqual((r["version"], r["pages"]), (1, 1))
        st, h, xml = self.d.request("GET", "/v1/config/cfgapp", token=ADMIN)
        self.assertEqual((st, xml.decode()), (200, GOOD_XML))
        etag = h["ETag"]
        self.assertTrue(etag.startswith('"1-'))
        st, h2, xml = self.d.request("GET", "/v1/config/cfgapp", token=ADMIN, headers={"If-None-Match": etag})
        self.assertEqual((st, xml), (304, b""))
        # a bad config is refused and the stored one is kept
        self.assertEqual(self.d.request("PUT", "/v1/config/cfgapp", "<pacer><page", token=ADMIN)[0], 400)
        st, h, xml = self.d.request("GET", "/v1/config/cfgapp", token=ADMIN, headers={"If-None-Match": etag})
        self.assertEqual(st, 304)
        new = GOOD_XML.replace("500", "600")
        self.assertEqual(self.d.json("PUT", "/v1/config/cfgapp", new, token=ADMIN)["version"], 2)
        st, h, xml = self.d.request("GET", "/v1/config/cfgapp", token=ADMIN, headers={"If-None-Match": etag})
        self.assertEqual((st, xml.decode()), (200, new))
        self.assertNotEqual(h["ETag"], etag)

    def test_zz_restart_keeps_everything(self):
        before = self.d.query("/api/v1/pages?app=shop")
        self.d.restart()
        self.assertEqual(self.d.query("/api/v1/pages?app=shop"), before)
        self.check_pages(self.d.query("/api/v1/pages?app=shop&version=1.0"), [x for x in self.loads if x[1] == "1.0"])


class PacerdApiRollupLag(PacerdApi):
    """The same with every record still waiting for the rollups (SQLite);
    on ClickHouse, with every commit consolidated into the last tier."""
    ARGS = ["--rollup-lag", "3600000"]
    if BACKEND == "clickhouse":
        ARGS = ["--clickhouse-slot", "2", "--clickhouse-settle", "10", "--clickhouse-day", "10"]
        CONSOLIDATED = True

    @unittest.skipUnless(BACKEND == "clickhouse", "the ClickHouse store's tiers")
    def test_consolidated_then_sigkill_answers_the_same(self):
        self.assertGreater(self.d.sql("SELECT count() FROM rollups WHERE lvl = 2 AND app = 'shop'")[0][0], 0)
        before = self.d.query("/api/v1/pages?app=shop")
        self.d.kill(9)
        self.d.start()
        self.assertEqual(self.d.query("/api/v1/pages?app=shop"), before)
        self.check_pages(before, self.loads)

    @unittest.skipUnless(BACKEND == "sqlite", "SQLite's rollup marks")
    def test_rollups_wait_then_sigkill_rebuilds_them(self):
        self.assertEqual(self.d.sql("SELECT COUNT(*) FROM rollup_counts WHERE app = 'shop'")[0][0], 0)
        self.assertIn("shop", [a["app"] for a in self.d.query("/api/v1/apps")["apps"]])
        before = self.d.query("/api/v1/pages?app=shop")
        self.d.kill(9)
        self.d.start()  # replays the records after the marks into the groups in memory
        self.assertEqual(self.d.query("/api/v1/pages?app=shop"), before)
        self.d.restart()  # SIGTERM writes them
        self.assertGreater(self.d.sql("SELECT COUNT(*) FROM rollup_counts WHERE app = 'shop'")[0][0], 0)
        self.assertEqual(self.d.query("/api/v1/pages?app=shop"), before)
        self.check_pages(self.d.query("/api/v1/pages?app=shop"), self.loads)


@unittest.skipIf(BACKEND == "clickhouse", "SQLite's blocks")
class PacerdApiSealed(PacerdApi):
    """The same with the records sealed into blocks as they come (a seal
    every 100 records rather than every 32 768): whole days from the
    rollups, cut days from the sub-day rollups and the blocks."""
    ARGS = ["--rollup-lag", "0", "--seal-rows", "100"]

    def test_records_are_in_blocks(self):
        db = sqlite3.connect(self.d.db)
        left = db.execute("SELECT COUNT(*) FROM page_loads WHERE app = 'shop'").fetchone()[0]
        in_blocks = db.execute("SELECT SUM(n) FROM blocks WHERE tbl = 0 AND app = 'shop'").fetchone()[0]
        db.close()
        self.assertLess(left, 200)
        counted = sum(p["count"] for p in self.d.query("/api/v1/pages?app=shop")["pages"])
        self.assertEqual(left + in_blocks, counted)
        self.assertGreaterEqual(counted, len(self.loads))


if __name__ == "__main__":
    unittest.main()
