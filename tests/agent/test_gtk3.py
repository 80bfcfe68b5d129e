"""GTK 3 programs under `pacer run`: the GTK 3 adapter gives them the GTK 4
adapter's records and meanings (docs/agent.md).

- shop-app-gtk3 (examples/, GTK 3 on libsoup-2.4 and libcurl) on Xvfb, held
  against the same ground truth and tolerances as the GTK 4 demo
  (test_demo.py): the API server's delays and the app's own clock for
  every request, the splash and lazy-page waits, the cold start with its
  main page and full display; its home window leaking a label when it
  closes gives an object `leak` record, and none without the leak;
- gtk3-widget-factory (Debian's gtk-3-examples) ended by SIGTERM: its
  window complete, the dialogs it builds up front `never_shown`, its frames;
- a PyGObject script that loads GTK 3 after main(): measured like a C app,
  named after the script, its stall a jank;
- on a headless weston too: the demo and the widget factory;
- every first frame within 2 ms of an observer outside the program (the X
  server's DAMAGE after the map, weston's timeline), as test_toolkit_free.py.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import (APP_ENV, PACER, SHOP_CONFIG, ApiServer, Weston, WestonTimeline, XFirstPaint,  # noqa: E402
                      Xvfb, assert_documented, assert_first_frame_seen, assert_frames_invariants, of_type,
                      read_jsonl, skip_unless)

SHOP_APP_GTK3 = os.environ["SHOP_APP_GTK3"]
PYTHON = "/usr/bin/python3"  # Debian's, where python3-gi lives
PY_APP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pygobject-gtk3-app.py")
DELAYS = {"/api/config": 200, "/api/list": 300, "/api/test1": 300}
SPLASH_MS = 400
LAZY_MS = 1500
APP_SLACK_MS = 20  # the agent's figure against the app's own, per request (as test_demo.py)
SLACK_MS = 250     # a jank's duration over the app's own measure of its stall
RUN_S = 4
MS = 1_000_000


def app_requests(err):
    """{path: [(start_ns, end_ns), ...]} from shop-app-gtk3 --log-requests."""
    out = {}
    for m in re.finditer(r"^shop-app-gtk3: request (\S+) (\d+) (\d+)$", err, re.M):
        out.setdefault(m.group(1), []).append((int(m.group(2)) * 1000, int(m.group(3)) * 1000))
    return out


def pacer_run(env, argv, config=None, timeout=90):
    work = tempfile.mkdtemp(prefix="pacer-gtk3-")
    out, raw = os.path.join(work, "records.jsonl"), os.path.join(work, "events.jsonl")
    cmd = [PACER, "run", "--out", out, "--raw-events", raw] + (["--config", config] if config else [])
    p = subprocess.run(cmd + ["--"] + argv, env=env, capture_output=True, text=True, timeout=timeout)
    return p, read_jsonl(out), read_jsonl(raw)


def end_with_sigterm(test, argv, env, run_s):
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + run_s
        while time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.1)
        if p.poll() is not None:
            err.seek(0)
            test.fail("%s exited early (%s): %s" % (argv, p.returncode, err.read()))
        p.send_signal(signal.SIGTERM)
        status = p.wait(20)
        err.seek(0)
        return status, err.read()


class Checks(unittest.TestCase):
    def check_gtk3_cold(self, records, main_page):
        cold = of_type(records, "startup", kind="cold")
        self.assertEqual(len(cold), 1, records)
        s = cold[0]
        self.assertEqual(s["toolkit"], "gtk3")
        self.assertEqual(s["frame_source"], "page")
        self.assertEqual(s["main_page"], main_page)
        return s

    def check_widget_factory(self, records):
        s = self.check_gtk3_cold(records, "GtkApplicationWindow")
        self.assertGreater(s["cold_ms"], 0)
        windows = of_type(records, "page", kind="window")
        shown = [w for w in windows if w["status"] != "never_shown"]
        self.assertTrue(shown, windows)
        for w in shown:
            self.assertEqual(w["status"], "complete", w)
            self.assertGreater(w["initial_draw_ms"], 0)
        # it builds its dialogs and shortcuts window up front, shows none
        never = [w for w in windows if w["status"] == "never_shown"]
        self.assertTrue(never, windows)
        for w in never:
            self.assertNotIn("initial_draw_ms", w)
        # GTK 3's menus, tooltips and pop-ups are GtkWindows too: none is a page
        self.assertFalse([w for w in windows if w["page"] in ("GtkWindow", "GtkTooltipWindow")], windows)
        frames = of_type(records, "frames")
        self.assertTrue(frames, records)
        for f in frames:
            assert_frames_invariants(self, f)
            self.assertEqual(f["source"], "frame_clock")
        return s


class Demo(Checks):
    @classmethod
    def setUpClass(cls):
        cls.x = Xvfb(priority=True).__enter__()
        cls.server = ApiServer(DELAYS).__enter__()
        cls.env = dict(os.environ, DISPLAY=cls.x.display, **APP_ENV)
        cls.env.pop("WAYLAND_DISPLAY", None)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        cls.x.__exit__(None, None, None)

    def args(self, *extra):
        return [SHOP_APP_GTK3, "--api", self.server.base, "--splash-ms", str(SPLASH_MS), "--lazy-ms", str(LAZY_MS),
                "--auto-exit", "--log-requests"] + list(extra)

    def assertClose(self, value, truth, app_ms, what=""):
        """At least the server's delay `truth`, within APP_SLACK_MS of one of
        the app's own figures."""
        self.assertIsNotNone(value, what)
        self.assertGreaterEqual(value, truth - 1, "%s: %.3f ms, truth %d ms" % (what, value, truth))
        self.assertTrue(app_ms, "%s: the app logged no such request" % what)
        near = min(app_ms, key=lambda a: abs(a - value))
        self.assertLessEqual(abs(value - near), APP_SLACK_MS,
                             "%s: %.3f ms, the app measured %s ms" % (what, value, ["%.1f" % a for a in app_ms]))

    def test_cold_start_pages_and_requests(self):
        def attempt():
            with XFirstPaint(self.x.display) as watch:
                p, records, events = pacer_run(self.env, self.args(), config=SHOP_CONFIG)
                paint, skipped = watch.result()
            self.assertEqual(p.returncode, 0, p.stderr)
            s = self.check_gtk3_cold(records, "ShopHomeWindow")
            return s["phases"]["first_frame"], paint, skipped, (p, records, events)
        p, records, events = assert_first_frame_seen(self, attempt)
        app = app_requests(p.stderr)

        def app_ms(path):
            return [(e - s) / MS for s, e in app.get(path, [])]

        # Start-up (DESIGN §3.2), as test_demo.py.
        s = of_type(records, "startup", kind="cold")[0]
        ph = s["phases"]
        order = ["launch", "agent_init", "main", "app_created", "first_frame", "main_frame", "full_display"]
        for a, b in zip(order, order[1:]):
            self.assertLessEqual(ph[a], ph[b], "%s after %s" % (a, b))
        creates = {e["page"]: e for e in events if e["ev"] == "page_create"}
        home_create = next(e for e in creates.values() if e["class"] == "ShopHomeWindow")
        self.assertGreaterEqual(ph["main_frame"] - ph["app_created"], SPLASH_MS * MS)
        self.assertGreaterEqual(ph["full_display"] - home_create["t"], 500 * MS)
        self.assertGreaterEqual(s["cold_ms"], SPLASH_MS)
        self.assertLessEqual(s["first_screen_ms"], s["cold_ms"])
        self.assertLessEqual(s["app_cost_ms"], s["first_screen_ms"])

        # Pages (DESIGN §3.1).
        by_class = {}
        for pg in of_type(records, "page"):
            by_class.setdefault(pg["page"], []).append(pg)
        self.assertEqual(len(by_class.get("ShopHomeWindow", [])), 1, by_class)
        self.assertEqual(len(by_class.get("ShopSplashWindow", [])), 1, by_class)
        self.assertEqual(len(by_class.get("ShopMerchantPage", [])), 2, by_class)
        home = by_class["ShopHomeWindow"][0]
        self.assertEqual(home["status"], "complete")
        self.assertTrue(home["main"])
        apis = {a["url"]: a for a in home["apis"]}
        self.assertEqual(set(apis), {"/api/config", "/api/list"})
        for url, a in apis.items():
            self.assertEqual(a["status"], 200)
            self.assertClose(a["ms"], DELAYS[url], app_ms(url), what=url)
        pairs = zip(sorted(app.get("/api/config", [])), sorted(app.get("/api/list", [])))
        self.assertClose(home["api_load_ms"], DELAYS["/api/config"] + DELAYS["/api/list"],
                         [(lst[1] - cfg[0]) / MS for cfg, lst in pairs], "home api_load_ms")
        self.assertGreaterEqual(home["total_ms"], home["api_load_ms"])
        splash = by_class["ShopSplashWindow"][0]
        self.assertEqual((splash["status"], splash["kind"]), ("complete", "window"))
        self.assertGreater(splash["initial_draw_ms"], 0)

        selects = {}
        for e in events:
            if e["ev"] == "page_select":
                selects.setdefault(e["page"], e["t"])
        lazy_ids = [pid for pid, t in selects.items()
                    if creates.get(pid, {}).get("class") == "ShopMerchantPage"
                    and t - creates[pid]["t"] > (LAZY_MS - 100) * MS]
        self.assertEqual(len(lazy_ids), 1, "exactly one merchant page is selected late")
        for m in by_class["ShopMerchantPage"]:
            self.assertEqual((m["status"], m["kind"]), ("complete", "page"))
            self.assertEqual([a["url"] for a in m["apis"]], ["/api/test1"])
            self.assertClose(m["api_load_ms"], DELAYS["/api/test1"], app_ms("/api/test1"), "merchant api_load_ms")
            if m["instance"] in lazy_ids:
                # shown LAZY_MS after creation, its data long loaded: the
                # wait is subtracted, only its own drawing remains
                self.assertLess(m["total_ms"], 300, m)
                self.assertLess(m["initial_draw_ms"], 300, m)
            else:
                self.assertGreaterEqual(m["total_ms"], DELAYS["/api/test1"], m)

        # Requests: libsoup-2.4 and libcurl, one net record each.
        nets = of_type(records, "net")
        self.assertEqual(len(nets), 4, nets)
        seen = sorted((n["url"].split(self.server.base, 1)[1], n["lib"]) for n in nets)
        self.assertEqual(seen, [("/api/config", "soup"), ("/api/list", "soup"), ("/api/test1", "curl"),
                                ("/api/test1", "curl")])
        for n in nets:
            path = n["url"].split(self.server.base, 1)[1]
            self.assertEqual((n["status"], n["method"], n["content_type"], n["error"]),
                             (200, "GET", "application/json", None))
            self.assertGreater(n["bytes_received"], 0)
            self.assertGreater(n["bytes_sent"], 0)
            self.assertClose(n["total_ms"], DELAYS[path], app_ms(path), what="net " + path)
            self.assertLessEqual(n["first_byte_ms"], n["total_ms"])
            self.assertGreaterEqual(n["first_byte_ms"], DELAYS[path] - 1)
            self.assertEqual(n["classes"], [])
        self.assertIn("GTK 3: pages, frames, requests", p.stderr)
        assert_documented(self, records, ["page", "startup", "net", "frames"])

    def test_leak_on_window_destroy(self):
        env = dict(self.env, PACER_LEAK_GRACE_MS="500")
        p, records, _ = pacer_run(env, self.args("--close-home", "--leak", "--quit-ms", "2500"), config=SHOP_CONFIG)
        self.assertEqual(p.returncode, 0, p.stderr)
        leaks = [r for r in of_type(records, "leak") if r["origin"] == "app"]
        self.assertEqual(len(leaks), 1, leaks)
        leak = leaks[0]
        self.assertEqual((leak["kind"], leak["page"], leak["page_kind"]), ("object", "ShopHomeWindow", "window"))
        self.assertEqual(leak["types"], [{"type": "GtkLabel", "count": 1}])
        home = [pg for pg in of_type(records, "page") if pg["page"] == "ShopHomeWindow"][0]
        self.assertEqual(leak["instance"], home["instance"])
        # the same close without the stashed reference leaks nothing
        p, records, _ = pacer_run(env, self.args("--close-home", "--quit-ms", "2500"), config=SHOP_CONFIG)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([r for r in of_type(records, "leak") if r["origin"] == "app"], [])


