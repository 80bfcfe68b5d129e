"""The Qt adapter on programs other than qt-shop, under `pacer run` on a
private Xvfb, figures held against the demo API server's delays and each
app's own clock (test_qt_pages.py's tolerances):

  qml-shop   Qt 6's qml runtime: a Window, StackView pages, XMLHttpRequest
             (QNetworkAccessManager inside the QML engine); its clock is
             CLOCK_REALTIME in ms, so durations are compared;
  pyqt-shop  a PyQt6 script: QtCore arrives by dlopen after the agent's
             constructor (Python's import), the pages are Python classes;
  kcalc      a KDE app (Qt 5) nobody here wrote: its window is the main
             page of its start-up, without a config;
  qmleasing  Qt 6's easing curve editor, nobody here wrote it either: a
             QApplication whose main window shows a QQuickView beside it
             (a Qt Quick window that is no widget), ended by SIGTERM.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from qtlib import (DELAYS, KCALC, PYQT_SHOP, QMLEASING, QML_RUNTIME, QML_SHOP, ApiServer, Display, clock_log,  # noqa: E402
                   default_dispositions, need)
from agentlib import PACER, assert_documented, assert_frames_invariants, of_type, read_jsonl, require_in_test  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "qt")
LAZY_MS = 1500
APP_SLACK_MS = 20
US = 1000


def pyqt6_importable():
    p = subprocess.run(["/usr/bin/python3", "-c", "import PyQt6.QtNetwork, PyQt6.QtWidgets"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.returncode == 0


class X11(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.display = Display("x11").__enter__()
        cls.server = ApiServer(DELAYS).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        cls.display.__exit__(None, None, None)

    def pacer_run(self, cmd, config=None):
        work = tempfile.mkdtemp(prefix="pacer-qt-test-")
        out, raw = os.path.join(work, "records.jsonl"), os.path.join(work, "events.jsonl")
        args = [PACER, "run", "--out", out, "--raw-events", raw] + (["--config", config] if config else [])
        env = self.display.app_env()
        p = subprocess.run(args + ["--"] + cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, errors="replace", timeout=90)
        return p.returncode, read_jsonl(out), read_jsonl(raw), p.stderr

    def assertNear(self, value, truth, app_ms, what):
        self.assertIsNotNone(value, what)
        self.assertGreaterEqual(value, truth - 1, "%s: %.3f ms, truth %d ms" % (what, value, truth))
        self.assertLessEqual(abs(value - app_ms), APP_SLACK_MS, "%s: %.3f ms, the app measured %.1f ms"
                             % (what, value, app_ms))

    def pages(self, records):
        out = {}
        for p in of_type(records, "page"):
            self.assertNotIn(p["page"], out, p)
            out[p["page"]] = p
        return out

    def test_qml_shop(self):
        need(QML_RUNTIME, "Qt 6's qml runtime")
        rc, records, events, err = self.pacer_run(
            [QML_RUNTIME, QML_SHOP, "--", "--api", self.server.base, "--lazy-ms", str(LAZY_MS), "--linger-ms",
             "300", "--auto-exit", "--exit-code", "3", "--log-requests"],
            config=os.path.join(EXAMPLES, "qml-shop.xml"))
        self.assertEqual(rc, 3, err)
        log = clock_log(err.splitlines(), "qml-shop")
        req = log["request"]  # CLOCK_REALTIME ms
        pages = self.pages(records)
        home, merchant = pages["QmlShopHome"], pages["QmlShopMerchant"]
        window = pages["QQuickWindowQmlImpl"]
        self.assertEqual((window["kind"], window["status"]), ("window", "complete"), window)
        self.assertEqual((home["kind"], home["status"], home["main"]), ("page", "complete", True), home)
        for a in home["apis"]:
            (s, e), = req[a["url"]]
            self.assertNear(a["ms"], DELAYS[a["url"]], e - s, a["url"])
        (cfg,), (lst,), (test1,) = req["/api/config"], req["/api/list"], req["/api/test1"]
        self.assertNear(home["api_load_ms"], DELAYS["/api/config"] + DELAYS["/api/list"], lst[1] - cfg[0],
                        "home api_load_ms")
        self.assertGreaterEqual(home["final_draw_ms"], 0)
        # The merchant page is pushed LAZY_MS after the window, and only
        # then asks for its data: its total includes the request.
        self.assertEqual((merchant["kind"], merchant["status"], merchant["main"]), ("page", "complete", False))
        self.assertNear(merchant["api_load_ms"], DELAYS["/api/test1"], test1[1] - test1[0], "merchant api_load_ms")
        self.assertGreaterEqual(merchant["total_ms"], merchant["api_load_ms"])
        ids = {e["class"]: e["page"] for e in events if e["ev"] == "page_create"}
        create = [e["t"] for e in events if e["ev"] == "page_create"]
        home_create = [e["t"] for e in events if e["ev"] == "page_create" and e["class"] == "QmlShopHome"][0]
        select = [e["t"] for e in events if e["ev"] == "page_select" and e["page"] == ids["QmlShopMerchant"]][0]
        self.assertGreaterEqual(select - home_create, (LAZY_MS - 1) * 1_000_000)
        self.assertEqual(create, sorted(create))
        (s,) = of_type(records, "startup", kind="cold")
        self.assertEqual((s["toolkit"], s["main_page"], s["frame_source"]), ("qt6", "QmlShopHome", "page"), s)
        nets = of_type(records, "net")
        self.assertEqual(sorted(re.sub(r"^https?://[^/]+", "", n["url"]) for n in nets), sorted(DELAYS), nets)
        for n in nets:
            self.assertEqual((n["lib"], n["status"], n["error"]), ("qt", 200, None), n)
        assert_documented(self, records, ["page", "startup", "net"])

    def test_pyqt_shop(self):
        need(PYQT_SHOP, "pyqt-shop.py")
        require_in_test(pyqt6_importable(), "Debian's python3 cannot import PyQt6")
        rc, records, events, err = self.pacer_run(
            [PYQT_SHOP, "--api", self.server.base, "--lazy-ms", str(LAZY_MS), "--linger-ms", "300", "--auto-exit",
             "--log-requests"], config=os.path.join(EXAMPLES, "pyqt-shop.xml"))
        self.assertEqual(rc, 0, err)
        self.assertEqual({r["app"] for r in records}, {"pyqt-shop"})  # named after the script
        # … and so is it in the run's last line, not python3
        self.assertRegex(err, r"(?m)^pacer: pyqt-shop \(pid \d+\), Qt 6: pages, frames, requests; %d records "
                         r"written to " % len(records))
        log = clock_log(err.splitlines(), "pyqt-shop")
        req = log["request"]  # CLOCK_MONOTONIC us
        pages = self.pages(records)
        home, merchant = pages["PyShopHomeWindow"], pages["PyShopMerchantPage"]
        self.assertEqual((home["kind"], home["status"], home["main"]), ("window", "complete", True), home)
        (cfg,), (test1,) = req["/api/config"], req["/api/test1"]
        self.assertNear(home["api_load_ms"], DELAYS["/api/config"], (cfg[1] - cfg[0]) / US, "home api_load_ms")
        # Built with the window, current LAZY_MS later: the lazy-page
        # correction leaves its own draw.
        self.assertEqual((merchant["kind"], merchant["status"]), ("page", "complete"), merchant)
        self.assertNear(merchant["api_load_ms"], DELAYS["/api/test1"], (test1[1] - test1[0]) / US,
                        "merchant api_load_ms")
        self.assertLess(merchant["total_ms"], 300, merchant)
        self.assertEqual(pages["PyShopWelcomePage"]["status"], "complete")
        (s,) = of_type(records, "startup", kind="cold")
        self.assertEqual((s["toolkit"], s["main_page"]), ("qt6", "PyShopHomeWindow"), s)
        # main() ran before QtCore arrived: the agent came in later
        self.assertLess(s["phases"]["main"], s["phases"]["agent_init"])
        self.assertEqual(len(of_type(records, "net")), 2)

    def test_kcalc(self):
        need(KCALC, "kcalc")
        rc, records, err = self.run_until_shown_then_term([KCALC], "^kcalc$")
        self.assertEqual(rc, -signal.SIGTERM, err)
        (s,) = of_type(records, "startup", kind="cold")
        self.assertEqual((s["toolkit"], s["main_page"], s["frame_source"]), ("qt5", "KCalculator", "page"), s)
        (k,) = of_type(records, "page", page="KCalculator")
        self.assertEqual((k["kind"], k["status"], k["main"]), ("window", "complete", True), k)
        self.assertGreater(k["initial_draw_ms"], 0)
        self.assertAlmostEqual(s["first_screen_ms"], s["cold_ms"], delta=0.01)

    def run_until_shown_then_term(self, cmd, window_class):
        """Runs cmd under `pacer run` until xdotool sees a window of that
        class, then SIGTERM; (exit status, records, stderr)."""
        work = tempfile.mkdtemp(prefix="pacer-qt-test-")
        out = os.path.join(work, "records.jsonl")
        p = subprocess.Popen([PACER, "run", "--out", out, "--"] + cmd, env=self.display.app_env(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             errors="replace", preexec_fn=default_dispositions)
        try:
            deadline = time.monotonic() + 30
            while not self.display.x11_windows("--class", window_class) and time.monotonic() < deadline:
                self.assertIsNone(p.poll(), "%s ended before it showed a window" % cmd[0])
                time.sleep(0.1)
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        return p.returncode, read_jsonl(out), err

    def test_qmleasing(self):
        need(QMLEASING, "qmleasing")
        rc, records, err = self.run_until_shown_then_term([QMLEASING], "^qmleasing$")
        self.assertEqual(rc, -signal.SIGTERM, err)
        (s,) = of_type(records, "startup", kind="cold")
        self.assertEqual((s["toolkit"], s["main_page"]), ("qt6", "MainWindow"), s)
        # the Qt Quick window: a page of its own, its frames from its scene graph
        (v,) = of_type(records, "page", page="QQuickView")
        self.assertEqual((v["kind"], v["status"]), ("window", "complete"), v)
        (f,) = of_type(records, "frames", window="QQuickView")
        self.assertEqual(f["source"], "scene_graph", f)
        self.assertGreaterEqual(f["frames"], 1, f)
        assert_frames_invariants(self, f)
        # a frame's phases add up to it: the longest frame is in the sum, and the sum in the frames
        phases = sum(f["phases_ms"].values())
        self.assertGreaterEqual(phases, f["max_frame_ms"] - 0.01, f)
        self.assertLessEqual(phases, f["frames"] * f["max_frame_ms"] + 0.01, f)
        assert_documented(self, records, ["startup", "page", "frames"])


if __name__ == "__main__":
    unittest.main()
