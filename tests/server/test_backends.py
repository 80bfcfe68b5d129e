"""The same data into pacerd on SQLite and pacerd on ClickHouse: every query
API answers the same JSON from both — percentiles to the last digit (the
same DDSketch buckets, summed in ClickHouse's tiers), the read APIs item
for item, samples and configs — first while everything is in ClickHouse's
pending tier, then once it is consolidated into its rollups. The one
difference allowed: the text of a "next" cursor (a row number of each
store's own). Timestamps are distinct, so that the order of items is
defined the same in both. Skipped (exit 77) without clickhouse-server
(scripts/install-deps.sh installs it)."""
import os
import random
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "web"))
import clickhouse_harness  # noqa: E402
import dashdata  # noqa: E402
from pacerd_harness import ADMIN, KEYS, Pacerd, attr, page_span, scrape, span, traces  # noqa: E402

DAY = 86400 * 10**9
HOUR = 3600 * 10**9
T0 = 1_700_006_400 * 10**9  # a UTC midnight
CH_ARGS = ["--clickhouse-slot", "2", "--clickhouse-settle", "10", "--clickhouse-day", "10"]


def without_cursors(x):
    """x with each "next" value replaced by a marker (presence is compared)."""
    if isinstance(x, dict):
        return {k: ("<cursor>" if k == "next" else without_cursors(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [without_cursors(v) for v in x]
    return x


class Data:
    """Bodies of every kind, with distinct timestamps."""

    def __init__(self):
        rnd = random.Random(11)
        used = set()

        def ts_in(lo, width):
            while True:
                t = lo + rnd.randrange(width)
                if t not in used:
                    used.add(t)
                    return t

        self.batches = []  # (endpoint, body, batch id)
        self.dash = list(dashdata.Gen(app="other", end_s=T0 // 10**9 + 3 * 86400, days=3, sessions_per_day=8).batches())
        # a start-up whose phases are out of order: cleaned, never stored
        bad = span("startup cold", T0 + DAY + 777, 10**6, [attr("pacer.type", "startup"), attr("pacer.kind", "cold"),
                                                           attr("pacer.cold_ms", 400.0),
                                                           attr("pacer.first_screen_ms", 900.0)])
        self.dash.append(("/v1/traces", traces([bad], version="1.1", app="other")))
        self.trace_ids = []
        # pages: 4 days, 3 pages, 2 versions, statuses, metrics sometimes absent
        for v in ("1.0", "1.1"):
            for k in range(4):
                spans = []
                for _ in range(250):
                    page = rnd.choice(["HomeWindow", "CartWindow", "ItemPage"])
                    total = round(rnd.lognormvariate(5.5, 0.8), 3)
                    initial = round(total * rnd.uniform(0.1, 0.6), 3) if rnd.random() < 0.9 else None
                    status = rnd.choice(["complete"] * 8 + ["abandoned", "deadline_exceeded"])
                    extra = []
                    if rnd.random() < 0.5:
                        extra.append(attr("pacer.api_load_ms", round(rnd.uniform(50, 400), 6)))
                    if rnd.random() < 0.3:
                        extra.append(attr("app.note", "n%d" % rnd.randrange(5)))
                    s = page_span(page, ts_in(T0, 4 * DAY), total, initial, status=status, extra=extra)
                    if len(spans) % 2 == 0:  # as pacer's SDK makes them: the span id the trace id's low half
                        s["spanId"] = s["traceId"][16:]
                    spans.append(s)
                self.trace_ids.append(spans[0]["traceId"])
                self.batches.append(("/v1/traces", traces(spans, version=v, session="%016x" % rnd.getrandbits(64)),
                                     "pages-%s-%d" % (v, k)))
        # start-ups, requests, plain spans in one trace-sharing batch
        trace = "%032x" % (rnd.getrandbits(127) | 1)
        self.trace_ids.append(trace)
        mixed = []
        for i in range(30):
            kind = rnd.choice(["cold", "warm"])
            a = [attr("pacer.type", "startup"), attr("pacer.kind", kind)]
            if kind == "cold":
                a += [attr("pacer.cold_ms", round(rnd.uniform(300, 2000), 3)),
                      attr("pacer.first_screen_ms", round(rnd.uniform(100, 300), 3)),
                      attr("pacer.outlier", i % 7 == 0)]
            else:
                a += [attr("pacer.warm_ms", round(rnd.uniform(20, 200), 3))]
            mixed.append(span("startup " + kind, ts_in(T0 + DAY, DAY), 10**6, a, trace=trace if i < 3 else None))
        for i in range(60):
            url = "https://api.example/api/%s/%d?q=%d" % (rnd.choice(["items", "cart"]), rnd.randrange(1000), i)
            status = rnd.choice([200] * 6 + [404, 500, 0])
            a = [attr("pacer.type", "net"), attr("pacer.method", rnd.choice(["GET", "POST"])), attr("pacer.url", url),
                 attr("pacer.status", status), attr("pacer.total_ms", round(rnd.uniform(5, 900), 3))]
            if rnd.random() < 0.6:
                a += [attr("pacer.dns_ms", round(rnd.uniform(0, 20), 3)),
                      attr("pacer.connect_ms", round(rnd.uniform(0, 30), 3))]
            if status == 0:
                a.append(attr("pacer.error", "connection refused"))
            mixed.append(span("GET", ts_in(T0, 3 * DAY), 5 * 10**6, a, trace=trace if i < 3 else None))
        for i in range(80):
            s = span(rnd.choice(["SELECT items", "render", "checkout"]), ts_in(T0 + DAY // 2, 2 * DAY),
                     rnd.randrange(10**5, 5 * 10**7),
                     [attr("app.i", i % 5), attr("app.name", "n%d" % (i % 7)), attr("app.flag", i % 2 == 0),
                      attr("app.ratio", 0.25 * i)],
                     status=2 if i % 9 == 0 else 0, trace=trace if i < 5 else None)
            if i % 4 == 0:
                s["events"] = [{"timeUnixNano": str(int(s["startTimeUnixNano"]) + 1000), "name": "exception",
                                "attributes": [attr("exception.message", "boom %d" % i)]}]
            if i % 6 == 0:
                s["links"] = [{"traceId": "%032x" % (i + 1), "spanId": "%016x" % (i + 1),
                               "attributes": [attr("link.n", i)]}]
            if i % 3 == 0:
                s["parentSpanId"] = "%016x" % (1000 + i)
            if i % 9 == 0:
                s["status"]["message"] = "failed %d" % i
            if i % 5 == 0:
                s["traceState"] = "k=v%d" % i
            mixed.append(s)
        body = traces(mixed, version="2.0")
        body["resourceSpans"][0]["scopeSpans"][0]["scope"] = {"name": "my-lib", "version": "1.2",
                                                              "attributes": [attr("lib.x", 1)]}
        self.batches.append(("/v1/traces", body, "mixed"))
        # logs
        recs = []
        for i in range(50):
            r = {"timeUnixNano": str(ts_in(T0 + DAY, DAY)), "severityNumber": rnd.choice([5, 9, 13, 17]),
                 "severityText": "X", "attributes": [attr("k", i % 3)]}
            if i % 5 == 0:
                r["body"] = {"kvlistValue": {"values": [attr("step", i), attr("msg", "Step Kv %d" % i)]}}
            else:
                r["body"] = {"stringValue": "Main loop step %d stalled" % i}
            if i % 4 == 0:
                r["traceId"] = trace
                r["spanId"] = "%016x" % (i + 7)
            if i % 7 == 0:
                r["eventName"] = "app.event"
            recs.append(r)
        self.batches.append(("/v1/logs", {"resourceLogs": [{"resource": {"attributes": [attr("service.name", "shop"),
                                                                                        attr("service.version", "2.0")]},
                                                            "scopeLogs": [{"scope": {"name": "logs"},
                                                                           "logRecords": recs}]}]}, "logs"))
        # metrics: a gauge, a sum, a histogram
        gauge = [{"timeUnixNano": str(ts_in(T0 + DAY, DAY)), "asDouble": 0.5 * i,
                  "attributes": [attr("route", "/r%d" % (i % 3)), attr("ok", i % 2 == 0)]} for i in range(20)]
        total = [{"timeUnixNano": str(ts_in(T0 + DAY, DAY)), "startTimeUnixNano": str(T0), "asInt": str(10 * i),
                  "attributes": [attr("route", "/r%d" % (i % 3))]} for i in range(20)]
        hist = [{"timeUnixNano": str(ts_in(T0 + DAY, DAY)), "count": "6", "sum": 12.5, "min": 0.5, "max": 4.0,
                 "bucketCounts": ["1", "2", "3"], "explicitBounds": [1.0, 2.0], "attributes": [attr("h", i)]}
                for i in range(10)]
        metrics = [{"name": "queue.depth", "unit": "1", "gauge": {"dataPoints": gauge}},
                   {"name": "requests", "description": "requests served",
                    "sum": {"dataPoints": total, "aggregationTemporality": 2, "isMonotonic": True}},
                   {"name": "latency", "unit": "ms", "histogram": {"dataPoints": hist, "aggregationTemporality": 2}}]
        self.batches.append(("/v1/metrics", {"resourceMetrics": [{"resource": {"attributes": [
            attr("service.name", "shop"), attr("service.version", "2.0")]}, "scopeMetrics": [{"metrics": metrics}]}]},
            "metrics"))
        # a batch without an id, and one sent twice
        self.batches.append(("/v1/traces", traces([page_span("HomeWindow", ts_in(T0 + 2 * DAY, DAY), 123.5)],
                                                  version="1.0"), None))


class Backends(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = Data()
        cls.sqlite = Pacerd(backend="sqlite")
        cls.ch = Pacerd(CH_ARGS, backend="clickhouse", state=True)
        for d in (cls.sqlite, cls.ch):
            for endpoint, body, batch in cls.data.batches:
                r = d.ingest(endpoint, body, batch_id=batch)
                assert "partialSuccess" not in r, r
            # a batch again: stored once
            endpoint, body, batch = cls.data.batches[0]
            d.ingest(endpoint, body, batch_id=batch)
            # the dashboard's app: pages, start-ups, requests of every class, jank, frames (some of
            # them cleaned: refused the same way by both)
            d.cleaned = [d.ingest(endpoint, body, app="other").get("partialSuccess")
                         for endpoint, body in cls.data.dash]
            for app in ("shop",):
                d.json("PUT", "/v1/config/" + app, "<pacer><page id=\"HomeWindow\" tag=\"1\"/></pacer>\n", token=ADMIN)

    @classmethod
    def tearDownClass(cls):
        cls.sqlite.close()
        cls.ch.close()

    def paths(self):
        lo, hi = (T0 + DAY // 3) // 10**9, (T0 + 2 * DAY + DAY // 2) // 10**9
        out = ["/api/v1/apps"]
        for q in ("pages", "startup", "requests", "spans"):
            for args in ("", "&version=1.0", "&version=2.0", "&from=%d&to=%d" % (lo, hi),
                         "&from=%d&to=%d" % ((T0 + DAY + 1000 * 10**9) // 10**9, (T0 + DAY + 40000 * 10**9) // 10**9),
                         "&from=%d&to=%d" % ((T0 + DAY + HOUR + 17) // 10**9, (T0 + DAY + 2 * HOUR - 5) // 10**9),
                         "&from=%d&to=%d" % ((T0 + DAY) // 10**9, (T0 + 3 * DAY) // 10**9),
                         "&version=1.1&from=%d&to=%d" % (lo, hi)):
                out.append("/api/v1/%s?app=shop%s" % (q, args))
        for t in self.data.trace_ids:
            out.append("/api/v1/traces/" + t)
        out += ["/api/v1/spans/search?app=shop", "/api/v1/spans/search?app=shop&name=render",
                "/api/v1/spans/search?app=shop&attr=app.i=3", "/api/v1/spans/search?app=shop&attr=app.flag=true&attr=app.i=2",
                "/api/v1/spans/search?app=shop&attr=app.ratio=2.5", "/api/v1/spans/search?app=shop&min_ms=10&max_ms=30",
                "/api/v1/spans/search?app=shop&version=2.0&from=%d&to=%d" % (lo, hi),
                "/api/v1/spans/search?app=shop&limit=1000",
                "/api/v1/logs?app=shop", "/api/v1/logs?app=shop&severity=WARN", "/api/v1/logs?app=shop&text=STALLED",
                "/api/v1/logs?app=shop&text=kv&limit=1000",
                "/api/v1/metrics?app=shop&name=queue.depth", "/api/v1/metrics?app=shop&name=requests&attr=route=/r1",
                "/api/v1/metrics?app=shop&name=latency&limit=1000", "/api/v1/metrics?app=shop&name=queue.depth&attr=ok=true",
                "/api/v1/samples?app=shop&version=1.0", "/api/v1/samples?app=shop&version=1.1&limit=7",
                "/api/v1/samples?app=shop&version=2.0"]
        # the dashboard's reads
        d0, d1 = T0 // 10**9, T0 // 10**9 + 3 * 86400
        for c in ("", "&version=1.1", "&from=%d&to=%d" % (d0 + 86400 + 1234, d1 - 4321)):
            a = "app=other" + c
            out += ["/api/v1/records?%s&type=page&sort=total_ms" % a,
                    "/api/v1/records?%s&type=page&name=ShopHomeWindow&sort=newest&limit=30" % a,
                    "/api/v1/records?%s&type=startup&name=cold&sort=newest" % a,
                    "/api/v1/records?%s&type=startup&sort=cold_ms&limit=5" % a,
                    "/api/v1/records?%s&type=net&sort=total_ms&limit=20" % a,
                    "/api/v1/request_stats?%s" % a, "/api/v1/jank?%s" % a, "/api/v1/frames?%s" % a,
                    "/api/v1/histogram?%s&kind=page&name=ShopHomeWindow&metric=total_ms" % a]
        out += ["/api/v1/series?app=other&kind=page&step=21600&from=%d&to=%d" % (d0, d1),
                "/api/v1/series?app=other&kind=request&step=86400&from=%d&to=%d" % (d0 + 77, d1)]
        return out

    def same(self, path):
        a = self.sqlite.query(path)
        b = self.ch.query(path)
        self.assertEqual(without_cursors(b), without_cursors(a), path)
        return a, b

    def paged(self, path):
        """Follows each backend's own cursors, pages of 7: the same items."""
        pages = []
        for d in (self.sqlite, self.ch):
            items, cursor = [], None
            for _ in range(100):
                p = path + "&limit=7" + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
                got = d.query(p)
                items.append(without_cursors(got))
                cursor = got.get("next")
                if not cursor:
                    break
            pages.append(items)
        self.assertEqual(pages[1], pages[0], path)
        self.assertGreater(len(pages[0]), 2, path)

    def check_all(self):
        for path in self.paths():
            with self.subTest(path=path):
                self.same(path)
        for path in ("/api/v1/spans/search?app=shop", "/api/v1/spans/search?app=shop&attr=app.i=1",
                     "/api/v1/logs?app=shop", "/api/v1/logs?app=shop&text=step"):
            with self.subTest(path=path):
                self.paged(path)
        for d in (self.sqlite, self.ch):
            st, h, xml = d.request("GET", "/v1/config/shop", token=KEYS["shop"])
            self.assertEqual(st, 200)
        self.assertEqual(self.sqlite.request("GET", "/v1/config/shop", token=ADMIN)[1]["ETag"],
                         self.ch.request("GET", "/v1/config/shop", token=ADMIN)[1]["ETag"])

    def test_0_same_records_cleaned(self):
        self.assertEqual(self.ch.cleaned, self.sqlite.cleaned)
        self.assertEqual(self.sqlite.cleaned[-1]["rejectedSpans"], "1")

    def test_1_same_answers_before_consolidation(self):
        # the whole data set is in the pending tier
        self.check_all()
        pages = self.sqlite.query("/api/v1/pages?app=shop")["pages"]
        self.assertEqual(sum(p["count"] for p in pages), 2001)

    def test_2_same_answers_from_consolidated_rollups(self):
        self.ch.wait_consolidated()
        self.assertGreater(self.ch.sql("SELECT count() FROM rollups WHERE lvl = 2")[0][0], 0)
        self.check_all()
        # and with more on top, in pending again
        more = traces([page_span("CartWindow", T0 + 3 * DAY + 12345 + i, 50.0 + i) for i in range(20)], version="1.1")
        for d in (self.sqlite, self.ch):
            d.ingest("/v1/traces", more, batch_id="more")
        self.check_all()

    def test_3_same_issues(self):
        """The application layer on both: the same issues of the same rows
        (the analysis of ClickHouse's instance reads them by write mark),
        the same cleaning counts. What depends on the cycles that read the
        rows is left out — ClickHouse's reads rows once older than the read
        lag, so that it may read in two cycles what SQLite's read in one: an
        issue's status (new, or ongoing once a later cycle saw it again) and
        the example record of an occurrence (the one of its last cycle)."""
        for d in (self.sqlite, self.ch):
            settle(d)
        for app in ("shop", "other"):
            a = self.sqlite.query("/api/v1/issues?app=%s&limit=100" % app)
            b = self.ch.query("/api/v1/issues?app=%s&limit=100" % app)
            self.assertEqual(without_times(b), without_times(a), app)
            for i in a["issues"]:
                self.assertEqual(without_times(self.ch.query("/api/v1/issues/" + i["id"])),
                                 without_times(self.sqlite.query("/api/v1/issues/" + i["id"])), i["id"])
            self.same("/api/v1/cleaning?app=" + app)
        self.assertGreater(len(self.sqlite.query("/api/v1/issues?app=other")["issues"]), 0)


def without_times(x, kind=None):
    """x without what depends on the analysis's cycles (test_3_same_issues)."""
    if isinstance(x, dict):
        kind = x.get("kind", kind)
        return {k: without_times(v, kind) for k, v in x.items()
                if k not in ("status", "updated") and not (k == "example" and kind != "page_regression")}
    if isinstance(x, list):
        return [without_times(v, kind) for v in x]
    return x


def settle(d, timeout=90):
    """Until the analysis has read every row and judged it (two cycles more)."""
    deadline = time.monotonic() + timeout
    start = scrape(d)["pacerd_analysis_cycles_total"]
    while time.monotonic() < deadline:
        m = scrape(d)
        if m["pacerd_analysis_behind_rows"] == 0 and m["pacerd_analysis_cycles_total"] >= start + 2:
            return
        time.sleep(0.1)
    raise AssertionError("the analysis did not catch up: %r" % scrape(d))


if __name__ == "__main__":
    if not clickhouse_harness.available():
        print("skipped: %s missing (run scripts/install-deps.sh)" % clickhouse_harness.SERVER)
        sys.exit(1 if os.environ.get("CI") else 77)
    unittest.main()
