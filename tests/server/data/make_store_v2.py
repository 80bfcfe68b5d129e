"""Makes store-v2.sql.gz and store-v2.json.gz: a store written by the pacerd of
store schema 2 (before day partitions), and what that pacerd answered about
it. test_store_upgrade.py opens the file with today's pacerd and expects the
same answers. Run from the source root against a schema 2 pacerd:

    PACERD=/path/to/old/pacerd python3 tests/server/data/make_store_v2.py

The store holds every kind of record over four days, some of them still
waiting for the rollups (a SIGKILL with --rollup-lag of an hour)."""
import json
import os
import random
import sqlite3
import subprocess
import gzip
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pacerd_harness import Pacerd, attr, page_span, resource, span, traces  # noqa: E402

HERE = os.path.dirname(__file__)
DAY = 86400 * 10**9
T0 = 1_700_006_400 * 10**9  # a UTC midnight (2023-11-15)
S0 = T0 // 10**9


def startup_span(ts, kind, ms, outlier=False):
    attrs = [attr("pacer.type", "startup"), attr("pacer.kind", kind), attr("pacer.outlier", outlier)]
    if kind == "cold":
        attrs += [attr("pacer.cold_ms", ms), attr("pacer.first_screen_ms", ms * 0.4),
                  attr("pacer.app_cost_ms", ms * 0.2), attr("pacer.full_display_ms", ms * 1.5),
                  attr("pacer.main_page", "ShopHomeWindow")]
    else:
        attrs += [attr("pacer.warm_ms", ms), attr("pacer.page", "ShopHomeWindow")]
    return span(kind, ts, int(ms * 1e6), attrs)


def net_span(ts, ms, path, status):
    attrs = [attr("pacer.type", "net"), attr("pacer.method", "GET"),
             attr("pacer.url", "https://api.example%s?x=1" % path), attr("pacer.status", status),
             attr("pacer.total_ms", ms), attr("pacer.page", "ShopHomeWindow")]
    return span("GET", ts, int(ms * 1e6), attrs)


def plain_span(rnd, ts, trace):
    route = rnd.choice(["/cart", "/items/{id}", "/checkout"])
    s = span("handle " + route, ts, rnd.randrange(1, 300) * 10**6,
             [attr("http.route", route), attr("app.items", rnd.randrange(5)), attr("app.ok", rnd.random() < 0.8)],
             status=rnd.choice([0, 0, 2]), trace=trace)
    s["events"] = [{"timeUnixNano": str(ts + 1000), "name": "exception",
                    "attributes": [attr("exception.message", "boom")]}]
    return s


def batch(rnd, n, day_from, day_to, tag):
    pages, starts, nets, plain, traces_of = [], [], [], [], []
    for i in range(n):
        ts = T0 + rnd.randrange(day_from * DAY, day_to * DAY)
        page = rnd.choice(["ShopHomeWindow", "ShopCartWindow", "ShopMerchantPage"])
        total = round(rnd.lognormvariate(5.5, 0.7), 3)
        status = "abandoned" if i % 40 == 0 else "complete"
        p = page_span(page, ts, total, round(total * rnd.uniform(0.1, 0.5), 3), status=status)
        pages.append(p)
        if i % 10 == 0:
            starts.append(startup_span(ts, "cold" if i % 20 == 0 else "warm", round(rnd.uniform(300, 2000), 3),
                                       outlier=i % 200 == 0))
        if i % 3 == 0:
            nets.append(net_span(ts + 5, round(rnd.uniform(5, 900), 3),
                                 rnd.choice(["/api/items/%d" % rnd.randrange(99), "/api/list"]),
                                 rnd.choice([200, 200, 404, 500])))
        if i % 4 == 0:
            plain.append(plain_span(rnd, ts + 7, p["traceId"]))
            traces_of.append(p["traceId"])
    return pages, starts, nets, plain, traces_of


def logs_body(rnd, n, tag):
    recs = []
    for i in range(n):
        ts = T0 + rnd.randrange(4 * DAY)
        recs.append({"timeUnixNano": str(ts), "severityNumber": rnd.choice([9, 13, 17]),
                     "severityText": "x", "body": {"stringValue": "%s log %d" % (tag, i)},
                     "attributes": [attr("pacer.type", "jank"), attr("pacer.duration_ms", 700.0 + i)]})
    return {"resourceLogs": [{"resource": resource(), "scopeLogs": [{"scope": {"name": "pacer"}, "logRecords": recs}]}]}


