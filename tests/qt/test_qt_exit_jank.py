"""qt-shop under `pacer run`: a stall of its event loop and the ways it
ends.

Jank: `--stall-ms 1200` blocks the loop in
QtShopHomeWindow::computeRecommendations(int) once the app is ready, on
GLib's dispatcher (Debian's default) and on Qt's own (QT_NO_GLIB=1, which
waits in ppoll). Each run has one `jank` record at least as long as the
stall the app measured itself, on the page visible then, with the same
fingerprint on both dispatchers, the app's frames demangled and in-app and
Qt's libraries as library frames.

Exit: the status is the app's whatever the way (quit, a window closed,
exit(), SIGTERM, the display gone on X11 and on Wayland), and what was
measured is written: the cold start and the home window's page.
"""
import os
import re
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from qtlib import DELAYS, QT_SHOP6, QT_SHOP5, ApiServer, App, Display, clock_log, need  # noqa: E402
from agentlib import PACER, of_type, read_jsonl  # noqa: E402

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "qt", "qt-shop.xml")
QUICK = ["--splash-ms", "0", "--lazy-ms", "100", "--linger-ms", "100"]
US = 1000


class Run(App):
    """qt-shop under `pacer run`, its stderr read as it comes."""

    def __init__(self, display, server, binary, *args, env=None):
        self.work = tempfile.mkdtemp(prefix="pacer-qt-test-")
        self.out = os.path.join(self.work, "records.jsonl")
        cmd = [PACER, "run", "--out", self.out, "--config", CONFIG, "--", binary, "--api", server.base,
               "--log-requests"] + QUICK + list(args)
        super().__init__(display, cmd, env, protocol_log=False)

    def wait_ready(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("qt-shop: ready "):
                return True
        return False

    def records(self):
        return read_jsonl(self.out)

    def text(self):
        return "\n".join(self.lines)


class Base(unittest.TestCase):
    kind = "x11"

    def setUp(self):
        self.display = Display(self.kind).__enter__()
        self.server = ApiServer(DELAYS).__enter__()
        self.addCleanup(self.display.__exit__, None, None, None)
        self.addCleanup(self.server.__exit__, None, None, None)

    def start(self, binary, *args, env=None):
        need(binary, "qt-shop")
        r = Run(self.display, self.server, binary, *args, env=env)
        self.addCleanup(r.kill)
        return r

    def check_measured(self, run, major=6):
        """The cold start and the home window were written."""
        records = run.records()
        (s,) = of_type(records, "startup", kind="cold")
        self.assertEqual(s["toolkit"], "qt%d" % major, s)
        self.assertEqual(s["main_page"], "QtShopHomeWindow")
        homes = of_type(records, "page", page="QtShopHomeWindow")
        self.assertEqual(len(homes), 1, records)
        self.assertEqual(homes[0]["status"], "complete", homes)
        self.assertIn("records written", run.text())

    def display_gone(self, binary, major):
        run = self.start(binary)
        self.assertTrue(run.wait_ready(), run.text())
        time.sleep(0.3)
        if self.kind == "x11":
            self.display.server.proc.terminate()  # a logout
        else:
            self.display.server.proc.kill()  # a crashed compositor
        self.assertEqual(run.finish(), 1, run.text())  # Qt's exit(1) on X11, _exit(1) on Wayland
        self.check_measured(run, major)


class Jank(Base):
    def stall(self, env):
        run = self.start(QT_SHOP6, "--auto-exit", "--stall-ms", "1200", env=env)
        self.assertEqual(run.finish(), 0, run.text())
        (stall_start, stall_end), = clock_log(run.lines, "qt-shop")["stall"]
        janks = of_type(run.records(), "jank")
        self.assertEqual(len(janks), 1, janks)
        j = janks[0]
        self.assertGreaterEqual(j["duration_ms"], (stall_end - stall_start) / US - 1, j)
        self.assertEqual(j["page"], "QtMerchantPage")  # current since the app was ready
        self.assertEqual(j["stack_status"], "captured", j)
        frames = j["stack"]
        app = [f for f in frames if f["in_app"]]
        self.assertIn("QtShopHomeWindow::computeRecommendations(int)", [f["function"] for f in app], frames)
        qt = [f for f in frames if re.match(r"libQt6\w+\.so", f.get("module") or "")]
        self.assertTrue(qt, frames)
        self.assertFalse(any(f["in_app"] for f in qt), qt)
        self.assertIn("QAbstractButton::clicked(bool)", [f["function"] for f in qt])
        return j["fingerprint"]

    def test_same_stall_same_fingerprint_on_both_dispatchers(self):
        glib = self.stall(None)
        own = self.stall({"QT_NO_GLIB": "1"})
        self.assertEqual(glib, own)


class Exit(Base):
    def test_display_gone(self):
        self.display_gone(QT_SHOP6, 6)

    def test_quit_close_exit(self):
        for mode, code in (("quit", 3), ("close", 4), ("exit", 5)):
            with self.subTest(mode=mode):
                run = self.start(QT_SHOP6, "--auto-exit", "--exit-mode", mode, "--exit-code", str(code))
                self.assertEqual(run.finish(), code, run.text())
                self.check_measured(run)

    def test_sigterm(self):
        run = self.start(QT_SHOP5)
        self.assertTrue(run.wait_ready(), run.text())
        time.sleep(0.3)  # the merchant page's draw reaches the display
        run.proc.send_signal(signal.SIGTERM)
        self.assertEqual(run.finish(), -signal.SIGTERM, run.text())
        self.check_measured(run, 5)


class WaylandGone(Base):
    kind = "wayland"

    def test_display_gone(self):
        self.display_gone(QT_SHOP6, 6)

    def test_display_gone_qt5(self):
        self.display_gone(QT_SHOP5, 5)


if __name__ == "__main__":
    unittest.main()