class Examples(Checks):
    @classmethod
    def setUpClass(cls):
        cls.x = Xvfb(priority=True).__enter__()
        cls.env = dict(os.environ, DISPLAY=cls.x.display, **APP_ENV)
        cls.env.pop("WAYLAND_DISPLAY", None)

    @classmethod
    def tearDownClass(cls):
        cls.x.__exit__(None, None, None)

    def test_gtk3_widget_factory(self):
        path = shutil.which("gtk3-widget-factory")
        if not path:
            self.skipTest("gtk3-widget-factory is not installed (package gtk-3-examples)")
        bare, _ = end_with_sigterm(self, [path], self.env, 2)
        self.assertEqual(bare, -signal.SIGTERM)

        def attempt():
            out = os.path.join(tempfile.mkdtemp(prefix="pacer-gtk3-wf-"), "records.jsonl")
            with XFirstPaint(self.x.display) as watch:
                status, err = end_with_sigterm(self, [PACER, "run", "--out", out, "--", path], self.env, RUN_S)
                paint, skipped = watch.result()
            self.assertEqual(status, bare, err)
            records = read_jsonl(out)
            s = self.check_widget_factory(records)
            return s["phases"]["first_frame"], paint, skipped, records
        records = assert_first_frame_seen(self, attempt)
        self.assertEqual(of_type(records, "startup")[0]["app"], "gtk3-widget-factory")

    def test_pygobject_gtk3_app(self):
        probe = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
        if not os.path.exists(PYTHON) or subprocess.run([PYTHON, "-c", probe], capture_output=True,
                                                         env=dict(os.environ, DISPLAY="")).returncode:
            self.skipTest("/usr/bin/python3 cannot load GTK 3 (packages python3-gi, gir1.2-gtk-3.0)")
        window = "__main__+PyGtk3Window"

        def attempt():
            with XFirstPaint(self.x.display) as watch:
                p, records, _ = pacer_run(self.env, [PYTHON, PY_APP, "--stall-ms", "900"])
                paint, skipped = watch.result()
            self.assertEqual(p.returncode, 0, p.stderr)
            s = self.check_gtk3_cold(records, window)
            return s["phases"]["first_frame"], paint, skipped, (p, records)
        p, records = assert_first_frame_seen(self, attempt)
        for r in records:
            self.assertEqual(r["app"], "pygobject-gtk3-app", r)
        pages = of_type(records, "page", page=window)
        self.assertEqual(len(pages), 1, records)
        self.assertEqual(pages[0]["status"], "complete")
        ph = of_type(records, "startup", kind="cold")[0]["phases"]
        # main() ran before GTK 3 was loaded; the agent came up after it
        self.assertLess(ph["main"], ph["agent_init"])
        self.assertLess(ph["app_created"], ph["main_frame"])
        stalled = float(re.search(r"stalled ms=([0-9.]+)", p.stdout).group(1))
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), 1, records)
        self.assertGreaterEqual(janks[0]["duration_ms"], stalled)
        self.assertLessEqual(janks[0]["duration_ms"], stalled + SLACK_MS)
        self.assertEqual(janks[0]["page"], window)
        modules = [f["module"] for f in janks[0]["stack"]]
        self.assertTrue(any(m and (m.startswith("libpython3") or m.startswith("python3")) for m in modules),
                        modules)
        frames = of_type(records, "frames", window=window)
        self.assertTrue(frames, records)
        for f in frames:
            assert_frames_invariants(self, f)