def metrics_body(rnd, n):
    pts = []
    for i in range(n):
        ts = T0 + rnd.randrange(4 * DAY)
        pts.append({"timeUnixNano": str(ts), "asDouble": rnd.uniform(0, 100),
                    "attributes": [attr("pacer.window", "ShopHomeWindow")]})
    return {"resourceMetrics": [{"resource": resource(), "scopeMetrics": [{"scope": {"name": "pacer"}, "metrics": [
        {"name": "pacer.frames.slow", "unit": "1", "gauge": {"dataPoints": pts}}]}]}]}


def answers(d, trace_ids):
    out = {}
    qs = ["/api/v1/pages?app=shop", "/api/v1/pages?app=shop&version=1.1",
          "/api/v1/pages?app=shop&from=%d&to=%d" % (S0 + 40000, S0 + 2 * 86400 + 5000),
          "/api/v1/startup?app=shop", "/api/v1/startup?app=shop&from=%d&to=%d" % (S0 + 3600, S0 + 86400 * 3 - 7),
          "/api/v1/requests?app=shop", "/api/v1/spans?app=shop",
          "/api/v1/spans?app=shop&from=%d&to=%d" % (S0 + 50000, S0 + 3 * 86400 + 100),
          "/api/v1/apps",
          "/api/v1/spans/search?app=shop&limit=1000", "/api/v1/spans/search?app=shop&name=handle%20/cart",
          "/api/v1/spans/search?app=shop&attr=app.items=3&limit=1000",
          "/api/v1/spans/search?app=shop&min_ms=100&from=%d&to=%d" % (S0 + 20000, S0 + 2 * 86400),
          "/api/v1/logs?app=shop&limit=1000", "/api/v1/logs?app=shop&severity=WARN",
          "/api/v1/metrics?app=shop&name=pacer.frames.slow&limit=1000",
          "/api/v1/samples?app=shop&version=1.0"]
    qs += ["/api/v1/traces/%s" % t for t in trace_ids]
    for q in qs:
        out[q] = d.query(q)
    return out


def main():
    rnd = random.Random(20231115)
    d = Pacerd(["--rollup-lag", "0"])
    try:
        trace_ids = []
        for k, version in enumerate(["1.0", "1.1", "1.0"]):
            pages, starts, nets, plain, tr = batch(rnd, 120, 0, 4, "a%d" % k)
            trace_ids += tr[:2]
            body = traces(pages + starts + nets + plain, version=version, session="%016x" % (k + 1))
            assert d.ingest("/v1/traces", body, batch_id="a-%d" % k) == {}
        assert d.ingest("/v1/logs", logs_body(rnd, 60, "a")) == {}
        assert d.ingest("/v1/metrics", metrics_body(rnd, 40)) == {}
        d.kill(15)
        d.extra_args = ["--rollup-lag", "3600000"]
        d.start()
        # these wait for the rollups: the SIGKILL leaves them after the marks
        pages, starts, nets, plain, tr = batch(rnd, 60, 1, 3, "b")
        trace_ids += tr[:2]
        assert d.ingest("/v1/traces", traces(pages + starts + nets + plain, version="1.1",
                                             session="00000000000000bb"), batch_id="b") == {}
        assert d.ingest("/v1/logs", logs_body(rnd, 10, "b")) == {}
        d.kill(9)
        d.start()
        got = answers(d, trace_ids)
        d.kill(9)
        db = sqlite3.connect(d.db)
        marks = dict(db.execute("SELECT kind, last_rowid FROM rollup_marks"))
        counts = {t: db.execute("SELECT COUNT(*) FROM %s" % t).fetchone()[0]
                  for t in ("page_loads", "startups", "requests", "spans", "logs", "metric_points")}
        db.close()
        assert marks["page"] < counts["page_loads"], (marks, counts)
        dump = subprocess.run(["sqlite3", d.db, ".dump"], check=True, capture_output=True, text=True).stdout
        with gzip.open(os.path.join(HERE, "store-v2.sql.gz"), "wt") as f:
            f.write(dump)
        with gzip.open(os.path.join(HERE, "store-v2.json.gz"), "wt") as f:
            json.dump({"marks": marks, "counts": counts, "answers": got}, f, sort_keys=True, separators=(",", ":"))
            f.write("\n")
        print("rows", counts, "marks", marks)
    finally:
        d.close()


if __name__ == "__main__":
    main()
