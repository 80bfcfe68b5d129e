"""A real OpenTelemetry client nobody here wrote — the npm packages
@opentelemetry/sdk-trace-base and @opentelemetry/exporter-trace-otlp-http,
run with node — exports spans to pacerd, which stores them as raw spans
(ids and durations as the client made them) and aggregates their durations
per span name. Skipped (exit 77) when node or the npm packages are missing:
scripts/install-deps.sh installs them."""
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import BACKEND, KEYS, Pacerd, exact_quantile  # noqa: E402

OTEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otel")


class OtelClient(unittest.TestCase):
    def test_js_sdk_spans_are_stored_and_aggregated(self):
        d = Pacerd()
        try:
            out = subprocess.run(["node", os.path.join(OTEL_DIR, "export-spans.js"), d.base, KEYS["shop"]],
                                 capture_output=True, text=True, timeout=60, cwd=OTEL_DIR)
            self.assertEqual(out.returncode, 0, out.stderr)
            sent = json.loads(out.stdout)
            self.assertEqual(len(sent), 310)

            if BACKEND == "sqlite":
                rows = d.sql("SELECT hex(trace_id), hex(span_id), hex(parent_span_id), name, version, kind,"
                             " status_code, status_message, (end_ts - ts) / 1e6, attributes FROM spans")
            else:  # its columns are packed: the same fields through the span search API
                got = d.query("/api/v1/spans/search?app=shop&limit=1000")["spans"]
                rows = [(g["traceId"], g["spanId"], g.get("parentSpanId"), g["name"], g["version"], g["kind"],
                         g["status"].get("code", 0), g["status"].get("message"), g["durationMs"],
                         json.dumps(g["attributes"])) for g in got]
            stored = {(r[0].lower(), r[1].lower()): r for r in rows}
            self.assertEqual(len(rows), len(sent))
            for s in sent:
                r = stored[(s["trace_id"], s["span_id"])]
                self.assertEqual(r[3], s["name"])
                self.assertEqual(r[4], "otel-js")
                self.assertAlmostEqual(r[8], s["ms"], delta=0.001)
            children = [r for r in rows if r[3] == "db query"]
            self.assertEqual(len(children), 10)
            self.assertTrue(all(c[2] and c[5] == 3 for c in children))  # a parent id, kind CLIENT
            failed = [r for r in rows if r[6] == 2]
            self.assertEqual(len(failed), 30)
            self.assertTrue(all(r[7].startswith("item ") for r in failed))
            attrs = json.loads([r for r in rows if r[3] == "checkout"][1][9])
            self.assertEqual({a["key"] for a in attrs}, {"app.items", "app.ratio", "app.cached", "app.tags"})

            answer = d.query("/api/v1/spans?app=shop&version=otel-js")["spans"]
            by_name = {a["name"]: a for a in answer}
            self.assertEqual(sorted(by_name), sorted(set(s["name"] for s in sent)))
            for name, a in by_name.items():
                values = [s["ms"] for s in sent if s["name"] == name]
                self.assertEqual(a["count"], len(values))
                for q in ("p50", "p90", "p99"):
                    want = exact_quantile(values, int(q[1:]) / 100)
                    self.assertLessEqual(abs(a["metrics"]["duration_ms"][q] - want), 0.01 * want + 1e-6,
                                         "%s %s" % (name, q))
            self.assertEqual(by_name["checkout"]["errors"], 10)
        finally:
            d.close()


if __name__ == "__main__":
    if not shutil.which("node") or not os.path.isdir(os.path.join(OTEL_DIR, "node_modules", "@opentelemetry")):
        print("skipped: node or tests/server/otel/node_modules missing (run scripts/install-deps.sh)")
        sys.exit(1 if os.environ.get("CI") else 77)  # CI installs them: missing is a failure
    unittest.main()
