"""qt-shop (examples/qt), the same source built against Qt 6 and Qt 5, without
pacer, on a private Xvfb and a private headless weston, against the demo API
server: the ground truth the Qt adapter's tests build on.

The app's own clock (--log-requests, CLOCK_MONOTONIC us) must show what the
app is meant to do: each request lasting at least its server delay (the
delays differ per path, so a request logged under the wrong path fails its
bound), /api/list sent after /api/config answered, the merchant page's
request sent from inside the home window's constructor, the home window
built --splash-ms after the application (plus SHOP_STARTUP_DELAY_MS), the
app ready no sooner than --lazy-ms after the home window, the stall lasting
--stall-ms after ready. The window is seen from outside (qtlib). Each way
of ending gives the status asked for. No bound is put on how long anything
may take.
"""
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from qtlib import (DELAYS, QT_SHOP5, QT_SHOP6, US, XCLOSE, App, DisplayCase, clock_log,  # noqa: E402
                   need, wayland_shown)

SPLASH_MS = 400
LAZY_MS = 1500
QUICK = ["--splash-ms", "0", "--lazy-ms", "100", "--linger-ms", "100"]


def title(binary):
    return "pacer shop (Qt %s)" % ("6" if binary == QT_SHOP6 else "5")


def title_re(binary):
    """The window's whole title as xdotool's (POSIX extended) regex."""
    return "^" + title(binary).replace("(", r"\(").replace(")", r"\)") + "$"


class Base(DisplayCase):
    pass

    def start(self, binary, *args, env=None):
        app = App(self.display, [binary, "--api", self.server.base, "--log-requests"] + list(args), env)
        self.addCleanup(app.kill)
        return app

    def full_run(self, binary, env=None):
        """The whole demo with the GTK demo's timings; returns (the app's
        clock, whether the window was seen from outside)."""
        need(binary, "qt-shop")
        app = self.start(binary, "--splash-ms", str(SPLASH_MS), "--lazy-ms", str(LAZY_MS),
                         "--linger-ms", "300", "--auto-exit", env=env)
        ready = app.read_until(r"^qt-shop: ready ")
        self.assertIsNotNone(ready, app.text())
        seen_x11 = self.kind == "x11" and bool(self.display.x11_windows("--name", title_re(binary)))
        self.assertEqual(app.finish(), 0, app.text())
        seen = seen_x11 if self.kind == "x11" else title(binary) in wayland_shown(app.lines)
        self.assertTrue(seen, "the home window was not seen on the display")
        log = clock_log(app.lines, "qt-shop")
        self.check_clock(log, app.text())
        return log

    def check_clock(self, log, out):
        req = log["request"]
        self.assertEqual(sorted(req), sorted(DELAYS), out)
        for path, delay in DELAYS.items():
            self.assertEqual(len(req[path]), 1, (path, out))
            start, end = req[path][0]
            self.assertGreaterEqual(end - start, (delay - 1) * US, "%s took less than its delay\n%s" % (path, out))
        (app_t,), (home,), (ready,) = log["app"], log["home"], log["ready"]
        config, lst, test1 = req["/api/config"][0], req["/api/list"][0], req["/api/test1"][0]
        self.assertGreaterEqual(home - app_t, SPLASH_MS * US, "the home window came before the splash ended")
        self.assertGreaterEqual(lst[0], config[1], "/api/list was sent before /api/config answered")
        # Both requests start inside the home window's constructor: the
        # merchant page's first (it is built before the config is asked for).
        self.assertLessEqual(home, test1[0])
        self.assertLessEqual(test1[0], config[0])
        # Ready only once the merchant page was made current (--lazy-ms
        # after the home window), and the page's data came before.
        self.assertGreaterEqual(ready - home, LAZY_MS * US)
        self.assertLessEqual(test1[1], ready)
        self.assertGreaterEqual(ready, lst[1])


