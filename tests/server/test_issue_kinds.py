"""pacerd's application layer kind by kind, through OTLP as the SDK sends it:
every issue kind from records whose figures are known (and the near misses
that must stay candidates), the severity of issues whose inputs are known,
the life cycle across versions (new → ongoing → resolved → regressed, and by
hand), cleaning by reason (in the answer, /api/v1/cleaning and /metrics,
kept across a restart, copies sent without a batch id stored once), no false
alarm between identical versions of 20 apps (and a true shift found), the
same issues from records sealed into blocks before the analysis read them,
and from records of an earlier day that came after a later day's (across a
SIGKILL),
webhook retries with their idempotency key and a delivery pending across a
restart, and the issues API's strict parameters."""
import json
import math
import os
import random
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pacerd_harness import ADMIN, BACKEND, Pacerd, attr, scrape  # noqa: E402
from receiver import GitHubFake, Webhook  # noqa: E402

NOW = time.time_ns() - 3600 * 10**9  # an hour ago: inside the allowed clock skew either way
APPS = ["kinds", "grades", "life", "clean", "hooks", "api", "late", "tracker"] + ["null%d" % i for i in range(20)] + ["shifted"]
KEYS = {app: "%s-%016x" % (app, random.getrandbits(64)) for app in APPS}


def keys_text():
    return "".join("%s %s\n" % (a, k) for a, k in KEYS.items())


def resource(app, version, session):
    return {"attributes": [attr("service.name", app), attr("service.version", version),
                           attr("pacer.session", session)]}


