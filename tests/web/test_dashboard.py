"""The dashboard in a real browser: Debian's chromium, driven by
playwright-core (npm; web/test/drive.mjs), against the real pacerd holding
the demo app's data (the unmodified shop app under `pacer run --server` on
Xvfb, with its 900 ms jank in shop_compute_recommendations) and a generated
week of history (dashdata.py). One browser, one session, every page once:

  - the admin token goes through the login form and becomes a session
    cookie (HttpOnly, SameSite=Strict); no token in a URL or in the page's
    storage;
  - every page loads with no console error and no failed request;
  - every number on a page (a.num) is the value the query API returns for
    the same range at the place the number names, and its text is that
    value formatted;
  - the jank page shows the demo's stuck function, with its file:line;
  - a config edit with an error shows its line, and saves nothing; a good
    one is pushed;
  - a trace recorded with `pacer trace record` and exported as Chrome JSON
    opens into a call tree whose calls are the file's;
  - a change without the CSRF token, and a CSRF attempt from another
    origin of the same host, are refused; logout ends the session on the
    server.

Screenshots of every page go to WEB_SHOTS (the build tree). Without
chromium, node, the built dashboard or Xvfb it skips (in CI: fails).
Issues: the demo's jank is filed by the analysis layer; the page lists it,
shows its evidence, and resolves it. The overview counts the open issues
by the severities pacerd grades (GET /api/v1/schema names them): an app
with a critical, a major and a minor issue shows one of each.

Also, without a browser: the security headers, the login limiter, a
session ended by a new admin token (SIGHUP), Secure cookies under TLS."""
import decimal
import re
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
sys.path.insert(0, HERE)

from pacerd_harness import ADMIN, KEYS, Pacerd  # noqa: E402
import dashdata  # noqa: E402
from test_issue_kinds import jank, logs_body, page, spans_body  # noqa: E402

WEB_DIR = os.environ.get("PACER_WEB_DIR", "build/web")
SHOTS = os.environ.get("WEB_SHOTS", "build/tests/web/screenshots")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = os.path.join(ROOT, "web", "test", "drive.mjs")
# the generated jank group whose records carry profiles (dashdata.py)
PROFILED_FP = "0b93d4c8e2f7a615"
PAGES = ["overview", "pages", "startup", "requests", "jank", "frames", "issues", "config", "traces"]


def skip_unless(ok, why):
    if not ok:
        if os.environ.get("CI"):
            print("FAIL:", why)
            sys.exit(1)
        print("SKIP:", why)
        sys.exit(77)


skip_unless(os.path.isfile(os.path.join(WEB_DIR, "index.html")), "the dashboard is not built (%s)" % WEB_DIR)
skip_unless(shutil.which("node"), "node is not installed")
skip_unless(os.path.exists(CHROMIUM), "chromium is not installed")
skip_unless(os.path.isdir(os.path.join(ROOT, "web", "node_modules", "playwright-core")),
            "playwright-core is not installed (scripts/install-deps.sh)")
skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")

from agentlib import APP_ENV, SHOP_APP, SHOP_CONFIG, ApiServer, Xvfb  # noqa: E402

PACER = os.environ["PACER"]


def graded_issues(d):
    """App "other": 20 sessions, and three stuck functions whose grades are
    known (docs/server.md, Severity; test_issue_kinds.Grades): one in every
    session, 800 ms (critical: 800 ms lost per session), one in 6 of 20,
    750 ms (major: 225 ms per session), one in 1 of 20, 720 ms (minor:
    36 ms per session and 5 % of sessions)."""
    t = time.time_ns() - 3600 * 10**9
    sessions = ["g%02d" % i for i in range(20)]
    logs = {s: [jank(t, 800, fingerprint="aaaaaaaaaaaaaaaa")] for s in sessions}
    for s in sessions[:6]:
        logs[s].append(jank(t + 1, 750, fingerprint="bbbbbbbbbbbbbbbb"))
    logs[sessions[0]].append(jank(t + 2, 720, fingerprint="cccccccccccccccc"))
    for s in sessions:
        d.ingest("/v1/traces", spans_body("other", "1.0", s, [page("HomeWindow", t, 300.0)]), app="other")
        d.ingest("/v1/logs", logs_body("other", "1.0", s, logs[s]), app="other")
    return {"aaaaaaaaaaaaaaaa": "critical", "bbbbbbbbbbbbbbbb": "major", "cccccccccccccccc": "minor"}


