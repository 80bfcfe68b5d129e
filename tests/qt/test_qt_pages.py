"""qt-shop under `pacer run` (Qt 6 and Qt 5, Xvfb and a headless weston):
the Qt adapter's pages, start-up and requests, each figure held against
the demo API server's delays and the app's own clock (--log-requests),
with the GTK demo's tolerances (tests/agent/test_demo.py): a request's
figure is at least its server delay and within APP_SLACK_MS of what the
app measured itself.

And what the adapter maps: a GTK app maps no part of it; a program that
loaded only QtCore (a PyQt script importing QtCore alone) maps its core,
not the widgets or network parts.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from qtlib import DELAYS, QT_SHOP5, QT_SHOP6, DisplayCase, clock_log, need  # noqa: E402
from agentlib import PACER, SHOP_APP, assert_documented, of_type, read_jsonl, require_in_test  # noqa: E402

SPLASH_MS = 400
LAZY_MS = 1500
APP_SLACK_MS = 20
MS = 1_000_000
US = 1000
CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "qt", "qt-shop.xml")
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's python3-pyqt6 is for it


def pacer_run(display, cmd, config=None, extra_env=None, timeout=90):
    """Runs cmd under `pacer run` on the display; returns (status, records,
    events, stderr lines)."""
    work = tempfile.mkdtemp(prefix="pacer-qt-test-")
    out, raw = os.path.join(work, "records.jsonl"), os.path.join(work, "events.jsonl")
    args = [PACER, "run", "--out", out, "--raw-events", raw] + (["--config", config] if config else []) + ["--"]
    env = display.app_env(extra_env)
    env.pop("WAYLAND_DEBUG", None)
    p = subprocess.run(args + cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout)
    return p.returncode, read_jsonl(out), read_jsonl(raw), p.stderr.splitlines()


class Base(DisplayCase):
    pass

    def run_shop(self, binary, env=None):
        need(binary, "qt-shop")
        rc, records, events, lines = pacer_run(
            self.display, [binary, "--api", self.server.base, "--log-requests", "--splash-ms", str(SPLASH_MS),
                           "--lazy-ms", str(LAZY_MS), "--linger-ms", "300", "--auto-exit"],
            config=CONFIG, extra_env=env)
        err = "\n".join(lines)
        self.assertEqual(rc, 0, err)
        self.log = clock_log(lines, "qt-shop")
        self.assertIn("ready", self.log, err)
        self.err = err
        return records, events

    def app_ms(self, path):
        return [(e - s) / US for s, e in self.log["request"].get(path, [])]

    def assertClose(self, value, truth, app_ms, what=""):
        self.assertIsNotNone(value, what)
        self.assertGreaterEqual(value, truth - 1, "%s: %.3f ms, truth %d ms" % (what, value, truth))
        self.assertTrue(app_ms, "%s: the app logged no such request" % what)
        near = min(app_ms, key=lambda a: abs(a - value))
        self.assertLessEqual(abs(value - near), APP_SLACK_MS,
                             "%s: %.3f ms, the app measured %s ms" % (what, value, ["%.1f" % a for a in app_ms]))

    def check_shop(self, records, events, major):
        err = self.err
        self.assertIn("Qt %d: pages" % major, err)
        pages = of_type(records, "page")
        by_class = {}
        for p in pages:
            by_class.setdefault(p["page"], []).append(p)
        for cls in ("QtShopSplash", "QtShopHomeWindow", "QtMerchantPage", "QtShopWelcomePage"):
            self.assertEqual(len(by_class.get(cls, [])), 1, (cls, pages))
        (splash,), (home,), (merchant,), (welcome,) = (by_class[c] for c in (
            "QtShopSplash", "QtShopHomeWindow", "QtMerchantPage", "QtShopWelcomePage"))

        # The splash: a window drawn, not the main page.
        self.assertEqual((splash["status"], splash["kind"], splash["main"]), ("complete", "window", False), splash)
        self.assertGreater(splash["initial_draw_ms"], 0)

        # The home window: both its APIs, one after the other.
        self.assertEqual((home["status"], home["kind"], home["main"]), ("complete", "window", True), home)
        apis = {a["url"]: a for a in home["apis"]}
        self.assertEqual(set(apis), {"/api/config", "/api/list"})
        for url, a in apis.items():
            self.assertEqual(a["status"], 200)
            self.assertClose(a["ms"], DELAYS[url], self.app_ms(url), what=url)
        (cfg,), (lst,) = self.log["request"]["/api/config"], self.log["request"]["/api/list"]
        self.assertClose(home["api_load_ms"], DELAYS["/api/config"] + DELAYS["/api/list"],
                         [(lst[1] - cfg[0]) / US], "home api_load_ms")
        self.assertGreaterEqual(home["total_ms"], home["api_load_ms"])
        self.assertGreaterEqual(home["final_draw_ms"], 0)
        # Its initial draw: from its construction (the app's "home" stamp
        # is taken right after it) to its first frame, never before.
        self.assertGreater(home["initial_draw_ms"], 0)

        # The merchant page: built with the window, made current LAZY_MS
        # later; its request ended long before. Without the lazy-page
        # correction its total would be LAZY_MS.
        self.assertEqual((merchant["status"], merchant["kind"]), ("complete", "page"), merchant)
        self.assertEqual([a["url"] for a in merchant["apis"]], ["/api/test1"])
        self.assertClose(merchant["api_load_ms"], DELAYS["/api/test1"], self.app_ms("/api/test1"),
                         "merchant api_load_ms")
        self.assertLess(merchant["total_ms"], 300, merchant)
        self.assertLess(merchant["initial_draw_ms"], 300, merchant)
        # The welcome page, current from the start, has no API.
        self.assertEqual((welcome["status"], welcome["kind"]), ("complete", "page"), welcome)
        self.assertNotIn("apis", welcome)

        # Events against the app's clock: the merchant page selected no
        # sooner than LAZY_MS after the home window was made.
        ev = {}
        for e in events:
            ev.setdefault(e["ev"], []).append(e)
        ids = {e["class"]: e["page"] for e in ev["page_create"]}
        home_create = [e["t"] for e in ev["page_create"] if e["class"] == "QtShopHomeWindow"][0]
        self.assertLessEqual(home_create, self.log["home"][0] * US)  # constructed before the app's stamp after it
        selects = [e["t"] for e in ev["page_select"] if e["page"] == ids["QtMerchantPage"]]
        self.assertEqual(len(selects), 1, ev["page_select"])
        self.assertGreaterEqual(selects[0] - home_create, LAZY_MS * MS)
        self.assertLessEqual(selects[0], self.log["ready"][0] * US)

        # Start-up: Qt's, with the home window as the main page.
        (s,) = of_type(records, "startup", kind="cold")
        self.assertEqual(s["toolkit"], "qt%d" % major)
        self.assertEqual(s["main_page"], "QtShopHomeWindow")
        self.assertEqual(s["frame_source"], "page")
        ph = s["phases"]
        order = ["launch", "agent_init", "main", "app_created", "first_frame", "main_frame", "full_display"]
        for a, b in zip(order, order[1:]):
            self.assertLessEqual(ph[a], ph[b], "%s after %s" % (a, b))
        self.assertLessEqual(ph["app_created"], self.log["app"][0] * US)  # the app stamps after its QApplication
        self.assertGreaterEqual(ph["main_frame"] - ph["app_created"], SPLASH_MS * MS)
        self.assertGreaterEqual(ph["full_display"] - home_create, 500 * MS)
        self.assertGreaterEqual(ph["full_display"], lst[1] * US)  # after the last API ended, on the app's clock

        # Requests: every QNetworkAccessManager request, one record each.
        nets = of_type(records, "net")
        self.assertEqual(sorted(re.sub(r"^https?://[^/]+", "", n["url"]) for n in nets), sorted(DELAYS), nets)
        for n in nets:
            path = re.sub(r"^https?://[^/]+", "", n["url"])
            self.assertEqual((n["lib"], n["method"], n["status"], n["error"]), ("qt", "GET", 200, None), n)
            self.assertEqual(n["content_type"], "application/json")
            self.assertGreater(n["bytes_received"], 0)
            self.assertClose(n["total_ms"], DELAYS[path], self.app_ms(path), "net " + path)
            self.assertGreaterEqual(n["first_byte_ms"], DELAYS[path] - 1)
            self.assertLessEqual(n["first_byte_ms"], n["total_ms"])
            self.assertEqual(n["classes"], [])
            if major == 5:
                self.assertIsNone(n["connect_ms"])  # Qt 5 tells no connection phases
        # Qt Widgets windows' frames are the display path's (an image
        # upload on X11, a commit on Wayland), with its two phases
        frames = of_type(records, "frames")
        self.assertTrue(frames)
        for f in frames:
            self.assertEqual(f["source"], "x11_image" if self.kind == "x11" else "wayland", f)
            self.assertEqual({p for p, ms in f["phases_ms"].items() if ms > 0} - {"paint", "present"}, set(), f)
        assert_documented(self, records, ["page", "startup", "net", "frames"])


class X11(Base):
    kind = "x11"

    def test_qt6_pages_startup_requests(self):
        self.check_shop(*self.run_shop(QT_SHOP6), 6)

    def test_qt5_pages_startup_requests(self):
        self.check_shop(*self.run_shop(QT_SHOP5), 5)

    def test_qt6_own_dispatcher(self):
        """QT_NO_GLIB=1: Qt's own event dispatcher; the same pages."""
        self.check_shop(*self.run_shop(QT_SHOP6, env={"QT_NO_GLIB": "1"}), 6)

    def test_failed_requests_carry_qt_error(self):
        """Requests to a closed port: each `net` record carries the text
        Qt's errorString() gave the app, status 0, no made-up phases."""
        need(QT_SHOP6, "qt-shop6")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        rc, records, _, lines = pacer_run(self.display, [QT_SHOP6, "--api", "http://127.0.0.1:%d" % port,
                                                         "--splash-ms", "0", "--lazy-ms", "100", "--linger-ms",
                                                         "100", "--auto-exit"], config=CONFIG)
        err = "\n".join(lines)
        self.assertEqual(rc, 0, err)
        seen = set(re.findall(r"^qt-shop: request failed: (.*)$", err, re.M))
        nets = of_type(records, "net")
        self.assertEqual(sorted(re.sub(r"^https?://[^/]+", "", n["url"]) for n in nets), sorted(DELAYS), nets)
        for n in nets:
            self.assertEqual((n["lib"], n["status"]), ("qt", 0), n)
            self.assertIn(n["error"], seen, n)
            self.assertIn("Connection refused", n["error"])
            self.assertIn("error", n["classes"])
            for phase in ("connect_ms", "first_byte_ms"):
                self.assertIsNone(n[phase], (phase, n))

    def test_gtk_app_maps_no_qt_adapter(self):
        """The GTK demo under pacer: the agent is in it, no part of the Qt
        adapter is."""
        work = tempfile.mkdtemp(prefix="pacer-qt-test-")
        env = self.display.app_env()
        p = subprocess.Popen([PACER, "run", "--out", os.path.join(work, "r.jsonl"), "--", SHOP_APP, "--api",
                              self.server.base, "--splash-ms", "0", "--lazy-ms", "100"],
                             env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            maps = ""
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "libgtk-4" not in maps:
                time.sleep(0.2)
                with open("/proc/%d/maps" % p.pid) as f:
                    maps = f.read()
            time.sleep(1)  # its window shown
            with open("/proc/%d/maps" % p.pid) as f:
                maps = f.read()
        finally:
            p.kill()
            p.wait()
        self.assertIn("libpacer-agent", maps)
        self.assertIn("libgtk-4", maps)
        self.assertNotIn("libpacer-qt", maps)

    def test_qtcore_only_maps_core_part_only(self):
        """A PyQt6 script that imports QtCore alone (QtCore loaded by
        dlopen, after the agent's constructor) gets the adapter's core and
        no widgets or network part, nor any Qt module it did not load; its
        QObjects are seen (the core's hooks are in)."""
        require_in_test(os.path.exists(SYSTEM_PYTHON), "no /usr/bin/python3")
        script = ("import sys\n"
                  "from PyQt6 import QtCore\n"
                  "app = QtCore.QCoreApplication(sys.argv)\n"
                  "objs = [QtCore.QObject() for _ in range(3)]\n"
                  "QtCore.QTimer.singleShot(100, app.quit)\n"
                  "app.exec()\n"
                  "print(open('/proc/self/maps').read())\n")
        work = tempfile.mkdtemp(prefix="pacer-qt-test-")
        env = self.display.app_env()
        p = subprocess.run([PACER, "run", "--out", os.path.join(work, "r.jsonl"), "--raw-events",
                            os.path.join(work, "e.jsonl"), "--", SYSTEM_PYTHON, "-c", script],
                           env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        require_in_test("No module named 'PyQt6'" not in p.stderr, "python3-pyqt6 is not installed")
        self.assertEqual(p.returncode, 0, p.stderr)
        maps = p.stdout
        self.assertIn("libQt6Core", maps)
        self.assertIn("libpacer-qt6.so", maps, p.stderr)
        for absent in ("libpacer-qt6-widgets", "libpacer-qt6-network", "libQt6Widgets", "libQt6Network",
                       "libQt6Gui"):
            self.assertNotIn(absent, maps)


class Wayland(Base):
    kind = "wayland"

    def test_qt6_pages_startup_requests(self):
        self.check_shop(*self.run_shop(QT_SHOP6), 6)

    def test_qt5_pages_own_dispatcher(self):
        self.check_shop(*self.run_shop(QT_SHOP5, env={"QT_NO_GLIB": "1"}), 5)


if __name__ == "__main__":
    unittest.main()