def _id(bits):
    return "%0*x" % (bits // 4, random.getrandbits(bits - 1) | 1)


def pacer_span(kind, name, ts, ms, fields):
    attrs = [attr("pacer.type", kind)] + [attr("pacer." + k, v) for k, v in fields.items()]
    span_ns = int(ms * 1e6) if ms == ms and ms > 0 else 0  # a span never ends before it starts
    return {"traceId": _id(128), "spanId": _id(64), "name": name, "kind": 1, "startTimeUnixNano": str(ts),
            "endTimeUnixNano": str(ts + span_ns), "attributes": attrs}


def page(name, ts, total, initial=None, status="complete", **more):
    f = {"page": name, "status": status, "kind": "window", "instance": 1, "total_ms": float(total)}
    if initial is not None:
        f["initial_draw_ms"] = float(initial)
    f.update(more)
    return pacer_span("page", "page " + name, ts, total, f)


def startup(kind, ts, **ms):
    f = {"kind": kind}
    f.update({k: (float(v) if not isinstance(v, bool) else v) for k, v in ms.items()})
    return pacer_span("startup", "startup " + kind, ts, max([v for v in ms.values() if not isinstance(v, bool)] or [1]),
                      f)


def request(ts_end, url, ms, status=200, ctype="application/json", nbytes=512, page_name=None, error=None):
    f = {"lib": "curl", "method": "GET", "url": "http://api.example" + url, "status": status,
         "total_ms": float(ms), "bytes_received": nbytes, "content_type": ctype}
    if page_name:
        f["page"] = page_name
    if error:
        f["error"] = error
    return pacer_span("net", "GET " + url.split("?")[0], ts_end, ms, f)


def spans_body(app, version, session, spans):
    return {"resourceSpans": [{"resource": resource(app, version, session),
                               "scopeSpans": [{"scope": {"name": "pacer"}, "spans": spans}]}]}


def log_record(rec, ts, extra_attrs=()):
    attrs = [attr("pacer.type", rec["type"])]
    for k, v in rec.items():
        if k != "type" and isinstance(v, (str, int, float, bool)):
            attrs.append(attr("pacer." + k, v))
    attrs.extend(extra_attrs)
    line = dict({"type": rec["type"], "ts": ts}, **{k: v for k, v in rec.items() if k != "type"})
    return {"timeUnixNano": str(ts), "severityNumber": 13, "severityText": "WARN",
            "body": {"stringValue": json.dumps(line)}, "attributes": attrs, "observedTimeUnixNano": str(ts)}


def logs_body(app, version, session, records):
    return {"resourceLogs": [{"resource": resource(app, version, session),
                              "scopeLogs": [{"scope": {"name": "pacer"}, "logRecords": records}]}]}


def jank(ts, ms, fingerprint="0123456789abcdef", kind="jank", page_name="HomeWindow", function="app_busy",
         profile=None):
    rec = {"type": "jank", "kind": kind, "duration_ms": float(ms), "page": page_name, "stack_status": "captured"}
    if fingerprint:
        rec.update({"fingerprint": fingerprint, "fingerprint_version": 2,
                    "stack": [{"function": function, "module": "app", "in_app": True}]})
    if profile:
        rec.update({"profile_samples": sum(int(line.rpartition(" ")[2]) for line in profile.split("\n")),
                    "profile_interval_ms": 10.0, "profile": profile})
    return log_record(rec, ts)


# A hang's profile as the agent writes it: 600 samples, 400 of them in
# app_wait's poll, 150 in app_parse, 50 in poll called from elsewhere
HANG_PROFILE = ("_start;main;g_main_context_dispatch;app_wait;poll 400\n"
                "_start;main;g_main_context_dispatch;app_wait;app_parse 150\n"
                "_start;main;g_main_context_dispatch;app_idle;poll 50")


def frames_body(app, version, session, ts, window, frames, frozen, delay_ms, max_ms, slow_phases=None):
    dims = [attr("pacer.window", window), attr("pacer.instance", 1), attr("pacer.final", True),
            attr("pacer.refresh_ms", 16.667)]
    values = {"frames": frames, "slow": frozen, "frozen": frozen, "dropped_frames": frozen * 50,
              "delay_ms": float(delay_ms), "max_frame_ms": float(max_ms), "span_ms": 10000.0,
              "levels.best": frames - frozen, "levels.normal": 0, "levels.middle": 0, "levels.high": 0,
              "levels.frozen": frozen}
    for phase, ms in (slow_phases or {}).items():
        values["slow_phases_ms." + phase] = float(ms)
        values["phases_ms." + phase] = float(ms) + 100.0
    metrics = []
    for name, v in values.items():
        point = {"timeUnixNano": str(ts), "attributes": dims}
        if isinstance(v, float):
            point["asDouble"] = v
        else:
            point["asInt"] = str(v)
        metrics.append({"name": "pacer.frames." + name, "gauge": {"dataPoints": [point]}})
    return {"resourceMetrics": [{"resource": resource(app, version, session),
                                 "scopeMetrics": [{"scope": {"name": "pacer"}, "metrics": metrics}]}]}


class Base(unittest.TestCase):
    extra = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        conf = os.path.join(cls.tmp.name, "analysis.conf")
        with open(conf, "w") as f:
            f.write(cls.config)
        cls.hook = Webhook()
        cls.d = Pacerd(["--analysis-config", conf, "--webhook", cls.hook.url] + list(cls.extra), keys_text=keys_text(),
                       state=True)

    @classmethod
    def tearDownClass(cls):
        cls.d.close()
        cls.hook.close()
        cls.tmp.cleanup()

    config = "interval-ms = 100\n"

    def post(self, app, path, body, batch_id=None, expect=200):
        headers = {"X-Pacer-Batch-Id": batch_id} if batch_id else None
        return self.d.json("POST", path, body, token=KEYS[app], headers=headers, expect=expect)

    def spans(self, app, version, session, spans, **kw):
        return self.post(app, "/v1/traces", spans_body(app, version, session, spans), **kw)

    def settle(self, cycles=3, timeout=60):
        deadline = time.monotonic() + timeout
        start = scrape(self.d)["pacerd_analysis_cycles_total"]
        while time.monotonic() < deadline:
            m = scrape(self.d)
            if m["pacerd_analysis_behind_rows"] == 0 and m["pacerd_analysis_cycles_total"] >= start + cycles:
                return
            time.sleep(0.05)
        raise AssertionError("the analysis did not catch up")

    def issues(self, app, query=""):
        out, cursor = [], None
        while True:
            page_ = self.d.query("/api/v1/issues?app=%s&limit=100%s%s" % (app, query,
                                                                          "&cursor=" + cursor if cursor else ""))
            out.extend(page_["issues"])
            cursor = page_.get("next")
            if not cursor:
                return out

    def by_key(self, app):
        return {(i["kind"], i["evidence"]["key"]): i for i in self.issues(app)}


class Kinds(Base):
    def test_every_kind_and_its_near_misses(self):
        app, v, t = "kinds", "1.0", NOW
        spans = []
        for i in range(20):  # a failing pattern; a healthy one; one that failed twice in 100
            spans.append(request(t + i * 10**6, "/api/fail/%d" % i, 30, status=500 if i < 6 else 200))
            spans.append(request(t + i * 10**6, "/api/ok", 30))
            spans.append(request(t + i * 10**6, "/api/slow", 1500))
        for i in range(100):
            spans.append(request(t + i * 10**6, "/api/rare", 20, status=503 if i < 2 else 200))
        spans.append(request(t, "/img/7", 40, ctype="image/png", nbytes=200 * 1024, page_name="GalleryWindow"))
        spans.append(request(t, "/img/small", 10, ctype="image/png", nbytes=10 * 1024))
        spans.append(request(t, "/api/dump", 400, nbytes=500 * 1024))
        for i in range(12):
            spans.append(page("SlowWindow", t + i * 10**7, 3000 + i, initial=100))
            spans.append(page("FastWindow", t + i * 10**7, 500 + i, initial=50))
            spans.append(page("NearWindow", t + i * 10**7, 2600 if i == 0 else 600, initial=50))  # one slow of 12
        for i in range(10):
            spans.append(startup("cold", t + i, cold_ms=6000, first_screen_ms=3000, full_display_ms=7000))
            spans.append(startup("warm", t + i, warm_ms=500))
        # serial: three requests one after another inside one load, each 200 ms
        spans.append(page("SerialWindow", t, 1000.0, initial=50))
        for k, name in enumerate(["/api/a", "/api/b", "/api/c"]):
            spans.append(request(t + (250 + 250 * k) * 10**6, name, 200, page_name="SerialWindow"))
        # one session each: the requests of a session count inside its page loads
        self.spans(app, v, "s-net", [x for x in spans if x["name"].startswith("GET") and "/api/a" not in x["name"]
                                     and "/api/b" not in x["name"] and "/api/c" not in x["name"]])
        self.spans(app, v, "s-pages", [x for x in spans if not x["name"].startswith("GET")
                                       and x["name"] != "page SerialWindow"])
        self.spans(app, v, "s-serial", [x for x in spans if x["name"] == "page SerialWindow"
                                        or x["name"] in ("GET /api/a", "GET /api/b", "GET /api/c")])
        logs = [jank(t, 6200, kind="hang", fingerprint="00000000000000aa", function="app_wait", profile=HANG_PROFILE),
                jank(t + 1, 900, fingerprint=None, page_name="NoStackWindow"),
                log_record({"type": "leak", "kind": "object", "signature": "8e72c785a8a38d30", "origin": "app",
                            "page": "LeakWindow", "instance": 1, "page_kind": "window", "retained": 2,
                            "check_ms": 1100.0, "types": [{"type": "GtkLabel", "count": 1}]}, t),
                log_record({"type": "leak", "kind": "object", "signature": "1111111111111111", "origin": "library",
                            "known_leak": "gtk-im-context", "page": "LeakWindow", "instance": 1,
                            "page_kind": "window", "retained": 1, "check_ms": 1100.0,
                            "types": [{"type": "GtkIMContextSimple", "count": 1}]}, t),
                log_record({"type": "leak", "kind": "native", "signature": "1051c08a8674e779", "origin": "app",
                            "count": 20000, "bytes": 4000000, "sampled": 61,
                            "stack": [{"function": "list_push", "module": "app", "in_app": True}]}, t)]
        self.post(app, "/v1/logs", logs_body(app, v, "s-kinds", logs))
        self.post(app, "/v1/metrics", frames_body(app, v, "s-kinds", t, "FrameWindow", 300, 2, 1900.0, 1200.0,
                                                  {"events": 10, "update": 40, "layout": 1500, "paint": 380,
                                                   "present": 3}))
        self.post(app, "/v1/metrics", frames_body(app, v, "s-kinds", t + 1, "SmoothWindow", 300, 0, 20.0, 16.0))
        self.settle()
        got = self.by_key(app)
        want = {("net_error", "GET /api/fail/{id}"), ("slow_request", "GET /api/slow"),
                ("large_image", "GET /img/{id}"), ("large_payload", "GET /api/dump"),
                ("slow_page", "SlowWindow total_ms"), ("slow_startup", "cold"), ("frozen_frames", "FrameWindow"),
                ("serial_requests", "SerialWindow GET /api/a, GET /api/b, GET /api/c"),
                ("leak", "8e72c785a8a38d30"), ("leak", "1051c08a8674e779"), ("hang", "v2:00000000000000aa"),
                ("jank", "nostack:NoStackWindow")}
        self.assertEqual(set(got), want, json.dumps(sorted(got), indent=1))
        e = got[("net_error", "GET /api/fail/{id}")]["evidence"]
        self.assertEqual((e["requests"], e["errors"], e["statuses"]), (20, 6, {"HTTP 500": 6}))
        self.assertAlmostEqual(e["error_rate"], 0.3)
        self.assertAlmostEqual(e["lost_ms"], 6 * 30.0)  # each failed request's time
        e = got[("large_image", "GET /img/{id}")]["evidence"]
        self.assertEqual(e["example"]["bytes_received"], 200 * 1024)
        self.assertEqual(e["pages"], {"GalleryWindow": 1})
        self.assertAlmostEqual(e["lost_ms"], 40 * (200 - 100) / 200)  # the excess bytes' share of the transfer
        e = got[("slow_request", "GET /api/slow")]["evidence"]
        self.assertAlmostEqual(e["distribution"]["p90"], 1500, delta=15)
        self.assertAlmostEqual(e["lost_ms"], 20 * 500)
        e = got[("slow_page", "SlowWindow total_ms")]["evidence"]
        self.assertEqual((e["measured"], e["over_threshold"]), (12, 12))
        self.assertAlmostEqual(e["lost_ms"], sum(500 + i for i in range(12)))
        self.assertIn("threshold 2.5 s", got[("slow_page", "SlowWindow total_ms")]["title"])
        e = got[("slow_startup", "cold")]["evidence"]
        self.assertAlmostEqual(e["lost_ms"], 10 * 1000)
        e = got[("frozen_frames", "FrameWindow")]["evidence"]
        self.assertEqual((e["frames"], e["frozen_frames"]), (300, 2))
        self.assertEqual(e["levels"]["frozen"], 2)
        # where the frozen window's slow frames' time went
        self.assertEqual(e["example"]["dominant_phase"], "layout")
        self.assertEqual(e["example"]["slow_phases_ms"]["layout"], 1500)
        e = got[("serial_requests", "SerialWindow GET /api/a, GET /api/b, GET /api/c")]["evidence"]
        self.assertAlmostEqual(e["example"]["saving_ms"], 400)  # 3 × 200 run together: 200
        self.assertEqual([r["pattern"] for r in e["example"]["requests"]], ["/api/a", "/api/b", "/api/c"])
        leak = got[("leak", "8e72c785a8a38d30")]
        self.assertEqual(leak["fingerprint"], "8e72c785a8a38d30")
        self.assertEqual(leak["evidence"]["example"]["types"], [{"type": "GtkLabel", "count": 1}])
        native = got[("leak", "1051c08a8674e779")]
        self.assertEqual(native["evidence"]["bytes"], 4000000)
        self.assertIn("list_push", native["title"])
        hang = got[("hang", "v2:00000000000000aa")]
        self.assertEqual(hang["fingerprint"], "00000000000000aa")
        self.assertIn("app_wait", hang["title"])
        # its profile: the app's innermost frames, by samples, each with
        # the leaf it was in most (poll, in the C library), not poll itself
        ex = hang["evidence"]["example"]
        self.assertEqual(ex["profile_samples"], 600)
        self.assertEqual(ex["profile_top"], [{"function": "app_wait", "samples": 400, "leaf": "poll", "leaf_samples": 400},
                                             {"function": "app_parse", "samples": 150},
                                             {"function": "app_idle", "samples": 50, "leaf": "poll", "leaf_samples": 50}])
        self.assertEqual(ex["profile"], HANG_PROFILE)
        # the occurrences' profiles merged (one here): samples per frame charged, and per frame → leaf
        self.assertEqual(hang["evidence"]["profile_top"], {"app_wait": 400, "app_parse": 150, "app_idle": 50})
        self.assertEqual(hang["evidence"]["profile_leaves"], {"app_wait → poll": 400, "app_idle → poll": 50})
        self.assertNotIn("fingerprint", got[("jank", "nostack:NoStackWindow")])
        for i in got.values():
            self.assertEqual((i["status"], i["first_version"], i["last_version"]), ("new", v, v))


# A profile as the agent wrote it for tests/agent/jank-app --stall mixed
# (half asleep in usleep, half busy reading the clock), and its jank's stack
_LOOP = ("_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
         "libglib-2.0.so.0.7400.6+0x54a17;g_main_context_dispatch;libglib-2.0.so.0.7400.6+0x55179;one_stall;"
         "jank_app_stall_mixed;")
REAL_PROFILE = "\n".join([
    _LOOP + "jank_app_mixed_sleep;usleep;__nanosleep;clock_nanosleep 60",
    _LOOP + "jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time;clock_gettime;__vdso_clock_gettime 42",
    _LOOP + "jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time 3",
    _LOOP + "jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time;[plt] 2",
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x5498d;monitored_poll;__poll 1",
    _LOOP + "jank_app_mixed_busy;jank_app_busy_work;[plt] 1",
    _LOOP + "jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time;clock_gettime 1"])
REAL_STACK = [{"function": f, "module": m, "in_app": a} for f, m, a in [
    ("clock_nanosleep@GLIBC_2.2.5", "libc.so.6", False), ("__nanosleep", "libc.so.6", False),
    ("usleep", "libc.so.6", False), ("jank_app_mixed_sleep", "jank-app", True),
    ("jank_app_stall_mixed", "jank-app", True), ("one_stall", "jank-app", True),
    ("0x7f7658db9179", "libglib-2.0.so.0.7400.6", False), ("g_main_context_dispatch", "libglib-2.0.so.0.7400.6", False),
    ("0x7f7658db8a17", "libglib-2.0.so.0.7400.6", False), ("g_main_context_iteration", "libglib-2.0.so.0.7400.6", False),
    ("g_application_run", "libgio-2.0.so.0.7400.6", False), ("main", "jank-app", True),
    ("__libc_start_call_main", "libc.so.6", False), ("__libc_start_main@@GLIBC_2.34", "libc.so.6", False),
    ("_start", "jank-app", True)]]


class TrackerProfile(Base):
    """A jank with a real profile: the evidence and the tracker's Markdown
    name the app's innermost frames (jank_app_mixed_sleep, not the C
    library's clock_nanosleep), each with the leaf it waited in."""

    @classmethod
    def setUpClass(cls):
        token = "ghp_" + "%032x" % random.getrandbits(128)
        cls.github = GitHubFake(token)
        cls.gtmp = tempfile.TemporaryDirectory()
        token_file = os.path.join(cls.gtmp.name, "github-token")
        with open(token_file, "w") as f:
            f.write(token + "\n")
        cls.extra = ("--github-issues", cls.github.url, "--github-token-file", token_file)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.github.close()
        cls.gtmp.cleanup()

    def test_profile_names_the_apps_frames(self):
        rec = log_record({"type": "jank", "kind": "jank", "duration_ms": 1210.0, "page": "JankWindow",
                          "stack_status": "captured", "stack_method": "perf", "fingerprint": "5151515151515151",
                          "fingerprint_version": 2, "stack": REAL_STACK, "profile_samples": 110,
                          "profile_interval_ms": 10.0, "profile": REAL_PROFILE}, NOW)
        self.post("tracker", "/v1/logs", logs_body("tracker", "1.0", "t1", [rec]))
        self.settle()
        issue = self.by_key("tracker")[("jank", "v2:5151515151515151")]
        e = issue["evidence"]
        self.assertEqual(e["profile_top"], {"jank_app_mixed_sleep": 60, "jank_app_busy_work": 49, "main": 1})
        self.assertEqual(e["profile_leaves"]["jank_app_busy_work → __vdso_clock_gettime"], 42)
        self.assertEqual(e["example"]["profile_top"][:2], [
            {"function": "jank_app_mixed_sleep", "samples": 60, "leaf": "clock_nanosleep", "leaf_samples": 60},
            {"function": "jank_app_busy_work", "samples": 49, "leaf": "__vdso_clock_gettime", "leaf_samples": 42}])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self.github.issues:
            time.sleep(0.05)
        self.assertEqual(self.github.violations, [])
        body = [g for g in self.github.issues.values() if issue["id"] in g["body"]][0]["body"]
        line = [x for x in body.splitlines() if x.startswith("**Profile**")]
        self.assertEqual(line, ["**Profile** (110 samples of the stack while it was stuck, all occurrences): where "
                                "the app was, its innermost frame outside the system and toolkit libraries: "
                                "`jank_app_mixed_sleep` → `clock_nanosleep` (60, 55 %), "
                                "`jank_app_busy_work` → `__vdso_clock_gettime` (49, 45 %), `main` → `__poll` (1, 1 %)"])


# records sealed into blocks as they come: SQLite's (ClickHouse has no blocks)
SEALED = ("--seal-rows", "16") if BACKEND == "sqlite" else ()


@unittest.skipIf(BACKEND == "clickhouse", "SQLite's blocks")
class KindsSealed(Kinds):
    """The same records, each sealed into a block (store_int.h) in the
    transaction that stores it: the analysis reads them from the blocks."""
    extra = SEALED + ("--rollup-lag", "0")


class LateDay(Base):
    extra = SEALED + ("--rollup-lag", "0")

    def test_records_of_an_earlier_day_after_a_later_days(self):
        """Logs and frames are kept by day, pages in blocks: a jank and a
        frozen window of two days ago, sent after today's were read, are
        read too — also when pacerd is killed before the analysis saw them."""
        app, v, t = "late", "1.0", NOW
        self.post(app, "/v1/logs", logs_body(app, v, "s1", [jank(t, 900, fingerprint="1111111111111111")]))
        self.spans(app, v, "s1", [page("TodayWindow", t + i, 3000.0 + i, initial=10) for i in range(12)])
        self.settle()
        self.assertEqual({i["fingerprint"] for i in self.issues(app) if i["kind"] == "jank"}, {"1111111111111111"})
        early = t - 2 * 86400 * 10**9
        self.post(app, "/v1/logs", logs_body(app, v, "s2", [jank(early, 950, fingerprint="2222222222222222")]))
        self.post(app, "/v1/metrics", frames_body(app, v, "s2", early, "LateWindow", 300, 2, 1900.0, 1200.0))
        self.spans(app, v, "s2", [page("EarlyWindow", early + i, 3000.0 + i, initial=10) for i in range(12)])
        self.d.kill(9)
        self.d.start()
        self.settle()
        got = self.by_key(app)
        self.assertEqual(set(got), {("jank", "v2:1111111111111111"), ("jank", "v2:2222222222222222"),
                                    ("frozen_frames", "LateWindow"), ("slow_page", "TodayWindow total_ms"),
                                    ("slow_page", "EarlyWindow total_ms")}, json.dumps(sorted(got)))
        self.assertEqual(got[("jank", "v2:2222222222222222")]["count"], 1)
        self.assertEqual(got[("slow_page", "EarlyWindow total_ms")]["evidence"]["measured"], 12)


class Grades(Base):
    def test_severity_from_its_inputs(self):
        app, v, t = "grades", "1.0", NOW
        sessions = ["g%02d" % i for i in range(20)]
        for s in sessions:
            self.spans(app, v, s, [page("HomeWindow", t, 300.0)])
        logs = {s: [jank(t, 800, fingerprint="aaaaaaaaaaaaaaaa")] for s in sessions}     # everyone, 800 ms
        for s in sessions[:6]:
            logs[s].append(jank(t + 1, 750, fingerprint="bbbbbbbbbbbbbbbb"))              # 6 of 20
        logs[sessions[0]].append(jank(t + 2, 720, fingerprint="cccccccccccccccc"))         # 1 of 20
        for s, recs in logs.items():
            self.post(app, "/v1/logs", logs_body(app, v, s, recs))
        self.settle()
        got = {i["fingerprint"]: i for i in self.issues(app)}
        want = {"aaaaaaaaaaaaaaaa": ("critical", 20, 16000.0), "bbbbbbbbbbbbbbbb": ("major", 6, 4500.0),
                "cccccccccccccccc": ("minor", 1, 720.0)}
        for fp, (severity, affected, lost) in want.items():
            g = got[fp]["grade"]
            self.assertEqual((got[fp]["severity"], g["sessions"], g["affected_sessions"]), (severity, 20, affected))
            self.assertAlmostEqual(g["lost_ms"], lost, places=3)
            self.assertAlmostEqual(g["lost_ms_per_session"], lost / 20, places=3)
            self.assertAlmostEqual(g["share"], affected / 20)
            self.assertTrue(g["rule"].startswith(severity + ":"), g["rule"])


class LifeCycle(Base):
    config = ("interval-ms = 100\n[app life]\nversion-order = 1.0 2.0 3.0 4.0 5.0\nresolve-versions = 2\n"
              "resolve-sessions = 2\n")

    def send(self, version, session, janks=()):
        self.spans("life", version, session, [page("HomeWindow", NOW, 300.0)])
        if janks:
            self.post("life", "/v1/logs", logs_body("life", version, session,
                                                    [jank(NOW + i, 800, fingerprint=fp) for i, fp in enumerate(janks)]))
        self.settle()

    def status(self, fp):
        return [i for i in self.issues("life") if i.get("fingerprint") == fp][0]

    def events(self, issue_id):
        return [e for e, _, i in self.hook.delivered() if i == issue_id]

    def test_new_ongoing_resolved_regressed(self):
        j = "1234123412341234"
        self.send("1.0", "a1", [j])
        self.send("1.0", "a2", [j])
        i = self.status(j)
        self.assertEqual((i["status"], i["first_version"], i["last_version"]), ("new", "1.0", "1.0"))
        self.send("2.0", "b1", [j])
        self.send("2.0", "b2")
        self.assertEqual(self.status(j)["status"], "ongoing")
        self.send("3.0", "c1")
        self.send("3.0", "c2")
        self.assertEqual(self.status(j)["status"], "ongoing")  # one clean version: not yet
        self.send("4.0", "d1")
        self.send("4.0", "d2")
        i = self.status(j)
        self.assertEqual((i["status"], i["last_version"]), ("resolved", "2.0"))
        self.send("2.0", "b3", [j])  # an old version still in use: not a regression
        self.assertEqual(self.status(j)["status"], "resolved")
        self.send("5.0", "e1", [j])
        i = self.status(j)
        self.assertEqual((i["status"], i["first_version"], i["last_version"]), ("regressed", "1.0", "5.0"))
        self.assertEqual([v["version"] for v in i["versions"] if v["issue"]], ["1.0", "2.0", "5.0"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "issue.regressed" not in self.events(i["id"]):
            time.sleep(0.05)
        events = self.events(i["id"])
        self.assertEqual(events.count("issue.new"), 1)
        self.assertEqual(events.count("issue.regressed"), 1)
        # by hand: resolved stays so in its version, regresses in a later one
        k = "4321432143214321"
        self.send("5.0", "e2", [k])
        kid = self.status(k)["id"]
        got = self.d.json("PATCH", "/api/v1/issues/" + kid, {"status": "resolved"}, token=ADMIN)
        self.assertEqual(got["status"], "resolved")
        self.send("5.0", "e3", [k])
        self.assertEqual(self.status(k)["status"], "resolved")
        self.assertEqual(self.d.json("PATCH", "/api/v1/issues/" + kid, {"status": "ongoing"}, token=ADMIN)["status"],
                         "ongoing")


class Cleaning(Base):
    def test_reasons_counts_and_copies(self):
        app, t = "clean", NOW
        future = time.time_ns() + 2 * 3600 * 10**9
        bad = [page("W", t, -5.0), page("W", t, 90_000_000.0), page("W", future, 10.0),
               page("W", 631152000 * 10**9, 10.0), page("W", t, 10.0, initial=50.0),
               startup("cold", t, first_screen_ms=900, cold_ms=600)]
        nan = page("W", t, 10.0)
        for a in nan["attributes"]:
            if a["key"] == "pacer.total_ms":
                a["value"] = {"doubleValue": "NaN"}
        bad.append(nan)
        good = [page("W", t, 10.0, initial=5.0), page("W", t, 20.0, initial=5.0),
                startup("cold", t, first_screen_ms=300, cold_ms=600, full_display_ms=900),
                startup("cold", t, cold_ms=40000, outlier=True)]
        got = self.spans(app, "1.0", "c1", bad + good)
        self.assertEqual(got["partialSuccess"]["rejectedSpans"], str(len(bad)))
        self.assertIn("not used: negative_duration (pacer.total_ms", got["partialSuccess"]["errorMessage"])
        logs = [jank(t, -3), jank(t + 1, 800, fingerprint="dddddddddddddddd")]
        got = self.post(app, "/v1/logs", logs_body(app, "1.0", "c1", logs))
        self.assertEqual(got["partialSuccess"]["rejectedLogRecords"], "1")
        # a batch resent without a batch id: its records once; with one: the batch once. ClickHouse keeps
        # no record ids at ingest (docs/server.md, "The application layer on ClickHouse"): no copies there
        copies = self.d.backend != "clickhouse"
        again = spans_body(app, "1.0", "c1", good[:2])
        if copies:
            self.assertEqual(self.post(app, "/v1/traces", again), {})
        self.post(app, "/v1/traces", spans_body(app, "1.0", "c2", [page("W", t, 30.0)]), batch_id="clean-b1")
        self.post(app, "/v1/traces", spans_body(app, "1.0", "c2", [page("W", t, 30.0)]), batch_id="clean-b1")
        want = {"negative_duration": 2, "non_finite": 1, "over_a_day": 1, "clock_skew": 2, "phase_order": 2,
                "duplicate": 2, "startup_outlier": 1}
        if not copies:
            del want["duplicate"]

        def check():
            reasons = {r["reason"]: r["count"] for r in self.d.query("/api/v1/cleaning?app=" + app)["reasons"]}
            self.assertEqual(reasons, want)
            m = scrape(self.d)
            for reason, n in want.items():
                self.assertEqual(m['pacerd_clean_records_total{reason="%s"}' % reason], n, reason)
            pages = self.d.query("/api/v1/pages?app=" + app)["pages"]
            self.assertEqual([(p["page"], p["count"]) for p in pages], [("W", 3)])  # 10, 20, 30: no copy, no junk
            starts = {s["kind"]: s for s in self.d.query("/api/v1/startup?app=" + app)["startup"]}
            self.assertEqual(starts["cold"]["count"], 2)
            self.assertEqual(starts["cold"]["metrics"]["cold_ms"]["count"], 1)  # the outlier out of the percentiles
        check()
        self.d.restart()
        check()
        # the copies are still known after a restart
        if copies:
            self.post(app, "/v1/traces", again)
            want["duplicate"] += 2
            check()
        self.assertEqual(self.d.json("GET", "/api/v1/cleaning", token=ADMIN, expect=400)["error"],
                         "app: required (GET /api/v1/cleaning?app=APP)")


class Copies(Base):
    def test_rows_written_again_are_read_once(self):
        """ClickHouse: the rows of a batch written again by a retried
        attempt (a later write mark, the same identity) are not counted
        again by the analysis."""
        if self.d.backend != "clickhouse":
            self.skipTest("ClickHouse's: SQLite reads each rowid once and stores a retried batch once")
        fp = "c0c0c0c0c0c0c0c0"
        self.post("life", "/v1/logs", logs_body("life", "1.0", "k1", [jank(NOW + i, 800, fingerprint=fp)
                                                                      for i in range(3)]), batch_id="copies-1")
        self.settle()
        issue = [i for i in self.issues("life") if i.get("fingerprint") == fp][0]
        self.assertEqual(issue["count"], 3)
        # the same rows again, as a retry writes them: later marks, after the analysis's
        cols = [r[0] for r in self.d.sql("SELECT name FROM system.columns WHERE database = currentDatabase()"
                                         " AND table = 'logs' AND default_kind != 'ALIAS'")]
        self.d.ch.sql("INSERT INTO logs SELECT %s FROM logs WHERE app = 'life'"
                      % ", ".join("toInt64(now()) * 1000000000 + rowNumberInAllBlocks()" if c == "ins" else c
                                  for c in cols), self.d.database)
        self.assertEqual(self.d.sql("SELECT count() FROM logs WHERE app = 'life' AND body LIKE '%%%s%%'" % fp)[0][0],
                         6)
        # and one new occurrence after them: read, counted
        self.post("life", "/v1/logs", logs_body("life", "1.0", "k1", [jank(NOW + 9, 800, fingerprint=fp)]),
                  batch_id="copies-2")
        self.settle()
        issue = [i for i in self.issues("life") if i.get("fingerprint") == fp][0]
        self.assertEqual(issue["count"], 4)


class Hooks(Base):
    def wait(self, cond, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not cond():
            time.sleep(0.05)
        return cond()

    def test_retries_idempotency_and_a_restart(self):
        app = "hooks"
        self.hook.set_failures([500, 503])
        self.spans(app, "1.0", "h1", [page("W", NOW, 100.0)])
        self.post(app, "/v1/logs", logs_body(app, "1.0", "h1", [jank(NOW, 800, fingerprint="eeeeeeeeeeeeeeee")]))
        self.assertTrue(self.wait(lambda: len(self.hook.delivered()) == 1), self.hook.requests)
        attempts = [r for r in self.hook.requests if r["body"]["issue"]["fingerprint"] == "eeeeeeeeeeeeeeee"]
        self.assertEqual([r["status"] for r in attempts], [500, 503, 200])
        self.assertEqual(len({r["headers"]["Idempotency-Key"] for r in attempts}), 1)
        # the receiver has the request before pacerd has read its answer
        self.assertTrue(self.wait(lambda: scrape(self.d)['pacerd_deliveries_total{result="delivered"}'] >= 1))
        m = scrape(self.d)
        self.assertEqual((m['pacerd_deliveries_total{result="retried"}'],
                          m['pacerd_deliveries_total{result="delivered"}']), (2, 1))
        # the receiver is down when the next issue comes; pacerd restarts; it is delivered once after
        self.hook.set_failures([503] * 1000)
        self.post(app, "/v1/logs", logs_body(app, "1.0", "h1", [jank(NOW, 800, fingerprint="ffffffffffffffff")]))
        self.assertTrue(self.wait(lambda: any(r["body"]["issue"]["fingerprint"] == "ffffffffffffffff"
                                              for r in self.hook.requests)))
        self.d.kill(9)  # nothing of the pending delivery is lost with the process
        self.hook.set_failures([])
        self.d.start(port=self.d.port)
        self.assertTrue(self.wait(lambda: len(self.hook.delivered()) == 2), self.hook.requests)
        time.sleep(1.5)
        ff = [x for x in self.hook.delivered() if x[0] == "issue.new"]
        self.assertEqual(len(ff), 2)
        # an answer that will not change: given up at once, said so
        self.hook.set_failures([400])
        self.post(app, "/v1/logs", logs_body(app, "1.0", "h1", [jank(NOW, 800, fingerprint="9999999999999999")]))
        self.assertTrue(self.wait(lambda: scrape(self.d)['pacerd_deliveries_total{result="given_up"}'] == 1))
        self.assertIn("given up after 1 attempt(s): HTTP 400", self.d.stderr_text())


class FalseAlarms(Base):
    def test_identical_versions_of_20_apps_and_one_shifted(self):
        """20 tries with different seeds: two versions of the same distributions
        flag nothing; a page 150 ms slower is flagged."""
        for k, app in enumerate(["null%d" % i for i in range(20)] + ["shifted"]):
            rnd = random.Random(k + 1)
            for version in ("1.0", "2.0"):
                spans = []
                for i in range(40):
                    for name, median in (("HomeWindow", 500), ("CartWindow", 300)):
                        total = median * math.exp(rnd.gauss(0, 0.25))
                        if app == "shifted" and version == "2.0" and name == "CartWindow":
                            total += 150
                        initial = 60 * math.exp(rnd.gauss(0, 0.25))
                        spans.append(page(name, NOW + i * 10**6, total, initial=min(initial, total)))
                self.spans(app, version, "%s-%s" % (app, version), spans)
        self.settle()
        for i in range(20):
            self.assertEqual(self.issues("null%d" % i), [], "null%d" % i)
        got = self.issues("shifted")
        self.assertEqual([(x["kind"], x["evidence"]["key"]) for x in got], [("page_regression", "CartWindow")])
        ex = got[0]["evidence"]["example"]
        self.assertEqual((ex["baseline"], ex["version"]), ("1.0", "2.0"))
        self.assertIn("Mann-Whitney", ex["test"])


class Api(Base):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        logs = [jank(NOW + i, 800, fingerprint="%016x" % (0xa0 + i)) for i in range(5)]
        cls.d.json("POST", "/v1/logs", logs_body("api", "1.0", "p1", logs), token=KEYS["api"])

    def setUp(self):
        self.settle()

    def bad(self, query, fragment, method="GET", body=None, token=ADMIN, status=400):
        st, _, data = self.d.request(method, query, body, token=token)
        self.assertEqual(st, status, data)
        if fragment:
            self.assertIn(fragment, json.loads(data)["error"])

    def test_pages_and_strict_parameters(self):
        seen, cursor = [], None
        while True:
            got = self.d.query("/api/v1/issues?app=api&limit=2" + ("&cursor=" + cursor if cursor else ""))
            seen.extend(i["id"] for i in got["issues"])
            self.assertLessEqual(len(got["issues"]), 2)
            cursor = got.get("next")
            if not cursor:
                break
        self.assertEqual(len(seen), 5)
        self.assertEqual(len(set(seen)), 5)
        last = [self.d.query("/api/v1/issues/" + i)["last_seen"] for i in seen]
        self.assertEqual(last, sorted(last, reverse=True))  # the most recently seen first
        self.bad("/api/v1/issues", "app: required")
        self.bad("/api/v1/issues?app=api&colour=red", "colour")
        self.bad("/api/v1/issues?app=api&app=api", "app")
        self.bad("/api/v1/issues?app=api&status=open", "status: expected one or more of new, ongoing")
        self.bad("/api/v1/issues?app=api&kind=jank,bogus", "kind:")
        self.bad("/api/v1/issues?app=api&severity=high", "severity:")
        self.bad("/api/v1/issues?app=api&limit=0", "limit")
        self.bad("/api/v1/issues?app=api&limit=101", "limit")
        self.bad("/api/v1/issues?app=api&cursor=abc", "cursor")
        self.bad("/api/v1/issues?app=api%00x", "app")
        self.bad("/api/v1/issues/nothex", "16 lowercase hex", status=404)
        self.bad("/api/v1/issues/0000000000000000", "no issue", status=404)
        self.bad("/api/v1/issues/%s?x=1" % seen[0], "x")
        self.bad("/api/v1/issues?app=api", None, token=KEYS["api"], status=403)
        self.bad("/api/v1/issues?app=api", None, token=None, status=401)
        one = seen[0]
        self.bad("/api/v1/issues/" + one, "status: expected", "PATCH", {"status": "new"})
        self.bad("/api/v1/issues/" + one, "not a member", "PATCH", {"status": "resolved", "note": "x"})
        self.bad("/api/v1/issues/" + one, "status: required", "PATCH", {})
        self.bad("/api/v1/issues/" + one, "JSON", "PATCH", "{\"status\": ")
        self.bad("/api/v1/issues/0000000000000000", "no issue", "PATCH", {"status": "resolved"}, status=404)
        self.bad("/api/v1/issues/" + one, None, "PATCH", {"status": "resolved"}, token=KEYS["api"], status=403)
        self.bad("/api/v1/pages?app=api", None, "PATCH", {"status": "resolved"}, status=405)
        st, headers, _ = self.d.request("OPTIONS", "/api/v1/issues/" + one)
        self.assertEqual((st, headers["Allow"]), (204, "GET, HEAD, PATCH, OPTIONS"))
        self.assertEqual(self.issues("api", "&status=resolved"), [])
        self.assertEqual(self.issues("nobody"), [])


if __name__ == "__main__":
    unittest.main()
