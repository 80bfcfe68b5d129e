"""The OpenTelemetry JS SDK's own OTLP exporters (npm: exporter-{trace,logs,
metrics}-otlp-proto, -otlp-http and -otlp-grpc) send traces, logs and
metrics to pacerd in each flavour — OTLP/HTTP protobuf and JSON, OTLP/gRPC
(pacerd --grpc-listen), each with and without gzip — and every
attribute, event, link and bucket they were handed comes back through
pacerd's read APIs: /api/v1/traces/{id}, /api/v1/spans/search,
/api/v1/logs and /api/v1/metrics. The exporters' own success callbacks
check pacerd's answers (protobuf ones decoded by the exporters). Half of it
is read while the rows wait for the rollup batch (rowid ranges), the rest
after a restart that moved them into the indexes. Skipped (exit 77) when
node or the npm packages are missing: scripts/install-deps.sh installs
them."""
import json
import math
import os
import shutil
import subprocess
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import KEYS, Pacerd, scrape  # noqa: E402

OTEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otel")
FLAVOURS = [("proto", "gzip"), ("proto", "none"), ("json", "gzip"), ("json", "none"), ("grpc", "gzip"),
            ("grpc", "none")]


def any_value(v):
    """An OTLP JSON AnyValue as a Python value."""
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        d = v["doubleValue"]
        return float(d) if isinstance(d, str) else d
    if "arrayValue" in v:
        return [any_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: any_value(kv["value"]) for kv in v["kvlistValue"].get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attrs(lst):
    return {kv["key"]: any_value(kv.get("value", {})) for kv in lst or []}


class Flavours(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # rows stay after the mark until the restart
        cls.d = Pacerd(extra_args=["--rollup-lag", "3600000"], grpc=True)
        cls.sent = {}
        for proto, comp in FLAVOURS:
            tag = proto + comp
            url = cls.d.grpc_base if proto == "grpc" else cls.d.base
            out = subprocess.run(["node", os.path.join(OTEL_DIR, "export-all.js"), url, KEYS["shop"], proto, comp, tag], capture_output=True, text=True, timeout=120, cwd=OTEL_DIR)
            if out.returncode != 0:
                raise AssertionError("%s/%s: %s" % (proto, comp, out.stderr))
            cls.sent[tag] = json.loads(out.stdout)

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def get(self, path, **params):
        q = urllib.parse.urlencode([(k, v) for k, vs in params.items() for v in (vs if isinstance(vs, list) else [vs])])
        return self.d.query(path + ("?" + q if q else ""))

    def check_resource(self, got, tag):
        want = {"service.name": "shop", "service.version": "otel-" + tag, "deployment.environment": "test-" + tag,
                "host.cores": 2, "host.load": 0.5, "feature.on": True, "region.list": ["eu", "us"]}
        have = attrs(got["resource"]["attributes"])
        for k, v in want.items():
            self.assertEqual(have.get(k), v, k)
        self.assertTrue(any(k.startswith("telemetry.sdk.") for k in have))

    def check_traces(self):
        for tag, sent in self.sent.items():
            self.assertEqual(len(sent["spans"]), 16, tag)
            by_trace = {}
            for s in sent["spans"]:
                by_trace.setdefault(s["traceId"], []).append(s)
            for trace_id, spans in by_trace.items():
                got = self.get("/api/v1/traces/" + trace_id)["spans"]
                self.assertEqual(len(got), len(spans), tag)
                got_by_id = {g["spanId"]: g for g in got}
                for s in spans:
                    g = got_by_id[s["spanId"]]
                    self.assertEqual(g["name"], s["name"])
                    self.assertEqual(g["kind"], s["kind"] + 1)  # the API's SpanKind counts from 0, OTLP's from 1
                    self.assertEqual(g["startTimeUnixNano"], s["start"])
                    self.assertEqual(g["endTimeUnixNano"], s["end"])
                    self.assertEqual(g.get("parentSpanId"), s["parentSpanId"])
                    self.assertEqual(g["status"].get("code", 0), s["status"]["code"])
                    if s["status"].get("message"):
                        self.assertEqual(g["status"]["message"], s["status"]["message"])
                    self.assertEqual(attrs(g["attributes"]), s["attributes"])
                    self.assertEqual([(e["name"], e["timeUnixNano"], attrs(e["attributes"])) for e in g["events"]],
                                     [(e["name"], e["time"], e["attributes"]) for e in s["events"]])
                    self.assertEqual([(l["traceId"], l["spanId"], attrs(l["attributes"])) for l in g["links"]],
                                     [(l["traceId"], l["spanId"], l["attributes"]) for l in s["links"]])
                    self.assertEqual(g["scope"]["name"], "pacerd-flavours")
                    self.assertEqual(g["scope"]["version"], "2." + tag)
                    self.check_resource(g, tag)
            # a page's API list: the api events of a span
            op0 = [s for s in sent["spans"] if s["name"] == "op 0 " + tag]
            self.assertEqual(len(op0), 4)

    def check_span_search(self):
        for tag, sent in self.sent.items():
            ver = "otel-" + tag
            ops = [s for s in sent["spans"] if s["name"].startswith("op ")]
            # by attribute equality (an integer, a string, a bool), newest first
            for key, value, pick in (("app.i", "3", lambda s: s["attributes"].get("app.i") == 3),
                                     ("app.name", "n7", lambda s: s["attributes"].get("app.name") == "n7"),
                                     ("app.flag", "true", lambda s: s["attributes"].get("app.flag") is True)):
                got = self.get("/api/v1/spans/search", app="shop", version=ver, attr="%s=%s" % (key, value))["spans"]
                want = sorted((s for s in ops if pick(s)), key=lambda s: int(s["start"]), reverse=True)
                self.assertEqual([g["spanId"] for g in got], [s["spanId"] for s in want], (tag, key))
            # by name and duration, paged two at a time with the cursor
            name = "op 1 " + tag
            want = [s for s in ops if s["name"] == name and 5 <= (int(s["end"]) - int(s["start"])) / 1e6 <= 12]
            want.sort(key=lambda s: int(s["start"]), reverse=True)
            self.assertGreaterEqual(len(want), 2)
            seen, cursor = [], None
            for _ in range(10):
                params = dict(app="shop", name=name, min_ms="5", max_ms="12", limit="2")
                if cursor:
                    params["cursor"] = cursor
                page = self.get("/api/v1/spans/search", **params)
                seen += [g["spanId"] for g in page["spans"]]
                cursor = page.get("next")
                if not cursor:
                    break
            self.assertEqual(seen, [s["spanId"] for s in want], tag)

    def check_logs(self):
        for tag, sent in self.sent.items():
            self.assertEqual(len(sent["logs"]), 8)
            got = self.get("/api/v1/logs", app="shop", text=tag.upper())["logs"]  # case is ignored
            texts = [l for l in sent["logs"] if isinstance(l["body"], str)]
            self.assertEqual(len(got), len(texts), tag)
            got = self.get("/api/v1/logs", app="shop", text="step", limit="1000")["logs"]
            mine = [g for g in got if g["resource"] and attrs(g["resource"]["attributes"])["service.version"] == "otel-" + tag]
            self.assertEqual(len(mine), 7)
            all_logs = [g for g in self.get("/api/v1/logs", app="shop", limit="1000")["logs"]
                        if attrs(g["resource"]["attributes"])["service.version"] == "otel-" + tag]
            self.assertEqual(len(all_logs), 8)
            by_time = {g["timeUnixNano"]: g for g in all_logs}
            for l in sent["logs"]:
                g = by_time[l["time"]]
                self.assertEqual(g["severityNumber"], l["severityNumber"])
                self.assertEqual(g["severityText"], l["severityText"])
                self.assertEqual(any_value(g["body"]), l["body"])
                self.assertEqual(attrs(g["attributes"]), l["attributes"])
                self.assertEqual(g["traceId"], l["traceId"])
                self.assertEqual(g["spanId"], l["spanId"])
                self.assertEqual(g["scope"]["name"], "pacerd-flavours")
                self.check_resource(g, tag)
            warn = self.get("/api/v1/logs", app="shop", severity="WARN", limit="1000")["logs"]
            self.assertTrue(warn and all(g["severityNumber"] >= 13 for g in warn))

    def check_metrics(self):
        for tag, sent in self.sent.items():
            names = sorted(set(p["name"] for p in sent["points"]))
            self.assertEqual(len(names), 5, names)
            for name in names:
                want = [p for p in sent["points"] if p["name"] == name]
                got = self.get("/api/v1/metrics", app="shop", name=name, limit="1000")["points"]
                self.assertEqual(len(got), len(want), name)
                for g in got:
                    self.check_resource(g, tag)
                    self.assertEqual(g["scope"]["version"], "4." + tag)
                key = lambda a: json.dumps(a, sort_keys=True)
                want_by = {}
                for p in want:
                    want_by.setdefault(key(p["attributes"]), []).append(p)
                for g in got:
                    p = want_by[key(attrs(g["attributes"]))][0]
                    v = p["value"]
                    if p["type"] == 0:  # histogram
                        self.assertEqual(g["type"], "histogram")
                        self.assertEqual(g["explicitBounds"], v["buckets"]["boundaries"])
                        self.assertEqual([int(c) for c in g["bucketCounts"]], v["buckets"]["counts"])
                        self.assertEqual(int(g["count"]), v["count"])
                        self.assertAlmostEqual(g["sum"], v["sum"])
                        self.assertEqual(g["min"], v["min"])
                        self.assertEqual(g["max"], v["max"])
                        self.assertEqual(g["aggregationTemporality"], 2)
                    elif p["type"] == 1:  # exponential histogram
                        self.assertEqual(g["type"], "exponential_histogram")
                        self.assertEqual(g["scale"], v["scale"])
                        self.assertEqual(int(g["zeroCount"]), v["zeroCount"])
                        self.assertEqual(g["positive"]["offset"], v["positive"]["offset"])
                        self.assertEqual([int(c) for c in g["positive"]["bucketCounts"]], v["positive"]["bucketCounts"])
                        self.assertEqual([int(c) for c in g["negative"]["bucketCounts"]], v["negative"]["bucketCounts"])
                        self.assertEqual(int(g["count"]), v["count"])
                        self.assertAlmostEqual(g["sum"], v["sum"])
                        self.assertEqual((g["min"], g["max"]), (v["min"], v["max"]))
                    else:  # gauge or sum
                        self.assertIn(g["type"], ("gauge", "sum"))
                        self.assertEqual(g["value"], v)
                        if g["type"] == "sum":
                            self.assertEqual(g["isMonotonic"], p["monotonic"])
                            self.assertEqual(g["aggregationTemporality"], 2)
                    if p["unit"]:
                        self.assertEqual(g["unit"], p["unit"])
                    if p["description"]:
                        self.assertEqual(g["description"], p["description"])
            # a point of one attribute set
            got = self.get("/api/v1/metrics", app="shop", name="requests." + tag, attr=["route=/r1", "ok=true"])["points"]
            self.assertTrue(got)
            for g in got:
                self.assertEqual(attrs(g["attributes"]), {"route": "/r1", "ok": True})

    def test_everything_comes_back(self):
        # every span counted as stored (/metrics, and the key's quota), whatever the flavour
        figures = scrape(self.d)
        self.assertEqual(figures['pacerd_ingest_records_total{signal="traces"}'],
                         sum(len(sent["spans"]) for sent in self.sent.values()))
        # and those of the gRPC front apart, per signal
        grpc = [sent for tag, sent in self.sent.items() if tag.startswith("grpc")]
        self.assertEqual(figures['pacerd_grpc_records_total{signal="traces"}'], sum(len(s["spans"]) for s in grpc))
        self.assertEqual(figures['pacerd_grpc_records_total{signal="logs"}'], sum(len(s["logs"]) for s in grpc))
        self.assertGreater(figures['pacerd_grpc_records_total{signal="metrics"}'], 0)
        self.assertEqual(figures.get('pacerd_grpc_calls_total{code="UNAUTHENTICATED"}', 0), 0)
        # read while the rows wait for the rollup batch, then from the indexes
        for round_ in ("raw rows", "indexes"):
            with self.subTest(round_):
                self.check_traces()
                self.check_span_search()
                self.check_logs()
                self.check_metrics()
            self.d.restart()


if __name__ == "__main__":
    if not shutil.which("node") or not os.path.isdir(os.path.join(OTEL_DIR, "node_modules", "@opentelemetry")):
        print("skipped: node or tests/server/otel/node_modules missing (run scripts/install-deps.sh)")
        sys.exit(1 if os.environ.get("CI") else 77)
    unittest.main()