def key_file(directory, app="shop"):
    path = os.path.join(directory, app + ".key")
    with open(path, "w") as f:
        f.write(KEYS[app] + "\n")
    return path


def resolve(doc, path):
    """The value at a path of web/src/format.js (normPath) in an answer."""
    if isinstance(path, dict):
        if "ratio" in path:
            a, b = resolve(doc, path["ratio"][0]), resolve(doc, path["ratio"][1])
            return 100 * a / b if b else 0
        raise KeyError(path)
    cur = doc
    for seg in path:
        if isinstance(seg, dict):
            cur = next(x for x in cur if all(x.get(k) == v for k, v in seg.items()))
        else:
            cur = cur[seg]
    return cur


def half_up(v, decimals):
    """As JavaScript's toLocaleString rounds: the shortest decimal that
    reads back as v (what repr and Number#toString write), half up."""
    q = decimal.Decimal(1).scaleb(-decimals)
    return decimal.Decimal(repr(float(v))).quantize(q, rounding=decimal.ROUND_HALF_UP)


def shown(v, unit):
    """The text web/src/format.js writes for v."""
    def n(x, d):
        return "{:,}".format(half_up(x, d))
    if unit == "ms":
        a = abs(v)
        return n(v, 2 if a < 10 else 1 if a < 10000 else 0) + " ms"
    if unit == "pct":
        return n(v, 1) + " %"
    if unit == "count":
        return n(v, 0)
    if unit == "bytes":
        if v < 1024:
            return n(v, 0) + " B"
        if v < 1024 * 1024:
            return n(v / 1024, 1) + " KiB"
        return n(v / 1024 / 1024, 1) + " MiB"
    return n(v, 2)