class X11(Base):
    kind = "x11"

    def test_qt6_demo(self):
        log = self.full_run(QT_SHOP6)
        self.assertEqual(log["dispatcher"], "QXcbGlibEventDispatcher")  # Debian's Qt: GLib's loop

    def test_qt5_demo(self):
        log = self.full_run(QT_SHOP5)
        self.assertEqual(log["dispatcher"], "QXcbGlibEventDispatcher")

    def test_qt_own_dispatcher_and_stall(self):
        """QT_NO_GLIB=1: Qt's own event dispatcher; the app quits with the
        code asked for after blocking its loop --stall-ms once ready."""
        for binary in (QT_SHOP6, QT_SHOP5):
            with self.subTest(binary=os.path.basename(binary)):
                need(binary, "qt-shop")
                app = self.start(binary, *QUICK, "--auto-exit", "--exit-mode", "quit", "--exit-code", "3",
                                 "--stall-ms", "1200", env={"QT_NO_GLIB": "1"})
                self.assertEqual(app.finish(), 3, app.text())
                log = clock_log(app.lines, "qt-shop")
                self.assertEqual(log["dispatcher"], "QXcbUnixEventDispatcher")
                (stall_start, stall_end), = log["stall"]
                self.assertGreaterEqual(stall_start, log["ready"][0])
                self.assertGreaterEqual(stall_end - stall_start, 1200 * US)

    def test_exit_modes(self):
        need(QT_SHOP6, "qt-shop6")
        for mode, code in (("close", 4), ("exit", 5)):
            with self.subTest(mode=mode):
                app = self.start(QT_SHOP6, *QUICK, "--auto-exit", "--exit-mode", mode, "--exit-code", str(code))
                self.assertEqual(app.finish(), code, app.text())
                self.assertIn("ready", clock_log(app.lines, "qt-shop"))

    def test_startup_delay(self):
        need(QT_SHOP5, "qt-shop5")
        app = self.start(QT_SHOP5, *QUICK, "--auto-exit", env={"SHOP_STARTUP_DELAY_MS": "500"})
        self.assertEqual(app.finish(), 0, app.text())
        log = clock_log(app.lines, "qt-shop")
        self.assertGreaterEqual(log["home"][0] - log["app"][0], 500 * US)

    def test_closed_from_outside_and_sigterm(self):
        """A window manager's close (WM_DELETE_WINDOW) ends the app with its
        --exit-code; SIGTERM kills it (Qt installs no handler for it)."""
        need(QT_SHOP6, "qt-shop6")
        need(XCLOSE, "xclose")
        app = self.start(QT_SHOP6, *QUICK, "--exit-code", "6")
        self.assertIsNotNone(app.read_until(r"^qt-shop: ready "), app.text())
        windows = self.display.x11_windows("--name", title_re(QT_SHOP6))
        self.assertEqual(len(windows), 1, windows)
        subprocess.run([XCLOSE] + windows, env=self.display.app_env(), check=True, timeout=20)
        self.assertEqual(app.finish(), 6, app.text())

        app = self.start(QT_SHOP6, *QUICK)
        self.assertIsNotNone(app.read_until(r"^qt-shop: ready "), app.text())
        app.proc.send_signal(signal.SIGTERM)
        self.assertEqual(app.finish(), -signal.SIGTERM, app.text())

    def test_bad_option(self):
        need(QT_SHOP6, "qt-shop6")
        p = subprocess.run([QT_SHOP6, "--exit-mode", "sideways"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=20, env={"PATH": os.environ["PATH"]})
        self.assertEqual(p.returncode, 2)
        self.assertIn("--exit-mode takes quit, close or exit", p.stderr)


class Wayland(Base):
    kind = "wayland"

    def test_qt6_demo(self):
        log = self.full_run(QT_SHOP6)
        self.assertEqual(log["dispatcher"], "QPAEventDispatcherGlib")

    def test_qt5_demo_own_dispatcher(self):
        log = self.full_run(QT_SHOP5, env={"QT_NO_GLIB": "1"})
        self.assertEqual(log["dispatcher"], "QUnixEventDispatcherQPA")


if __name__ == "__main__":
    unittest.main()
