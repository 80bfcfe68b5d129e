"""kcalc, a Qt 5 / KDE Frameworks app nobody here wrote, without pacer: on a
private Xvfb and on a private headless weston it starts, its window reaches
the display (seen from outside, qtlib), and SIGTERM ends it (it dies of the
signal: neither Qt nor KDE installs a handler for it)."""
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from qtlib import KCALC, App, Display, need, wayland_shown  # noqa: E402

WAIT_S = 60  # for the window to show: a bound on a failure's wait, not a figure


class Base(unittest.TestCase):
    kind = None

    def test_kcalc_shows_and_ends_on_sigterm(self):
        need(KCALC, "kcalc")
        with Display(self.kind) as display:
            app = App(display, [KCALC])
            self.addCleanup(app.kill)
            if self.kind == "x11":
                deadline = time.monotonic() + WAIT_S
                while not display.x11_windows("--class", "^kcalc$") and time.monotonic() < deadline:
                    self.assertIsNone(app.proc.poll(), "kcalc ended before it showed a window")
                    time.sleep(0.1)
                self.assertTrue(display.x11_windows("--class", "^kcalc$"), "no kcalc window mapped")
            else:
                # Reads the protocol log as it comes until the window's first
                # buffer is committed.
                while "KCalc" not in wayland_shown(app.lines):
                    self.assertIsNotNone(app.read_until(r"wl_surface@\d+\.commit\(\)", timeout=WAIT_S),
                                         "kcalc ended before its window was shown:\n" + app.text())
            app.proc.send_signal(signal.SIGTERM)
            self.assertEqual(app.finish(), -signal.SIGTERM, app.text())


class X11(Base):
    kind = "x11"


class Wayland(Base):
    kind = "wayland"


del Base

if __name__ == "__main__":
    unittest.main()