class Attacker(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = open(os.path.join(HERE, "evil.html"), "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the page moved on (its form was sent)

    def log_message(self, *args):
        pass


class Browser(unittest.TestCase):
    """One run of the browser through every page (setUpClass); each test
    checks one promise against what it saw."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pacer-web-")
        os.makedirs(SHOTS, exist_ok=True)
        cls.d = Pacerd(extra_args=["--web-root", WEB_DIR])
        d = cls.d
        now = int(time.time()) // 60 * 60
        cls.frm, cls.to = now - 8 * 86400, now + 120
        # a generated week: versions 1.0 and 1.1
        cls.profiled = []  # the generated janks with a profile: (kind, profile)
        for endpoint, body in dashdata.Gen(app="shop", end_s=now - 600).batches():
            d.ingest(endpoint, body)
            for rl in body.get("resourceLogs", []):
                for lr in rl["scopeLogs"][0]["logRecords"]:
                    rec = json.loads(lr["body"]["stringValue"])
                    if rec.get("fingerprint") == PROFILED_FP:
                        cls.profiled.append((rec["kind"], rec["profile"]))
        cls.graded = graded_issues(d)
        # the demo app itself, version "demo", with its main-loop jank
        with Xvfb() as x, ApiServer({"/api/config": 200, "/api/list": 300, "/api/test1": 300}) as api:
            env = dict(os.environ, DISPLAY=x.display, **APP_ENV)
            env.pop("WAYLAND_DISPLAY", None)
            p = subprocess.run([PACER, "run", "--config", SHOP_CONFIG, "--app", "shop", "--app-version", "demo",
                                "--server", d.base, "--key-file", key_file(cls.tmp),
                                "--spool", os.path.join(cls.tmp, "spool.db"), "--out", os.path.join(cls.tmp, "demo.jsonl"),
                                "--", SHOP_APP, "--api", api.base, "--auto-exit", "--jank-ms", "900"],
                               env=env, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError("the demo app failed: " + p.stderr[-2000:])
        cls.demo = [json.loads(line) for line in open(os.path.join(cls.tmp, "demo.jsonl"))]
        d.json("PUT", "/v1/config/shop", open(SHOP_CONFIG).read(), token=ADMIN)
        cls.config_before = d.request("GET", "/v1/config/shop", token=ADMIN)[2].decode()
        # a function trace, exported as Chrome JSON
        cls.trace_json = None
        sample = os.environ.get("TRACE_SAMPLE")
        if sample:
            rec = os.path.join(cls.tmp, "sample.trace")
            subprocess.run([PACER, "trace", "record", "-o", rec, "--", sample], check=True, capture_output=True,
                           timeout=60)
            cls.trace_json = os.path.join(cls.tmp, "sample.json")
            subprocess.run([PACER, "trace", "export", rec, "--format", "chrome", "-o", cls.trace_json], check=True,
                           capture_output=True, timeout=60)
        # the analysis layer files the demo's jank: wait (bounded) until it has
        cls.issues = False
        for _ in range(120):
            status, _, body = d.request("GET", "/api/v1/issues?app=shop", token=ADMIN)
            if status == 200 and json.loads(body)["issues"]:
                cls.issues = True
                break
            time.sleep(0.5)
        if not cls.issues:
            raise AssertionError("no issue was filed for the demo's data within 60 s: %d %s" % (status, body[:500]))
        for _ in range(120):
            got = {i["fingerprint"]: i["severity"] for i in d.query("/api/v1/issues?app=other")["issues"]}
            if all(fp in got for fp in cls.graded):
                break
            time.sleep(0.5)
        if {fp: got.get(fp) for fp in cls.graded} != cls.graded:
            raise AssertionError("the graded issues were not filed as expected within 60 s: %s" % got)
        # the generated jank issue whose occurrences have profiles
        cls.profiled_issue = None
        for _ in range(120):
            got = [i for i in d.query("/api/v1/issues?app=shop&kind=jank&limit=100")["issues"]
                   if i.get("fingerprint") == PROFILED_FP]
            if got:
                cls.profiled_issue = got[0]
                break
            time.sleep(0.5)
        if not cls.profiled_issue:
            raise AssertionError("no jank issue of %s was filed within 60 s" % PROFILED_FP)
        cls.attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
        threading.Thread(target=cls.attacker.serve_forever, daemon=True).start()
        query = "app=shop&from=%d&to=%d" % (cls.frm, cls.to)
        visits = [{"name": p, "page": p, "query": query} for p in PAGES]
        visits.insert(5, {"name": "jank-demo", "page": "jank", "query": query + "&version=demo"})
        visits.append({"name": "issue-profiled", "page": "issues", "query": query + "&issue=" + cls.profiled_issue["id"]})
        visits.insert(1, {"name": "overview-graded", "page": "overview",
                          "query": "app=other&from=%d&to=%d" % (cls.frm, cls.to)})
        cfg = {"base": d.base, "token": ADMIN, "pages": visits, "shots": os.path.abspath(SHOTS),
               "trace_file": cls.trace_json, "issues": cls.issues, "chromium": CHROMIUM,
               "attacker": "http://127.0.0.1:%d/evil.html" % cls.attacker.server_address[1]}
        cfg_path = os.path.join(cls.tmp, "drive.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        t0 = time.monotonic()
        p = subprocess.run(["node", DRIVER, cfg_path], capture_output=True, text=True, timeout=400)
        cls.browser_s = time.monotonic() - t0
        if p.returncode != 0 or not p.stdout.startswith("{"):
            raise AssertionError("the browser driver failed (%d): %s %s" % (p.returncode, p.stdout[-2000:], p.stderr[-4000:]))
        cls.out = json.loads(p.stdout)
        print("browser: %.1f s for %d visits" % (cls.browser_s, len(visits)), file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.attacker.shutdown()
        cls.d.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertNotIn("error", self.out, self.out.get("error"))

    def allowed(self, name, entry):
        """Failures that the test provokes itself."""
        if name == "config" and ("PUT" in entry or "status of 400" in entry or "status of 403" in entry):
            return True  # the edit with an error (400) and the change without CSRF token (403)
        if name == "login" and ("/auth/login: HTTP 401" in entry or "status of 401" in entry):
            return True  # the wrong token
        return False

    def test_login_form_session_cookie_and_no_token_anywhere(self):
        login = self.out["login"]
        self.assertTrue(login["form_first"])
        self.assertIn("not the admin token", login["wrong_message"])
        cookie = [c for c in login["cookies"] if c["name"] == "pacer_session"]
        self.assertEqual(len(cookie), 1, login["cookies"])
        self.assertTrue(cookie[0]["httpOnly"])
        self.assertEqual(cookie[0]["sameSite"], "Strict")
        self.assertFalse(cookie[0]["secure"])  # plain HTTP here; Secure under TLS: Http.test_secure_cookie_under_tls
        st = self.out["storage"]
        self.assertEqual(st["local"], [])
        self.assertEqual(st["session"], [])
        self.assertEqual(st["cookie"], "")  # HttpOnly: the page's code cannot read it
        urls = [st["url"], login["url_after"]] + [p["url"] for p in self.out["pages"].values() if "url" in p]
        for u in urls:
            self.assertNotIn(ADMIN, u)
        for p in self.out["pages"].values():
            for n in p.get("nums", []):
                self.assertNotIn(ADMIN, n["href"])

    def test_every_page_loads_without_console_error_or_failed_request(self):
        for name, p in list(self.out["pages"].items()) + [("login", self.out["login"]["page"]), ("logout", self.out["logout"]["page"])]:
            if name == "_boot":
                continue
            bad = [e for e in p["console"] + p["failed"] if not self.allowed(name, e)]
            self.assertEqual(bad, [], "%s: %s" % (name, bad))
        for name in PAGES:
            self.assertIn(name, self.out["pages"])
            self.assertIn("nums", self.out["pages"][name], name)

    def test_numbers_equal_what_the_query_api_returns_for_the_range(self):
        answers, checked = {}, 0
        metrics_text = self.d.request("GET", "/metrics", token=ADMIN)[2].decode()
        for name, p in self.out["pages"].items():
            if name in ("overview", "pages", "startup", "requests", "jank", "jank-demo", "frames"):
                self.assertGreaterEqual(len(p.get("nums", [])), 5, name)
            for n in p.get("nums", []):
                href, path = n["href"], json.loads(n["path"])
                if href == "/metrics":
                    # pacerd's own counters move on; what ingest stored does not
                    if isinstance(path, dict) and path.get("prom", "").startswith("pacerd_ingest_records_total"):
                        line = [l for l in metrics_text.splitlines() if l.startswith(path["prom"] + " ")]
                        self.assertEqual(float(n["v"]), float(line[0].split()[-1]), n)
                        checked += 1
                    continue
                q = urllib.parse.parse_qs(urllib.parse.urlparse(href).query)
                if href.startswith("/api/v1/") and "from" in q:
                    # the page's range, exactly
                    self.assertEqual((int(q["from"][0]), int(q["to"][0])), (self.frm, self.to), href)
                if href not in answers:
                    answers[href] = self.d.query(href)
                want = resolve(answers[href], path)
                self.assertEqual(float(n["v"]), float(want), "%s: %s at %s" % (name, href, n["path"]))
                self.assertEqual(n["text"], shown(want, n["unit"]), "%s: %s at %s" % (name, href, n["path"]))
                checked += 1
        self.assertGreater(checked, 300)
        print("numbers checked against the API: %d, from %d queries" % (checked, len(answers)), file=sys.stderr)

    def test_jank_page_shows_the_demo_s_stuck_function(self):
        jank = [r for r in self.demo if r["type"] == "jank"]
        self.assertTrue(jank, "the demo app recorded no jank")
        stuck = [f for f in jank[0]["stack"] if f.get("in_app")]
        self.assertEqual(stuck[0]["function"], "shop_compute_recommendations", jank[0]["stack"])
        demo = self.out["pages"]["jank-demo"]
        self.assertEqual(demo["in_app"][0], "shop_compute_recommendations", demo["in_app"])
        self.assertIn("%s:%d" % (stuck[0]["file"], stuck[0]["line"]), demo["in_app_where"])
        # all versions: the demo's group in the table, its frame in the merged flame graph
        page = self.out["pages"]["jank"]
        self.assertTrue(any("shop_compute_recommendations" in g for g in page["groups"]), page["groups"])
        self.assertIn("shop_compute_recommendations", page["flame"])
        self.assertIn("shop_index_products", page["flame"])  # a generated one
        # a generated jank's profile: the function only its samples show
        self.assertIn("shop_parse_catalog", page["flame"])

    def test_frames_page_shows_where_slow_frames_time_went(self):
        page = self.out["pages"]["frames"]
        rows = {r["window"]: r for r in page["phases"]}
        href = "/api/v1/frames?app=shop&from=%d&to=%d" % (self.frm, self.to)
        answer = {w["window"]: w for w in self.d.query(href)["windows"]}
        self.assertIn("ShopCartWindow", rows, page["phases"])
        for window, row in rows.items():
            ph = answer[window].get("slow_phases_ms") or answer[window]["phases_ms"]
            total = sum(ph.values())
            # each segment: its phase's share of the window's bar, as the API sums it
            for seg in row["segs"]:
                self.assertAlmostEqual(float(seg["ms"]), ph[seg["phase"]], delta=0.001)
                self.assertAlmostEqual(float(seg["width"].rstrip("%")), 100 * ph[seg["phase"]] / total, delta=0.01)
            self.assertAlmostEqual(sum(float(x["width"].rstrip("%")) for x in row["segs"]), 100, delta=0.05)
        # the generated windows' dominant phases
        widest = lambda w: max(rows[w]["segs"], key=lambda x: float(x["width"].rstrip("%")))["phase"]  # noqa: E731
        self.assertEqual(widest("ShopCartWindow"), "paint")
        self.assertEqual(widest("ShopHomeWindow"), "layout")

    def test_frames_page_shows_the_slowest_widget_types(self):
        page = self.out["pages"]["frames"]
        href = "/api/v1/frames?app=shop&from=%d&to=%d" % (self.frm, self.to)
        answer = {w["window"]: w for w in self.d.query(href)["windows"]}
        boxes = {b["window"]: b for b in page["widgets"]}
        # a table under the phase bar of each window whose records named
        # widget types (the generated ones), and of no other
        self.assertEqual(set(boxes), {w for w, a in answer.items() if "slow_widgets" in a})
        self.assertEqual(set(boxes), set(dashdata.SLOW_WIDGETS))
        for window, box in boxes.items():
            self.assertEqual(box["after"], window)
            self.assertEqual([(r["type"], r["phase"]) for r in box["rows"]],
                             [(x["type"], x["phase"]) for x in answer[window]["slow_widgets"]])
            # the generated types, longest first
            self.assertEqual([(r["type"], r["phase"]) for r in box["rows"]],
                             [(t, ph) for t, ph, _ in dashdata.SLOW_WIDGETS[window]])

    def test_issue_page_shows_its_occurrences_merged_flame_graph(self):
        issue = self.profiled_issue
        page = self.out["pages"]["issue-profiled"]
        frames = {f["name"]: f["label"] for f in page["issue_flame"]}
        # the jank page's merge of this fingerprint's janks (its endpoint, filtered)
        answer = self.d.query("/api/v1/jank?app=shop&fingerprint=%s&kind=jank" % PROFILED_FP)
        want = {}

        def walk(n):
            want[n["name"]] = n
            for c in n.get("children", []):
                walk(c)
        walk(answer["flame"])
        self.assertEqual(set(frames), set(want))
        # the generated profiles: samples × 10 ms per function, every jank of the issue's kind
        truth = {}
        for kind, profile in self.profiled:
            if kind == issue["kind"]:
                for line in profile.split("\n"):
                    stack, _, n = line.rpartition(" ")
                    for f in set(stack.split(";")):
                        truth[f] = truth.get(f, 0) + 10.0 * int(n)
        janks = sum(1 for k, _ in self.profiled if k == issue["kind"])
        self.assertEqual(answer["records"], janks)
        self.assertIn("shop_parse_catalog", frames)  # a function only the samples show
        for name, ms in truth.items():
            # the label: "NAME[ — where]: VALUE ms (PCT %), N stalls"
            m = re.match(r"^(.+?)(?: — .*)?: ([\d,.]+) ms \(([\d,.]+) %\), (\d+) stalls", frames[name])
            self.assertIsNotNone(m, frames[name])
            self.assertAlmostEqual(float(m.group(2).replace(",", "")), ms, delta=0.0005, msg=name)
            self.assertEqual(want[name]["value"], ms)
        root = re.match(r"^all: ([\d,.]+) ms .*, (\d+) stalls", frames["all"])
        self.assertEqual((float(root.group(1).replace(",", "")), int(root.group(2))),
                         (truth["main"], janks))
        self.assertTrue(page["issue_flame_title"].startswith("Where its %d occurrences" % janks), page["issue_flame_title"])

    def test_config_edit_with_an_error_shows_its_line(self):
        c = self.out["pages"]["config"]
        # what pacerd says of the same text
        status, _, body = self.d.request("PUT", "/v1/config/shop", c["error"]["submitted"], token=ADMIN,
                                         content_type="application/xml")
        self.assertEqual(status, 400)
        want = json.loads(body)
        self.assertEqual(want["line"], 4)  # line 3 opens a <page> that line 4's cannot nest in
        self.assertEqual(c["error"]["line"], str(want["line"]), c["error"])
        self.assertEqual(c["error"]["gutter"], [str(want["line"])], c["error"])
        self.assertEqual(c["error"]["text"], "line %d, column %d: %s" % (want["line"], want["column"],
                                                                        want["error"].split(": ", 1)[1]))
        self.assertIn("Saved as version", c["saved"])
        now = self.d.request("GET", "/v1/config/shop", token=ADMIN)[2].decode()
        self.assertNotIn("Broken", now)  # the edit with the error stored nothing
        self.assertIn('<page id="ShopDashboardProbe" tag="0"/>', now)  # the good one is what the SDK now gets
        self.assertEqual(now.replace('  <page id="ShopDashboardProbe" tag="0"/>\n', ""), self.config_before)

    def test_changes_need_the_csrf_token_and_the_page_s_origin(self):
        c = self.out["pages"]["config"]["no_csrf"]
        self.assertEqual(c["status"], 403, c)
        self.assertIn("CSRF", c["body"])
        csrf = self.out["csrf"]
        posts = [a for a in csrf["answers"] if a["url"].endswith("/auth/logout")]
        self.assertTrue(posts, csrf)
        self.assertTrue(all(a["status"] == 403 for a in posts), csrf)
        self.assertTrue(csrf["after"]["logged_in"], csrf)  # the session survived the attempt

    def test_logout_ends_the_session_on_the_server(self):
        lo = self.out["logout"]
        self.assertFalse(lo["session"]["logged_in"])
        self.assertNotIn("pacer_session", lo["cookies"])
        old = self.out["login"]["session_cookie"]
        status, _, _ = self.d.request("GET", "/api/v1/apps", headers={"Cookie": "pacer_session=" + old})
        self.assertEqual(status, 401)

    def test_screenshots_of_every_page(self):
        for name in PAGES + ["jank-demo", "config-error", "login"]:
            path = os.path.join(SHOTS, name + ".png")
            with open(path, "rb") as f:
                head = f.read(8)
            self.assertEqual(head, b"\x89PNG\r\n\x1a\n", path)
            self.assertGreater(os.path.getsize(path), 10000, path)

    def test_a_trace_opens_into_its_call_tree(self):
        if not self.trace_json:
            self.skipTest("no TRACE_SAMPLE")
        with open(self.trace_json) as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
        want = {}
        for e in events:
            want[e["name"]] = want.get(e["name"], 0) + 1
        got = {}
        for node in self.out["pages"]["traces"]["tree"]:
            if node["calls"]:
                got[node["name"]] = got.get(node["name"], 0) + node["calls"]
        self.assertEqual(got, want)
        self.assertGreater(self.out["pages"]["traces"]["flame"], 3)  # frames narrower than a pixel are not drawn

    def test_overview_counts_open_issues_by_severity(self):
        severities = self.d.query("/api/v1/schema")["issues"]["severities"]
        self.assertEqual(severities[0], "critical")  # the most severe first
        for name in ("overview", "overview-graded"):
            with self.subTest(name):
                p = self.out["pages"][name]
                tiles = p["severity_tiles"]
                # a tile per severity pacerd grades, in its order
                self.assertEqual([t["severity"] for t in tiles], severities)
                # each one counting the open issues of its severity, as the API listed them then
                for t in tiles:
                    n = p["open_issues"].count(t["severity"])
                    self.assertEqual((t["v"], t["text"]), (str(n), str(n)), t)
                # and every open issue counted
                self.assertEqual(sum(int(t["v"]) for t in tiles), len(p["open_issues"]), (tiles, p["open_issues"]))
        shown = {t["severity"]: int(t["v"]) for t in self.out["pages"]["overview-graded"]["severity_tiles"]}
        self.assertEqual(shown, {"critical": 1, "major": 1, "minor": 1})

    def test_issues_page(self):
        p = self.out["pages"]["issues"]
        self.assertIn("issue_id", p, "the issues page listed no issue")
        self.assertNotEqual(p["before"], p["after"])
        one = self.d.query("/api/v1/issues/" + p["issue_id"])
        one = one.get("issue", one)
        self.assertEqual(one["status"], "resolved" if p["before"] == "Resolve" else "ongoing")


class Http(unittest.TestCase):
    """The dashboard's HTTP side, without a browser."""

    def setUp(self):
        self.d = Pacerd(extra_args=["--web-root", WEB_DIR])

    def tearDown(self):
        self.d.close()

    def login(self, d=None, token=ADMIN, headers=None):
        d = d or self.d
        return d.request("POST", "/auth/login", "token=" + urllib.parse.quote(token), headers=headers,
                         content_type="application/x-www-form-urlencoded")

    def session(self, d=None):
        status, h, body = self.login(d)
        self.assertEqual(status, 200, body)
        cookie = h["Set-Cookie"].split(";")[0]
        return cookie, json.loads(body)["csrf"], h["Set-Cookie"]

    def test_security_headers_and_no_inline_script(self):
        status, h, body = self.d.request("GET", "/")
        self.assertEqual(status, 200)
        csp = h["Content-Security-Policy"]
        self.assertIn("script-src 'self'", csp)
        self.assertNotIn("unsafe-inline", csp)
        self.assertNotIn("unsafe-eval", csp)
        self.assertIn("frame-ancestors 'none'", csp)
        self.assertEqual(h["X-Content-Type-Options"], "nosniff")
        html = body.decode()
        import re
        scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
        self.assertTrue(scripts)
        for attrs, text in scripts:
            self.assertIn("src=", attrs)
            self.assertEqual(text.strip(), "")
        self.assertNotIn("style=", html)
        for asset in re.findall(r'(?:src|href)="(assets/[^"]+)"', html):
            status, h2, _ = self.d.request("GET", "/" + asset)
            self.assertEqual(status, 200, asset)
            etag = h2["ETag"]
            self.assertEqual(self.d.request("GET", "/" + asset, headers={"If-None-Match": etag})[0], 304)
        self.assertEqual(self.d.request("GET", "/assets/../../etc/passwd")[0], 404)
        self.assertEqual(self.d.request("GET", "/assets/nothing.js")[0], 404)
        self.assertEqual(self.d.request("GET", "/?token=x")[0], 400)  # no parameters: nothing goes in a URL
        self.assertEqual(self.d.request("POST", "/")[0], 405)

    def test_session_grants_what_the_admin_token_grants(self):
        self.assertEqual(self.d.request("GET", "/api/v1/apps")[0], 401)
        cookie, csrf, _ = self.session()
        self.assertEqual(self.d.request("GET", "/api/v1/apps", headers={"Cookie": cookie})[0], 200)
        self.assertEqual(self.d.request("GET", "/metrics", headers={"Cookie": cookie})[0], 200)
        xml = "<pacer><page id=\"A\" tag=\"1\"/></pacer>"
        put = lambda hd: self.d.request("PUT", "/v1/config/shop", xml, headers=hd, content_type="application/xml")[0]
        self.assertEqual(put({"Cookie": cookie}), 403)
        self.assertEqual(put({"Cookie": cookie, "X-CSRF-Token": "0" * 64}), 403)
        self.assertEqual(put({"Cookie": cookie, "X-CSRF-Token": csrf, "Origin": "http://evil.example"}), 403)
        self.assertEqual(put({"Cookie": cookie, "X-CSRF-Token": csrf, "Sec-Fetch-Site": "same-site"}), 403)
        self.assertEqual(put({"Cookie": cookie, "X-CSRF-Token": csrf, "Origin": self.d.base,
                              "Sec-Fetch-Site": "same-origin"}), 200)
        # a session is not an ingest key
        self.assertEqual(self.d.request("POST", "/v1/traces", "{}", headers={"Cookie": cookie})[0], 403)
        # a made-up or cut cookie is no session
        self.assertEqual(self.d.request("GET", "/api/v1/apps", headers={"Cookie": "pacer_session=" + "a" * 64})[0], 401)
        self.assertEqual(self.d.request("GET", "/api/v1/apps", headers={"Cookie": cookie[:-1]})[0], 401)
        # a login from another origin is refused
        self.assertEqual(self.login(headers={"Origin": "http://evil.example"})[0], 403)

    def test_wrong_tokens_are_limited_per_address(self):
        codes = [self.login(token="wrong-%d" % i)[0] for i in range(12)]
        self.assertEqual(codes[:10], [401] * 10)
        self.assertEqual(codes[10:], [429, 429])
        status, h, _ = self.login()  # the right one waits too
        self.assertEqual(status, 429)
        self.assertGreaterEqual(int(h["Retry-After"]), 1)

    def test_a_new_admin_token_ends_every_session(self):
        cookie, _, _ = self.session()
        self.assertEqual(self.d.request("GET", "/api/v1/apps", headers={"Cookie": cookie})[0], 200)
        os.kill(self.d.proc.pid, signal.SIGHUP)  # the same token: the session stays
        time.sleep(0.3)
        self.assertEqual(self.d.request("GET", "/api/v1/apps", headers={"Cookie": cookie})[0], 200)
        with open(self.d.admin_file, "w") as f:
            f.write("another-admin-token-0123456789\n")
        os.kill(self.d.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "reloaded" not in self.d.stderr_text().split("SIGHUP")[-1]:
            time.sleep(0.1)
        time.sleep(0.2)
        self.assertEqual(self.d.request("GET", "/api/v1/apps", headers={"Cookie": cookie})[0], 401)

    def test_secure_cookie_under_tls(self):
        if not shutil.which("openssl"):
            self.skipTest("no openssl")
        tmp = tempfile.mkdtemp()
        try:
            key, cert = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-days", "1", "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1",
                            "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
            import ssl
            d = Pacerd(extra_args=["--web-root", WEB_DIR, "--tls-cert", cert, "--tls-key", key], scheme="https")
            d.ssl_context = ssl.create_default_context(cafile=cert)
            try:
                _, _, set_cookie = self.session(d)
                self.assertIn("; Secure", set_cookie)
                self.assertIn("HttpOnly", set_cookie)
                self.assertIn("SameSite=Strict", set_cookie)
            finally:
                d.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