class OnWeston(Checks):
    @classmethod
    def setUpClass(cls):
        cls.w = Weston(debug=True, priority=True).__enter__()
        cls.server = ApiServer(DELAYS).__enter__()
        cls.env = dict(os.environ, **APP_ENV, **cls.w.env)
        cls.env.pop("DISPLAY", None)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        cls.w.__exit__(None, None, None)

    def test_demo(self):
        args = [SHOP_APP_GTK3, "--api", self.server.base, "--splash-ms", "100", "--lazy-ms", "1000", "--auto-exit"]

        def attempt():
            with WestonTimeline(self.w) as timeline:
                p, records, _ = pacer_run(self.env, args, config=SHOP_CONFIG)
            self.assertEqual(p.returncode, 0, p.stderr)
            s = self.check_gtk3_cold(records, "ShopHomeWindow")
            return s["phases"]["first_frame"], timeline.first_toplevel_commit(), (), records
        records = assert_first_frame_seen(self, attempt)
        pages = of_type(records, "page")
        self.assertEqual(sorted(pg["page"] for pg in pages),
                         ["ShopHomeWindow", "ShopMerchantPage", "ShopMerchantPage", "ShopSplashWindow"])
        for pg in pages:
            self.assertEqual(pg["status"], "complete", pg)
        self.assertEqual(len(of_type(records, "net")), 4)

    def test_gtk3_widget_factory(self):
        path = shutil.which("gtk3-widget-factory")
        if not path:
            self.skipTest("gtk3-widget-factory is not installed (package gtk-3-examples)")

        def attempt():
            out = os.path.join(tempfile.mkdtemp(prefix="pacer-gtk3-wf-"), "records.jsonl")
            with WestonTimeline(self.w) as timeline:
                status, err = end_with_sigterm(self, [PACER, "run", "--out", out, "--", path], self.env, RUN_S)
            self.assertEqual(status, -signal.SIGTERM, err)
            records = read_jsonl(out)
            s = self.check_widget_factory(records)
            return s["phases"]["first_frame"], timeline.first_toplevel_commit(), (), records
        assert_first_frame_seen(self, attempt)


if __name__ == "__main__":
    skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
    unittest.main()
