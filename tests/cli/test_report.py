#!/usr/bin/env python3
"""`pacer report FILE.jsonl`: run the real binary on records files with known
values and check the numbers it prints (JSON exactly, text by row)."""

import json
import os
import random
import re
import subprocess
import tempfile
import unittest

PACER = os.environ.get("PACER", "pacer")
SOURCE_ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLE = os.path.join(SOURCE_ROOT, "tests", "data", "report-sample.jsonl")


def common(rtype, app="demo"):
    return {"type": rtype, "ts": 1733000000000000000, "app": app, "version": "1.0",
            "session": "s1", "pid": 100}


def page(name, status="complete", app="demo", **fields):
    r = common("page", app)
    r.update(page=name, instance=1, kind="page", status=status, main=False)
    r.update(fields)
    return r


def startup(kind, app="demo", outlier=False, **fields):
    r = common("startup", app)
    r.update(kind=kind, outlier=outlier, phases={})
    r.update(fields)
    return r


def metric(m):
    return m["n"], m["p50"], m["p90"], m["p99"], m["max"]


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, records, name="records.jsonl"):
        """Writes records (dicts, or raw strings taken as lines) to a file."""
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            for r in records:
                f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
        return path

    def run_report(self, *args, stdin=None):
        return subprocess.run([PACER, "report", *args], input=stdin, capture_output=True,
                              text=True, timeout=60)

    def report_json(self, *args, rc=0, stdin=None):
        p = self.run_report("--format", "json", *args, stdin=stdin)
        self.assertEqual(p.returncode, rc, p.stderr)
        return json.loads(p.stdout), p

    def page_of(self, doc, name):
        for pg in doc["pages"]:
            if pg["page"] == name:
                return pg
        self.fail(f"no page {name} in {doc['pages']}")

    # --- percentiles ---------------------------------------------------------

    def test_percentiles_1_to_100(self):
        values = list(range(1, 101))
        random.Random(7).shuffle(values)  # the report must sort
        path = self.write([page("Main", total_ms=float(v)) for v in values])
        doc, _ = self.report_json(path)
        self.assertEqual(metric(self.page_of(doc, "Main")["metrics"]["total_ms"]), (100, 50, 90, 99, 100))

        p = self.run_report(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^\s+total_ms\s+100\s+50\.0\s+90\.0\s+99\.0\s+100\.0$")
        self.assertRegex(p.stdout, r"(?m)^\s+metric \(ms\)\s+n\s+p50\s+p90\s+p99\s+max$")

    def test_nearest_rank_small_sets(self):
        # 5 values: p50 rank ceil(2.5)=3, p90 rank ceil(4.5)=5, p99 rank 5.
        # 10 values: p50 rank 5, p90 rank 9, p99 rank 10. 1 value: all ranks 1.
        recs = [page("Five", initial_draw_ms=v) for v in (50.5, 10.25, 40.0, 20.125, 30.0)]
        recs += [page("Ten", initial_draw_ms=float(v)) for v in range(10, 0, -1)]
        recs += [page("One", initial_draw_ms=12.345)]
        doc, p = self.report_json(self.write(recs))
        self.assertEqual(metric(self.page_of(doc, "Five")["metrics"]["initial_draw_ms"]), (5, 30.0, 50.5, 50.5, 50.5))
        self.assertEqual(metric(self.page_of(doc, "Ten")["metrics"]["initial_draw_ms"]), (10, 5, 9, 10, 10))
        self.assertEqual(metric(self.page_of(doc, "One")["metrics"]["initial_draw_ms"]), (1, 12.345, 12.345, 12.345, 12.345))
        # three decimals come back as written, not as 12.345000000000001
        self.assertIn("12.345,", p.stdout)
        self.assertNotIn("12.34500", p.stdout)

    def test_help_documents_nearest_rank(self):
        p = subprocess.run([PACER, "report", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("nearest-rank", p.stdout)
        self.assertIn("ceil(p/100 * n)", p.stdout)
        top = subprocess.run([PACER, "--help"], capture_output=True, text=True)
        self.assertIn("Summarise a records file: pages, start-up, requests, jank, frames", top.stdout)

    # --- pages ---------------------------------------------------------------

    def test_status_counts_and_sorted_pages(self):
        recs = [page("Zeta", "complete")] * 3 + [page("Zeta", "deadline_exceeded")] * 2
        recs += [page("Zeta", "abandoned"), page("Zeta", "incomplete"), page("Alpha", "complete")]
        path = self.write(recs)
        doc, _ = self.report_json(path)
        self.assertEqual([pg["page"] for pg in doc["pages"]], ["Alpha", "Zeta"])
        zeta = self.page_of(doc, "Zeta")
        self.assertEqual(zeta["count"], 7)
        self.assertEqual(zeta["status"], {"complete": 3, "deadline_exceeded": 2, "abandoned": 1, "incomplete": 1,
                                          "never_shown": 0})

        out = self.run_report(path).stdout
        self.assertIn("Zeta: 7 records (complete 3, deadline_exceeded 2, abandoned 1, incomplete 1)\n", out)
        self.assertLess(out.index("Alpha:"), out.index("Zeta:"))

    def test_never_shown_counted_apart(self):
        recs = [page("Dlg", "never_shown")] * 2 + [page("Dlg", "complete"), page("Dlg", "abandoned")]
        path = self.write(recs)
        doc, _ = self.report_json(path)
        dlg = self.page_of(doc, "Dlg")
        self.assertEqual(dlg["count"], 4)
        self.assertEqual(dlg["status"]["never_shown"], 2)
        out = self.run_report(path).stdout
        self.assertIn("Dlg: 4 records (complete 1, deadline_exceeded 0, abandoned 1, incomplete 0; "
                      "never shown 2, not failures)", out)

    def test_absent_metrics(self):
        recs = [page("P", initial_draw_ms=10.0, total_ms=10.0),
                page("P", initial_draw_ms=20.0, api_load_ms=100.0, final_draw_ms=5.0, total_ms=125.0),
                page("P", initial_draw_ms=30.0, api_load_ms=None)]  # null counts as absent
        path = self.write(recs)
        doc, _ = self.report_json(path)
        m = self.page_of(doc, "P")["metrics"]
        self.assertEqual(metric(m["initial_draw_ms"]), (3, 20, 30, 30, 30))
        self.assertEqual(metric(m["api_load_ms"]), (1, 100, 100, 100, 100))
        self.assertEqual(metric(m["total_ms"]), (2, 10, 125, 125, 125))

        only_init = self.write([page("Q", initial_draw_ms=1.0)], "q.jsonl")
        doc, _ = self.report_json(only_init)
        self.assertEqual(metric(self.page_of(doc, "Q")["metrics"]["final_draw_ms"]), (0, None, None, None, None))
        out = self.run_report(only_init).stdout
        self.assertRegex(out, r"(?m)^\s+final_draw_ms\s+0\s+-\s+-\s+-\s+-$")

    def test_api_times_and_failures(self):
        statuses = [200, 404, 500, 0, -1, None, 399, 204]
        recs = []
        for i, st in enumerate(statuses, 1):
            api = {"url": "/v1/items", "ms": float(i * 10)}
            if st is not None:
                api["status"] = st
            recs.append(page("P", apis=[api, {"url": "/v1/never"}]))
        path = self.write(recs)
        doc, _ = self.report_json(path)
        apis = self.page_of(doc, "P")["apis"]
        self.assertEqual([a["url"] for a in apis], ["/v1/items", "/v1/never"])
        items, never = apis
        # failures: 404, 500, 0, -1 and the absent status; 200, 399, 204 succeed
        self.assertEqual((items["calls"], items["n"], items["p50"], items["p90"], items["failures"]),
                         (8, 8, 40, 80, 5))
        self.assertEqual((never["calls"], never["n"], never["p50"], never["p90"], never["failures"]),
                         (8, 0, None, None, 8))

        out = self.run_report(path).stdout
        self.assertRegex(out, r"(?m)^\s+api\s+calls\s+n\s+p50\s+p90\s+failures$")
        self.assertRegex(out, r"(?m)^\s+/v1/items\s+8\s+8\s+40\.0\s+80\.0\s+5$")
        self.assertRegex(out, r"(?m)^\s+/v1/never\s+8\s+0\s+-\s+-\s+8$")

    # --- start-up ------------------------------------------------------------

    def test_cold_warm_and_outliers(self):
        recs = [startup("cold", cold_ms=float(v), first_screen_ms=float(v) / 2, app_cost_ms=float(v) / 4)
                for v in range(100, 1100, 100)]  # 10 cold starts: 100..1000
        recs.append(startup("cold", outlier=True, cold_ms=45000.0, first_screen_ms=44000.0))
        recs += [startup("warm", warm_ms=v) for v in (80.5, 60.25, 70.0)]
        recs.append(startup("warm", outlier=True, warm_ms=99999.0))
        recs.append(startup("cold", full_display_ms=1500.0))  # a cold start with only TTFD
        path = self.write(recs)
        doc, _ = self.report_json(path)
        su = doc["startup"]
        self.assertEqual(su["outliers"], 2)
        self.assertEqual((su["cold"]["count"], su["cold"]["outliers"]), (12, 1))
        self.assertEqual((su["warm"]["count"], su["warm"]["outliers"]), (4, 1))
        cm = su["cold"]["metrics"]
        self.assertEqual(metric(cm["cold_ms"]), (10, 500, 900, 1000, 1000))
        self.assertEqual(metric(cm["first_screen_ms"]), (10, 250, 450, 500, 500))
        self.assertEqual(metric(cm["app_cost_ms"]), (10, 125, 225, 250, 250))
        self.assertEqual(metric(cm["full_display_ms"]), (1, 1500, 1500, 1500, 1500))
        self.assertEqual(metric(su["warm"]["metrics"]["warm_ms"]), (3, 70, 80.5, 80.5, 80.5))

        out = self.run_report(path).stdout
        self.assertIn("cold starts: 12 (1 outlier)", out)
        self.assertIn("warm starts: 4 (1 outlier)", out)
        self.assertIn("outliers: 2 (excluded from the percentiles above)", out)
        self.assertRegex(out, r"(?m)^\s+cold_ms\s+10\s+500\.0\s+900\.0\s+1000\.0\s+1000\.0$")
        self.assertRegex(out, r"(?m)^\s+warm_ms\s+3\s+70\.0\s+80\.5\s+80\.5\s+80\.5$")
        self.assertNotIn("45000", out)
        self.assertNotIn("99999", out)

    # --- other types, filters --------------------------------------------------

    def test_other_types_counted(self):
        recs = [common("oddity")] * 3 + [common("brand_new")]
        path = self.write(recs + [page("P")])
        doc, _ = self.report_json(path)
        self.assertEqual(doc["other"], {"brand_new": 1, "oddity": 3})
        self.assertEqual(doc["records"], 5)
        self.assertIn("Other records: brand_new 1, oddity 3", self.run_report(path).stdout)

    # --- leaks -----------------------------------------------------------------

    def frame(self, fn, in_app=True, file=None, line=0):
        f = {"address": "0x1", "module": "app" if in_app else "libgtk-4.so.1", "offset": "0x1", "function": fn,
             "in_app": in_app}
        if file:
            f.update(file=file, line=line)
        return f

    def object_leak(self, sig, page_class, types, session="s1", origin="app", refs=None, **extra):
        r = common("leak")
        r.update(kind="object", signature=sig, origin=origin, page=page_class, instance=1, page_kind="window",
                 retained=sum(c for _, c in types) + 1, check_ms=5100.0,
                 types=[{"type": t, "count": c} for t, c in types],
                 objects=[{"type": t, "ref_count": 1} for t, _ in types], session=session)
        if refs:
            r["objects"][0]["refs"] = [{"op": "ref", "count": 1, "stack": refs}]
        r.update(extra)
        return r

    def native_leak(self, sig, blocks, nbytes, stack, origin="app"):
        r = common("leak")
        r.update(kind="native", signature=sig, origin=origin, count=blocks, bytes=nbytes, sampled=1, stack=stack)
        return r

    def test_leaks_by_signature(self):
        kept = [self.frame("g_object_ref", False), self.frame("stash", file="/src/app.c", line=42)]
        recs = [self.object_leak("aaaaaaaaaaaaaaaa", "MainWindow", [("GtkLabel", 1)], session="s1"),
                self.object_leak("aaaaaaaaaaaaaaaa", "MainWindow", [("GtkLabel", 1)], session="s2", refs=kept),
                self.object_leak("aaaaaaaaaaaaaaaa", "MainWindow", [("GtkLabel", 1)], session="s2"),
                self.object_leak("bbbbbbbbbbbbbbbb", "GtkAssistant", [("GtkBox", 2)], origin="library",
                                 known_leak="gtk-assistant-pages"),
                self.native_leak("cccccccccccccccc", 20000, 4000000, [self.frame("malloc", False),
                                                                      self.frame("list_push", file="a/n.c", line=7)]),
                self.native_leak("cccccccccccccccc", 10, 2000, [self.frame("list_push", file="a/n.c", line=7)]),
                self.native_leak("0000000000000000", 5, 50, [], origin="unknown")]
        path = self.write(recs)
        doc, _ = self.report_json(path)
        leaks = {g["signature"]: g for g in doc["leaks"]}
        self.assertEqual(list(leaks), ["aaaaaaaaaaaaaaaa", "cccccccccccccccc", "0000000000000000",
                                       "bbbbbbbbbbbbbbbb"])  # by records, then bytes
        a = leaks["aaaaaaaaaaaaaaaa"]
        self.assertEqual((a["records"], a["sessions"], a["versions"], a["retained"]), (3, 2, 1, 6))
        self.assertEqual((a["kind"], a["origin"], a["page"], a["types"]), ("object", "app", "MainWindow", "GtkLabel x1"))
        self.assertEqual(a["where"], "kept by stash (app.c:42)")
        c = leaks["cccccccccccccccc"]
        self.assertEqual((c["records"], c["blocks"], c["bytes"], c["where"]), (2, 20010, 4002000, "list_push (n.c:7)"))
        self.assertEqual(leaks["bbbbbbbbbbbbbbbb"]["known_leak"], "gtk-assistant-pages")
        self.assertIsNone(leaks["0000000000000000"]["where"])
        text = self.run_report(path).stdout
        app, _, rest = text.partition("known and library leaks (not the app's):")
        self.assertRegex(app, r"(?m)^\s+aaaaaaaaaaaaaaaa\s+object\s+3\s+2\s+MainWindow: GtkLabel x1 \(6 retained\)$")
        self.assertRegex(app, r"(?m)^\s+kept by stash \(app\.c:42\)$")
        self.assertRegex(app, r"(?m)^\s+cccccccccccccccc\s+native\s+2\s+1\s+4002000 bytes in 20010 blocks$")
        self.assertNotIn("bbbb", app)
        self.assertRegex(rest, r"(?m)^\s+library: gtk-assistant-pages$")
        self.assertIn("0000000000000000", rest)

    def test_leaks_page_filter_and_bad_records(self):
        recs = [self.object_leak("aaaaaaaaaaaaaaaa", "MainWindow", [("GtkLabel", 1)]),
                self.object_leak("dddddddddddddddd", "Other", [("GtkBox", 1)])]
        doc, _ = self.report_json("--page", "Other", self.write(recs))
        self.assertEqual([g["signature"] for g in doc["leaks"]], ["dddddddddddddddd"])
        bad = common("leak")
        bad.update(kind="native", signature="e" * 16, origin="app", count=1)  # no bytes
        noorigin = dict(recs[0])
        del noorigin["origin"]
        p = self.run_report(self.write([bad, noorigin, recs[0]]))
        self.assertEqual(p.returncode, 1)
        self.assertIn(':1: a native leak without "bytes"', p.stderr)
        self.assertIn(':2: missing field "origin"', p.stderr)
        self.assertIn("aaaaaaaaaaaaaaaa", p.stdout)
        self.assertIn("no leak records", self.run_report(self.write([page("P")])).stdout)

    # --- requests, jank, frames ------------------------------------------------

    def test_requests_by_path(self):
        recs = []
        for i, ms in enumerate(range(1, 11)):  # /api/list: 1..10 ms, ?query and host vary
            r = common("net")
            r.update(lib="curl", method="GET", url="http://h%d:80/api/list?page=%d" % (i % 2, i), status=200,
                     bytes_sent=100, bytes_received=1000, total_ms=float(ms), classes=[])
            recs.append(r)
        for status in (404, 0, 200):
            r = common("net")
            r.update(lib="soup", url="https://x/api/config#f", status=status, bytes_sent=None,
                     bytes_received=None, total_ms=5.0, classes=[])
            recs.append(r)
        doc, _ = self.report_json(self.write(recs))
        by = {p["path"]: p for p in doc["requests"]}
        self.assertEqual(set(by), {"/api/list", "/api/config"})
        lst = by["/api/list"]
        self.assertEqual((lst["count"], lst["p50_ms"], lst["p90_ms"], lst["failures"]), (10, 5.0, 9.0, 0))
        self.assertEqual((lst["bytes_sent"], lst["bytes_received"]), (1000, 10000))
        self.assertEqual((by["/api/config"]["count"], by["/api/config"]["failures"]), (3, 2))
        text = self.run_report(self.write(recs)).stdout
        self.assertRegex(text, r"/api/list +10 +5\.0 +9\.0 +0 +1000 +10000")

    def jank(self, fp, ms, kind="jank", page="HomeWindow", fn="slow_fn"):
        r = common("jank")
        r.update(kind=kind, duration_ms=ms, stack_status="captured", page=page)
        if fp:
            r.update(fingerprint=fp, stack=[
                {"address": "0x1", "module": "libc.so.6", "function": "memcpy", "in_app": False},
                {"address": "0x2", "module": "app", "function": fn, "file": "/src/app.c", "line": 42,
                 "in_app": True},
                {"address": "0x3", "module": "app", "function": "main", "file": "/src/app.c", "line": 7,
                 "in_app": True}])
        return r

    def test_jank_grouped_by_fingerprint(self):
        recs = [self.jank("aaaa", 700.0), self.jank("aaaa", 900.0, fn="slowest"), self.jank("aaaa", 6000.0 - 1,
                kind="hang", fn="slowest_of_all"), self.jank("bbbb", 800.0), self.jank(None, 750.0)]
        doc, _ = self.report_json(self.write(recs))
        groups = doc["jank"]
        self.assertEqual([g["fingerprint"] for g in groups], ["aaaa", "-", "bbbb"])  # by count, then name
        a = groups[0]
        self.assertEqual((a["count"], a["hangs"], a["p50_ms"], a["max_ms"]), (3, 1, 900.0, 5999.0))
        self.assertEqual(a["top_frames"], ["slowest_of_all (app.c:42)", "main (app.c:7)"])  # in-app, longest
        self.assertEqual(a["page"], "HomeWindow")
        self.assertEqual(groups[1]["top_frames"], [])
        text = self.run_report(self.write(recs)).stdout
        self.assertRegex(text, r"aaaa +3 +1 +900\.0 +5999\.0 +HomeWindow")
        self.assertIn("at slowest_of_all (app.c:42)", text)
        bad = self.jank("cccc", 10.0)
        del bad["duration_ms"]
        _, p = self.report_json(self.write([bad]), rc=1)
        self.assertIn("duration_ms", p.stderr)

    def test_frames_per_window(self):
        recs = []
        for frames, slow, frozen, dropped, mx in ((100, 10, 1, 60, 800.0), (50, 5, 0, 10, 40.0)):
            r = common("frames")
            r.update(window="HomeWindow", instance=1, final=False, frames=frames, slow=slow, frozen=frozen,
                     dropped_frames=dropped, delay_ms=100.5, max_frame_ms=mx, refresh_ms=16.667, span_ms=1000.0,
                     levels={"best": frames - 2, "normal": 1, "middle": 0, "high": 0, "frozen": 1})
            recs.append(r)
        doc, _ = self.report_json(self.write(recs))
        (w,) = doc["frames"]
        self.assertEqual((w["window"], w["records"], w["frames"], w["slow"], w["frozen"], w["dropped_frames"]),
                         ("HomeWindow", 2, 150, 15, 1, 70))
        self.assertEqual((w["delay_ms"], w["max_frame_ms"], w["refresh_ms"]), (201.0, 800.0, 16.667))
        self.assertEqual(w["levels"], {"best": 146, "normal": 2, "middle": 0, "high": 0, "frozen": 2})
        text = self.run_report(self.write(recs)).stdout
        self.assertRegex(text, r"HomeWindow +150 +15 +10\.0 +1 +0\.7 +70 +201\.0 +800\.0 +16\.67")

    def test_page_filter(self):
        recs = [page("A", total_ms=1.0), page("B", total_ms=2.0), page("B", total_ms=3.0),
                startup("warm", warm_ms=5.0)]
        path = self.write(recs)
        doc, _ = self.report_json("--page", "B", path)
        self.assertEqual([pg["page"] for pg in doc["pages"]], ["B"])
        self.assertEqual(doc["pages"][0]["count"], 2)
        self.assertEqual(doc["startup"]["warm"]["count"], 1)  # start-up is still shown

        out = self.run_report(path, "--page=B").stdout
        self.assertIn("B: 2 records", out)
        self.assertNotIn("A: 1 record", out)
        self.assertIn("no page records of class Nope", self.run_report("--page", "Nope", path).stdout)

    def test_app_filter(self):
        recs = [page("P", app="one", total_ms=10.0), page("P", app="two", total_ms=20.0),
                startup("cold", app="two", cold_ms=300.0), common("oddity", app="one"),
                {"type": "oddity"}]  # no app: never matches --app
        path = self.write(recs)
        doc, _ = self.report_json("--app", "two", path)
        self.assertEqual(metric(self.page_of(doc, "P")["metrics"]["total_ms"]), (1, 20, 20, 20, 20))
        self.assertEqual(doc["startup"]["cold"]["count"], 1)
        self.assertEqual(doc["other"], {})
        self.assertEqual(doc["records"], 2)
        self.assertIn("of app two", self.run_report("--app", "two", path).stdout)

        doc, _ = self.report_json(path)  # no filter: everything
        self.assertEqual(self.page_of(doc, "P")["count"], 2)
        self.assertEqual(doc["other"], {"oddity": 2})

    def test_sample_file(self):
        doc, _ = self.report_json("--app", "notes", SAMPLE)
        notes = self.page_of(doc, "NoteListPage")
        self.assertEqual(notes["count"], 5)
        self.assertEqual(metric(notes["metrics"]["initial_draw_ms"]), (5, 40.125, 50, 50, 50))
        self.assertEqual(metric(notes["metrics"]["total_ms"]), (5, 163.0, 266.625, 266.625, 266.625))
        self.assertEqual([(a["url"], a["calls"], a["n"], a["failures"]) for a in notes["apis"]],
                         [("/v1/notes", 5, 3, 2), ("/v1/tags", 5, 5, 2)])
        self.assertEqual(doc["startup"]["cold"]["metrics"]["app_cost_ms"]["p50"], 120.125)
        self.assertEqual(doc["other"], {})
        self.assertEqual([(r["path"], r["count"], r["p50_ms"]) for r in doc["requests"]], [("/v1/notes", 1, 210.5)])
        self.assertEqual([(j["fingerprint"], j["count"], j["max_ms"]) for j in doc["jank"]], [("-", 1, 820.0)])

    # --- bad input -------------------------------------------------------------

    def test_bad_lines_reported_and_skipped(self):
        lines = [
            json.dumps(page("P", total_ms=1.0)),                        # 1
            "this is not json",                                          # 2
            "[1, 2]",                                                    # 3
            json.dumps(page("P", total_ms="5")),                         # 4
            "",                                                          # 5 (ignored)
            json.dumps(page("P", apis=[{"url": "/a", "ms": 1}, {"url": "/b", "ms": "x"}])),  # 6
            json.dumps(page("P", status="finished")),                    # 7
            json.dumps({"ts": 1, "page": "P"}),                          # 8 (no type)
            json.dumps(startup("lukewarm")),                             # 9
            json.dumps(startup("cold", outlier="no")),                   # 10
            json.dumps(page("P", total_ms=-3.0)),                        # 11
            '{"type": "page", "page": "P", "status": "complete", "total_ms": 3',  # 12 (cut short)
            json.dumps(page("P", total_ms=2.0)),                         # 13
            json.dumps(page("P", total_ms=3.0, app="elsewhere")),        # 14
            json.dumps(page("P", total_ms="7", app="elsewhere")),        # 15 bad even if filtered out
        ]
        path = self.write(lines)
        p = self.run_report(path)
        self.assertEqual(p.returncode, 1)
        err = p.stderr
        for n in (2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 15):
            self.assertIn(f"pacer report: {path}:{n}: ", err)
        for n in (1, 5, 13, 14):
            self.assertNotIn(f"{path}:{n}:", err)
        self.assertIn(f"{path}:2: not valid JSON", err)
        self.assertIn(f"{path}:3: not a JSON object", err)
        self.assertIn(f'{path}:4: field "total_ms" is a string, expected a number', err)
        self.assertIn(f'{path}:6: apis[1]: field "ms" is a string', err)
        self.assertIn(f'{path}:7: field "status" is "finished", expected one of complete', err)
        self.assertIn(f'{path}:8: missing field "type"', err)
        self.assertIn(f'{path}:11: field "total_ms" is negative', err)
        self.assertIn("skipped 11 bad lines", err)
        self.assertIn("3 records, 11 bad lines skipped", p.stdout)
        self.assertRegex(p.stdout, r"(?m)^\s+total_ms\s+3\s+2\.0\s+3\.0\s+3\.0\s+3\.0$")

        doc, p = self.report_json("--app", "demo", path, rc=1)  # filters do not hide bad input
        self.assertEqual(metric(self.page_of(doc, "P")["metrics"]["total_ms"]), (2, 1, 2, 2, 2))
        self.assertEqual(doc["skipped"], 11)

    def test_many_bad_lines_are_capped(self):
        path = self.write(["garbage"] * 120 + [json.dumps(page("P"))])
        p = self.run_report(path)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.count("not valid JSON"), 50)
        self.assertIn("70 more bad lines not shown", p.stderr)
        self.assertIn("skipped 120 bad lines", p.stderr)
        self.assertIn("P: 1 record", p.stdout)

    def test_empty_file(self):
        path = self.write([])
        doc, p = self.report_json(path)
        self.assertEqual(p.stderr, "")
        self.assertEqual(doc["pages"], [])
        self.assertEqual(doc["startup"]["cold"]["count"], 0)
        self.assertEqual(doc["startup"]["outliers"], 0)
        self.assertEqual(doc["other"], {})
        self.assertEqual((doc["records"], doc["skipped"]), (0, 0))
        p = self.run_report(path)
        self.assertEqual(p.returncode, 0)
        self.assertIn("no page records", p.stdout)
        self.assertIn("no start-up records", p.stdout)

        blank = self.write(["", "   ", "\t"], "blank.jsonl")
        self.assertEqual(self.run_report(blank).returncode, 0)

    def test_unreadable_file(self):
        missing = os.path.join(self.tmp.name, "nope.jsonl")
        p = self.run_report(missing)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"pacer report: cannot open {missing}", p.stderr)
        self.assertEqual(p.stdout, "")
        p = self.run_report(self.tmp.name)  # a directory opens but cannot be read
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read", p.stderr)

    def test_usage_errors(self):
        path = self.write([page("P")])
        for args in ([], [path, path], ["--format", "xml", path], ["--bogus", path], [path, "--format"]):
            p = self.run_report(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("pacer report: ", p.stderr)
            self.assertEqual(p.stdout, "", args)

    def test_stdin(self):
        text = "\n".join(json.dumps(page("P", total_ms=float(v))) for v in range(1, 11)) + "\n"
        doc, _ = self.report_json("-", stdin=text)
        self.assertEqual(metric(self.page_of(doc, "P")["metrics"]["total_ms"]), (10, 5, 9, 10, 10))
        p = self.run_report("-", stdin=text + "oops\n")
        self.assertEqual(p.returncode, 1)
        self.assertIn("pacer report: <stdin>:11: not valid JSON", p.stderr)


if __name__ == "__main__":
    unittest.main()
