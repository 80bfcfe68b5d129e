"""pacer export: a run's records as a Perfetto trace and a Chrome trace,
read back by readers that are not pacer's: Python's json for the Chrome
trace event format, tests/trace/perfetto_decode.py (the protobuf wire format
by hand, with Perfetto's nesting rules) for the Perfetto trace. Ground truth:
the records' own numbers — each slice lasts what its record says, the
start-up phases follow their stamps, overlapping requests get lanes, and
every slice nests inside its parent."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "trace"))
import perfetto_decode  # noqa: E402

T = 1_700_000_000_000_000_000
MS = 1_000_000
COMMON = {"app": "shop", "version": "1.0", "session": "abcdef0123456789", "pid": 4242}
RECORDS = [
    dict(COMMON, type="startup", ts=T, kind="cold", cold_ms=872.9, first_screen_ms=118.4, app_cost_ms=63.5,
         full_display_ms=1285.1, outlier=False, main_page="Home",
         phases={"launch": 10**9, "agent_init": 10**9 + 4_200_000, "main": 10**9 + 11_800_000,
                 "app_created": 10**9 + 63_500_000, "first_frame": 10**9 + 118_400_000,
                 "main_frame": 10**9 + 872_900_000, "full_display": 10**9 + 1_285_100_000}),
    dict(COMMON, type="page", ts=T + 100 * MS, page="Home", instance=2, kind="window", status="complete",
         initial_draw_ms=65.5, api_load_ms=513.25, final_draw_ms=5.5, total_ms=522.5,
         apis=[{"url": "/api/config", "ms": 211.0, "status": 200}, {"url": "/api/list", "ms": 302.5, "status": 200}]),
    dict(COMMON, type="net", ts=T + 110 * MS, lib="soup", method="GET", url="http://h:1/api/config?x=1", status=200,
         total_ms=211.0),
    dict(COMMON, type="net", ts=T + 150 * MS, lib="curl", method="POST", url="http://h:1/api/list", status=503,
         total_ms=302.5),
    dict(COMMON, type="jank", ts=T + 2000 * MS, kind="jank", duration_ms=900.0, page="Home", fingerprint="f1",
         stack=[{"function": "poll", "in_app": False}, {"function": "shop_compute", "in_app": True}]),
    dict(COMMON, type="frames", ts=T + 3000 * MS, window="Home", frames=10),
    dict(COMMON, session="second0000000000", type="startup", ts=T + 5000 * MS, kind="warm", warm_ms=40.0, page="Home"),
]


class Export(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.records = os.path.join(self.dir.name, "records.jsonl")
        with open(self.records, "w") as f:
            for r in RECORDS:
                f.write(json.dumps(r) + "\n")

    def tearDown(self):
        self.dir.cleanup()

    def export(self, fmt, *extra):
        out = os.path.join(self.dir.name, "trace." + fmt)
        p = subprocess.run([PACER, "export", "--format", fmt, "-o", out, *extra, self.records],
                           capture_output=True, text=True, timeout=30)
        return p, out

    def expected(self):
        """(track, name, start ms from the first record, duration ms, depth)"""
        return [
            ("start-up", "cold start", 0, 1285.1, 0),
            ("start-up", "launch → agent init", 0, 4.2, 1),
            ("start-up", "agent init → main", 4.2, 7.6, 1),
            ("start-up", "main → app created", 11.8, 51.7, 1),
            ("start-up", "app created → first frame", 63.5, 54.9, 1),
            ("start-up", "first frame → main frame", 118.4, 754.5, 1),
            ("start-up", "main frame → full display", 872.9, 412.2, 1),
            ("page Home #2", "Home", 100, 522.5, 0),
            ("page Home #2", "initial draw", 100, 65.5, 1),
            ("page Home #2", "final draw", 100 + 522.5 - 5.5, 5.5, 1),
            ("page Home #2 API load", "API load", 100 + 517.0 - 513.25, 513.25, 0),
            ("requests", "GET /api/config", 110, 211.0, 0),
            ("requests 2", "POST /api/list", 150, 302.5, 0),  # overlaps the first: a second lane
            ("main loop", "jank", 2000, 900.0, 0),
            ("start-up", "warm start", 5000, 40.0, 0),
        ]

    def test_chrome(self):
        p, out = self.export("chrome")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("1 record(s) of types with no place on the timeline", p.stderr)  # the frames record
        doc = json.load(open(out))
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
        self.assertEqual(sorted(procs.values()), ["shop 1.0 (pid 4242, session abcdef01)",
                                                  "shop 1.0 (pid 4242, session second00)"])
        got = sorted((names[(e["pid"], e["tid"])], e["name"], round(e["ts"] / 1000, 3), round(e["dur"] / 1000, 3))
                     for e in doc["traceEvents"] if e["ph"] == "X")
        want = sorted((t, n, round(s, 3), round(d, 3)) for t, n, s, d, _ in self.expected())
        self.assertEqual(got, want)
        page = [e for e in doc["traceEvents"] if e.get("name") == "API load"][0]
        self.assertEqual(page["args"]["api 1"], "/api/config: 211.000 ms, status 200")
        jank = [e for e in doc["traceEvents"] if e.get("name") == "jank"][0]
        self.assertEqual(jank["args"]["in-app frame"], "shop_compute")
        # every child inside its parent, no two top slices of a track overlapping
        by_track = {}
        for e in doc["traceEvents"]:
            if e["ph"] == "X":
                by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        for spans in by_track.values():
            spans.sort(key=lambda s: (s[0], -s[1]))
            stack = []
            for b, e in spans:
                while stack and stack[-1][1] <= b:
                    stack.pop()
                if stack:
                    self.assertLessEqual(e, stack[-1][1] + 1e-6)
                stack.append((b, e))

    def test_perfetto(self):
        p, out = self.export("perfetto")
        self.assertEqual(p.returncode, 0, p.stderr)
        tracks, slices = perfetto_decode.decode(open(out, "rb").read())  # raises on bad nesting
        t0 = min(s[0] for sl in slices.values() for s in sl)
        got = sorted((tracks[u][2].decode(), s[3], round((s[0] - t0) / 1e6, 3), round((s[1] - s[0]) / 1e6, 3), s[2])
                     for u, sl in slices.items() for s in sl)
        want = sorted((t, n, round(s, 3), round(d, 3), depth) for t, n, s, d, depth in self.expected())
        self.assertEqual(got, want)

    def test_bad_lines_and_usage(self):
        with open(self.records, "a") as f:
            f.write("not a record\n")
        p, out = self.export("chrome")
        self.assertEqual(p.returncode, 1)
        self.assertIn("records.jsonl:8:", p.stderr)
        self.assertEqual(len([e for e in json.load(open(out))["traceEvents"] if e["ph"] == "X"]), 15)
        p, _ = self.export("svg")
        self.assertEqual(p.returncode, 2)
        self.assertIn("expected perfetto or chrome", p.stderr)


if __name__ == "__main__":
    unittest.main()
