"""The dashboard's reads from records whose figures are known, on the store
the suite runs against (meson runs it on SQLite and on ClickHouse): the
slowest widget types of /api/v1/frames — the `slow_widgets` of frames
records made with --frames=detail, as gauges per element
(docs/otlp-mapping.md), summed per window, type and phase, ranked, cut to
`widgets`, under the version and range filters — and the flame graph of
/api/v1/jank for one fingerprint (and kind): the profiles and stacks of
that group's records merged, no other group's; and their parameters'
400s."""
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pacerd_harness import ADMIN, Pacerd, attr  # noqa: E402

NOW = time.time_ns() - 3600 * 10**9  # an hour ago: inside the allowed clock skew either way
S = 10**9


def resource(version, session):
    return {"attributes": [attr("service.name", "shop"), attr("service.version", version),
                           attr("pacer.session", session)]}


def frames_body(version, ts, window, frames, slow, widgets):
    """A frames record of `window` as the SDK sends it: a gauge per number,
    and per slow_widgets element a gauge per number of it, the point naming
    the element (pacer.slow_widgets.index) and carrying its strings."""
    dims = [attr("pacer.window", window), attr("pacer.instance", 1), attr("pacer.final", False),
            attr("pacer.refresh_ms", 16.667)]
    metrics = []

    def gauge(name, value, attrs):
        point = {"timeUnixNano": str(ts), "attributes": attrs}
        if isinstance(value, float):
            point["asDouble"] = value
        else:
            point["asInt"] = str(value)
        metrics.append({"name": name, "gauge": {"dataPoints": [point]}})

    for name, v in (("frames", frames), ("slow", slow), ("frozen", 0), ("dropped_frames", slow)):
        gauge("pacer.frames." + name, v, dims)
    for i, w in enumerate(widgets):
        el = dims + [attr("pacer.slow_widgets.index", i)]
        if w[0] is not None:
            el.append(attr("pacer.slow_widgets.type", w[0]))
        el.append(attr("pacer.slow_widgets.phase", w[1]))
        gauge("pacer.frames.slow_widgets.ms", float(w[2]), el)
        gauge("pacer.frames.slow_widgets.calls", w[3], el)
    return {"resourceMetrics": [{"resource": resource(version, "s-" + version),
                                 "scopeMetrics": [{"scope": {"name": "pacer"}, "metrics": metrics}]}]}


# (version, seconds after NOW, window, frames, slow, [(type, phase, ms, calls)])
FRAMES = [
    ("1.0", 0, "EditorWindow", 600, 12, [("GtkListView", "layout", 120.5, 40), ("GtkLabel", "paint", 30.25, 300),
                                         ("GtkBox", "layout", 10.0, 5)]),
    ("1.0", 10, "EditorWindow", 500, 7, [("GtkListView", "layout", 80.0, 20), ("GtkLabel", "layout", 12.5, 100)]),
    ("2.0", 20, "EditorWindow", 400, 3, [("GtkLabel", "paint", 50.0, 10)]),
    # twelve types in one window: the answer keeps the longest ten
    ("1.0", 30, "ListWindow", 300, 20, [("Type%02d" % k, "paint" if k % 2 else "layout", 5.0 * k, k)
                                        for k in range(1, 13)]),
    # a record without slow_widgets (phases only), and an element without a type
    ("1.0", 40, "PlainWindow", 100, 1, []),
    ("2.0", 50, "PlainWindow", 100, 1, [(None, "paint", 99.0, 1)]),
]

# the same function of the same module: one node; every jank has the same stack
STACK = [{"function": "read", "module": "/usr/lib/x86_64-linux-gnu/libc.so.6", "in_app": False},
         {"function": "shop_load", "module": "/usr/bin/shop", "in_app": True, "file": "load.c", "line": 42},
         {"function": "g_main_context_dispatch", "module": "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0",
          "in_app": False},
         {"function": "main", "module": "/usr/bin/shop", "in_app": True}]


def jank_record(ts, version, kind, ms, fingerprint, profile=None, interval=10.0):
    rec = {"type": "jank", "ts": ts, "kind": kind, "duration_ms": float(ms), "page": "HomeWindow",
           "stack_status": "captured", "stack_method": "perf", "fingerprint": fingerprint,
           "fingerprint_version": 2, "stack": STACK}
    if profile:
        rec.update({"profile_samples": sum(int(x.rpartition(" ")[2]) for x in profile.split("\n")),
                    "profile_interval_ms": interval, "profile": profile})
    attrs = [attr("pacer.type", "jank"), attr("pacer.kind", kind), attr("pacer.duration_ms", float(ms)),
             attr("pacer.fingerprint", fingerprint)]
    return {"timeUnixNano": str(ts), "observedTimeUnixNano": str(ts), "severityNumber": 13, "severityText": "WARN",
            "body": {"stringValue": json.dumps(rec)}, "attributes": attrs}


