"""The QML shop run by Qt 6's qml runtime, and the PyQt6 shop run by Debian's
Python, without pacer, on a private Xvfb and a private headless weston,
against the demo API server (see test_qt_shop.py for what is held against
what). The QML app stamps with Date.now() (CLOCK_REALTIME, milliseconds:
QML has no monotonic clock), so its bounds allow the 1 ms rounding.
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from qtlib import (DELAYS, PYQT_SHOP, QML_RUNTIME, QML_SHOP, US, App, DisplayCase,  # noqa: E402
                   clock_log, need, require_in_test, wayland_shown)

LAZY_MS = 1500
QML_TITLE = "pacer shop (QML)"
PYQT_TITLE = "pacer shop (PyQt6)"


def pyqt6_importable():
    p = subprocess.run(["/usr/bin/python3", "-c", "import PyQt6.QtNetwork, PyQt6.QtWidgets"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.returncode == 0


class Base(DisplayCase):
    pass

    def run_app(self, cmd, name, title, exit_code):
        """Runs to its --auto-exit; checks the window was seen from outside
        and the exit status; returns the app's clock."""
        app = App(self.display, cmd)
        self.addCleanup(app.kill)
        self.assertIsNotNone(app.read_until(r"%s: ready " % name), app.text())
        seen_x11 = self.kind == "x11" and bool(self.display.x11_windows(
            "--name", "^" + title.replace("(", r"\(").replace(")", r"\)") + "$"))
        self.assertEqual(app.finish(), exit_code, app.text())
        seen = seen_x11 if self.kind == "x11" else title in wayland_shown(app.lines)
        self.assertTrue(seen, "%s was not seen on the display" % title)
        return clock_log(app.lines, name), app.text()

    def qml(self, *args, exit_code=0):
        need(QML_RUNTIME, "Qt 6's qml runtime")
        cmd = [QML_RUNTIME, QML_SHOP, "--", "--api", self.server.base, "--lazy-ms", str(LAZY_MS),
               "--linger-ms", "300", "--auto-exit", "--log-requests"] + list(args)
        log, out = self.run_app(cmd, "qml-shop", QML_TITLE, exit_code)
        req = log["request"]
        self.assertEqual(sorted(req), sorted(DELAYS), out)
        for path, delay in DELAYS.items():
            self.assertEqual(len(req[path]), 1, (path, out))
            start, end = req[path][0]
            self.assertGreaterEqual(end - start, delay - 1, "%s took less than its delay\n%s" % (path, out))
        (window,), (ready,) = log["window"], log["ready"]
        config, lst, test1 = req["/api/config"][0], req["/api/list"][0], req["/api/test1"][0]
        self.assertGreaterEqual(lst[0], config[1], "/api/list was sent before /api/config answered")
        # The second page is pushed --lazy-ms after the window was built,
        # and loads its data only then.
        self.assertGreaterEqual(test1[0] - window, LAZY_MS - 1)
        self.assertGreaterEqual(ready, max(lst[1], test1[1]))

    def pyqt(self):
        need(PYQT_SHOP, "pyqt-shop.py")
        require_in_test(pyqt6_importable(), "Debian's python3 cannot import PyQt6")
        cmd = [PYQT_SHOP, "--api", self.server.base, "--lazy-ms", str(LAZY_MS), "--linger-ms", "300",
               "--auto-exit", "--exit-code", "5", "--log-requests"]
        log, out = self.run_app(cmd, "pyqt-shop", PYQT_TITLE, 5)
        req = log["request"]
        self.assertEqual(sorted(req), ["/api/config", "/api/test1"], out)
        for path in req:
            self.assertEqual(len(req[path]), 1, (path, out))
            start, end = req[path][0]
            self.assertGreaterEqual(end - start, (DELAYS[path] - 1) * US, "%s\n%s" % (path, out))
        (home,), (ready,) = log["home"], log["ready"]
        config, test1 = req["/api/config"][0], req["/api/test1"][0]
        # The merchant page is built, and sends its request, inside the main
        # window's constructor, before the window's own request; it is made
        # current --lazy-ms after the window was created.
        self.assertLessEqual(home, test1[0])
        self.assertLessEqual(test1[0], config[0])
        self.assertGreaterEqual(ready - home, LAZY_MS * US)
        self.assertGreaterEqual(ready, max(config[1], test1[1]))


class X11(Base):
    kind = "x11"

    def test_qml(self):
        self.qml("--exit-code", "3", exit_code=3)

    def test_pyqt(self):
        self.pyqt()


class Wayland(Base):
    kind = "wayland"

    def test_qml_closed(self):
        # Its window closed: the qml runtime's event loop ends with 0.
        self.qml("--exit-mode", "close", "--exit-code", "3", exit_code=0)

    def test_pyqt(self):
        self.pyqt()


if __name__ == "__main__":
    unittest.main()