FP_A, FP_B = "a1a1a1a1a1a1a1a1", "b2b2b2b2b2b2b2b2"
BASE = "main;g_main_context_dispatch;shop_load"
JANKS = [
    # 30 + 10 samples of 10 ms: 300 ms in shop_load's read, 100 in shop_parse (a function the stack does not show)
    ("1.0", "jank", 500, FP_A, "%s;read 30\nmain;g_main_context_dispatch;shop_parse 10" % BASE),
    # 15 + 5 samples: 150 ms in read, 50 in poll under shop_load
    ("2.0", "jank", 300, FP_A, "%s;read 15\n%s;poll 5" % (BASE, BASE)),
    # no profile: its stack for its whole 250 ms
    ("2.0", "jank", 250, FP_A, None),
    # the same fingerprint as a hang: 200 samples in read
    ("1.0", "hang", 2500, FP_A, "%s;read 200" % BASE),
    # another group
    ("1.0", "jank", 700, FP_B, "main;g_main_context_dispatch;shop_other 60"),
]


def node(tree, *path):
    """The node of the call tree at path (names from the root's child)."""
    for name in path:
        kids = [c for c in tree.get("children", []) if c["name"] == name]
        assert len(kids) == 1, (name, [c["name"] for c in tree.get("children", [])])
        tree = kids[0]
    return tree


class DashReads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Pacerd()
        for version, dt, window, frames, slow, widgets in FRAMES:
            cls.d.ingest("/v1/metrics", frames_body(version, NOW + dt * S, window, frames, slow, widgets))
        for version in ("1.0", "2.0"):
            logs = [jank_record(NOW + 100 * S + i, v, kind, ms, fp, prof)
                    for i, (v, kind, ms, fp, prof) in enumerate(JANKS) if v == version]
            cls.d.ingest("/v1/logs", {"resourceLogs": [{"resource": resource(version, "s-" + version),
                                                        "scopeLogs": [{"scope": {"name": "pacer"},
                                                                       "logRecords": logs}]}]})

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def windows(self, query=""):
        got = self.d.query("/api/v1/frames?app=shop" + query)
        return {w["window"]: w for w in got["windows"]}

    def widgets(self, w):
        return [(x["type"], x["phase"], x["ms"], x["calls"], x["records"]) for x in w["slow_widgets"]]

    def test_slowest_widget_types_summed_per_window_type_and_phase(self):
        ws = self.windows()
        # EditorWindow, all versions: ListView's layout over two records, Label's paint over two
        self.assertEqual(self.widgets(ws["EditorWindow"]), [
            ("GtkListView", "layout", 200.5, 60, 2),
            ("GtkLabel", "paint", 80.25, 310, 2),
            ("GtkLabel", "layout", 12.5, 100, 1),
            ("GtkBox", "layout", 10.0, 5, 1),
        ])
        self.assertEqual(ws["EditorWindow"]["slow_widget_types"], 4)
        self.assertEqual((ws["EditorWindow"]["records"], ws["EditorWindow"]["frames"]), (3, 1500))
        # twelve types: the ten longest, longest first (Type12: 60 ms … Type03: 15 ms)
        lw = ws["ListWindow"]
        self.assertEqual([(x[0], x[2]) for x in self.widgets(lw)], [("Type%02d" % k, 5.0 * k) for k in range(12, 2, -1)])
        self.assertEqual([x[1] for x in self.widgets(lw)][:2], ["layout", "paint"])  # Type12, Type11
        self.assertEqual(lw["slow_widget_types"], 12)
        # a window whose records named no widget type (an element without one names none)
        self.assertNotIn("slow_widgets", ws["PlainWindow"])
        self.assertEqual(ws["PlainWindow"]["records"], 2)

    def test_slowest_widget_types_honour_version_range_and_count(self):
        ws = self.windows("&version=1.0")
        self.assertEqual(self.widgets(ws["EditorWindow"])[:2], [("GtkListView", "layout", 200.5, 60, 2),
                                                                 ("GtkLabel", "paint", 30.25, 300, 1)])
        ws = self.windows("&version=2.0")
        self.assertEqual(self.widgets(ws["EditorWindow"]), [("GtkLabel", "paint", 50.0, 10, 1)])
        self.assertNotIn("ListWindow", ws)
        # [from, to) in seconds: the EditorWindow records at +10 s and +20 s
        frm = (NOW + 5 * S) // S + 1
        ws = self.windows("&from=%d&to=%d" % (frm, (NOW + 25 * S) // S))
        self.assertEqual(self.widgets(ws["EditorWindow"]), [("GtkListView", "layout", 80.0, 20, 1),
                                                             ("GtkLabel", "paint", 50.0, 10, 1),
                                                             ("GtkLabel", "layout", 12.5, 100, 1)])
        ws = self.windows("&widgets=2")
        self.assertEqual([x[0] for x in self.widgets(ws["ListWindow"])], ["Type12", "Type11"])
        self.assertEqual(ws["ListWindow"]["slow_widget_types"], 12)
        ws = self.windows("&widgets=0")
        self.assertFalse([w for w in ws.values() if "slow_widgets" in w])

    def flame(self, query):
        return self.d.query("/api/v1/jank?app=shop" + query)

    def test_one_fingerprints_flame_graph(self):
        got = self.flame("&fingerprint=" + FP_A + "&kind=jank")
        self.assertEqual(got["records"], 3)
        self.assertEqual([g["fingerprint"] for g in got["groups"]], [FP_A])
        f = got["flame"]
        # 300 + 100 + 150 + 50 ms of samples, 250 ms of a stack
        self.assertEqual((f["value"], f["count"]), (850.0, 3))
        load = node(f, "main", "g_main_context_dispatch", "shop_load")
        self.assertEqual((load["value"], load["count"], load["in_app"]), (750.0, 3, True))
        read = node(load, "read")
        self.assertEqual((read["value"], read["count"], read["in_app"]), (700.0, 3, False))
        self.assertEqual((node(load, "poll")["value"], node(load, "poll")["count"]), (50.0, 1))
        parse = node(f, "main", "g_main_context_dispatch", "shop_parse")
        self.assertEqual((parse["value"], parse["count"]), (100.0, 1))
        self.assertEqual(len(node(f, "main", "g_main_context_dispatch")["children"]), 2)  # no shop_other
        # the hangs of the fingerprint alone, then both kinds
        got = self.flame("&fingerprint=" + FP_A + "&kind=hang")
        self.assertEqual((got["records"], got["flame"]["value"]), (1, 2000.0))
        got = self.flame("&fingerprint=" + FP_A)
        self.assertEqual((got["records"], got["flame"]["value"], got["flame"]["count"]), (4, 2850.0, 4))
        self.assertEqual(node(got["flame"], "main", "g_main_context_dispatch", "shop_load", "read")["value"], 2700.0)
        # with the version: the 1.0 jank only
        got = self.flame("&fingerprint=" + FP_A + "&kind=jank&version=1.0")
        self.assertEqual((got["records"], got["flame"]["value"]), (1, 400.0))
        # all groups: both fingerprints merged
        got = self.flame("")
        self.assertEqual((got["records"], got["flame"]["value"]), (5, 3450.0))
        self.assertEqual(self.flame("&fingerprint=c3c3c3c3c3c3c3c3")["records"], 0)

    def test_bad_parameters(self):
        for path, word in (("/api/v1/frames?app=shop&widgets=101", "widgets:"),
                           ("/api/v1/frames?app=shop&widgets=-1", "widgets:"),
                           ("/api/v1/frames?app=shop&widgets=ten", "widgets:"),
                           ("/api/v1/frames?app=shop&widgets=", "widgets:"),
                           ("/api/v1/frames?app=shop&widget=3", "widget"),
                           ("/api/v1/frames?app=shop&from=20&to=10", "from, to:"),
                           ("/api/v1/jank?app=shop&fingerprint=", "fingerprint:"),
                           ("/api/v1/jank?app=shop&fingerprint=" + "a" * 65, "fingerprint:"),
                           ("/api/v1/jank?app=shop&kind=freeze", "kind:"),
                           ("/api/v1/jank?fingerprint=" + FP_A, "app:")):
            with self.subTest(path=path):
                st, _, body = self.d.request("GET", path, token=ADMIN)
                self.assertEqual(st, 400, body)
                self.assertIn(word, json.loads(body)["error"])


if __name__ == "__main__":
    unittest.main()
