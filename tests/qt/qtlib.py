"""Shared harness of the Qt suite: the demo Qt apps (examples/qt) and kcalc,
run without pacer on a private Xvfb or a private headless weston, against
the demo API server. Xvfb, weston and the API server are the agent tests'
own (tests/agent/agentlib.py).

Paths come from the environment set in tests/qt/meson.build: QT_SHOP6,
QT_SHOP5 (empty when meson found no such Qt), QML_RUNTIME, QML_SHOP,
PYQT_SHOP, KCALC, XCLOSE. A missing one skips the test that needs it on a
developer's machine and fails it in CI (agentlib.require_in_test).

What shows that a window reached the display, from outside the app:
  X11      xdotool finds the window mapped (--onlyvisible) while the app runs;
  Wayland  the client's own protocol log (WAYLAND_DEBUG=client): an
           xdg_toplevel with that title whose wl_surface had a buffer
           attached and committed — what the compositor was sent.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
from agentlib import ApiServer, Weston, Xvfb, require_in_test  # noqa: E402,F401

QT_SHOP6 = os.environ.get("QT_SHOP6", "")
QT_SHOP5 = os.environ.get("QT_SHOP5", "")
QML_RUNTIME = os.environ.get("QML_RUNTIME", "")
QML_SHOP = os.environ.get("QML_SHOP", "")
PYQT_SHOP = os.environ.get("PYQT_SHOP", "")
KCALC = os.environ.get("KCALC", "") or shutil.which("kcalc") or ""
XCLOSE = os.environ.get("XCLOSE", "")
# Qt 6's easing curve editor (qt6-declarative-dev-tools): a Qt Widgets
# window beside a QQuickView, a Qt Quick window that is a QWindow only.
QMLEASING = "/usr/lib/qt6/bin/qmleasing"

# Distinct delays: a request counted under the wrong path fails its bound.
DELAYS = {"/api/config": 200, "/api/list": 300, "/api/test1": 400}
US = 1000  # microseconds per millisecond


def need(path, what):
    require_in_test(bool(path) and os.path.exists(path), "%s is not available (%r)" % (what, path))


def default_dispositions():
    """The app starts with SIGTERM and SIGINT at their default, whatever the
    test was started under."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class Display:
    """Either display, with what a Qt app needs to use it (and nothing of
    the other: a Qt app falls back to no other platform)."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        self.runtime = tempfile.mkdtemp(prefix="pacer-qt-test-")  # XDG_RUNTIME_DIR: 0700
        if self.kind == "x11":
            self.server = Xvfb().__enter__()
            self.env = {"DISPLAY": self.server.display, "QT_QPA_PLATFORM": "xcb",
                        "XDG_RUNTIME_DIR": self.runtime}
        else:
            self.server = Weston().__enter__()
            self.env = dict(self.server.env, QT_QPA_PLATFORM="wayland", WAYLAND_DEBUG="client")
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)
        shutil.rmtree(self.runtime, ignore_errors=True)

    def app_env(self, extra=None):
        env = dict(os.environ)
        for k in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "QT_NO_GLIB", "WAYLAND_DEBUG",
                  "SHOP_STARTUP_DELAY_MS", "GDK_BACKEND"):
            env.pop(k, None)
        if self.kind != "x11":
            # Qt 6.4's Wayland client destroys an event queue after its
            # display at exit (QWaylandDisplay's destructor): with the freed
            # memory filled by meson's MALLOC_PERTURB_ (a random byte per
            # test), the queue's lock can read as held and the app hangs,
            # pacer or not.
            env.pop("MALLOC_PERTURB_", None)
        env.update(self.env)
        env.update(extra or {})
        return env

    def x11_windows(self, *search):
        """Window ids xdotool finds mapped with SEARCH (e.g. --name RE)."""
        p = subprocess.run(["xdotool", "search", "--onlyvisible"] + list(search), env=self.app_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=20)
        return p.stdout.split()


class App:
    """One run of a Qt app. Its stderr (with Wayland, also the protocol log,
    unless protocol_log is False) is read line by line as it comes; lines of
    the app's own clock are kept."""

    def __init__(self, display, cmd, extra_env=None, protocol_log=True):
        self.display = display
        env = display.app_env(extra_env)
        if not protocol_log:
            env.pop("WAYLAND_DEBUG", None)
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     errors="replace", preexec_fn=default_dispositions)
        self.lines = []

    def read_until(self, pattern, timeout=60):
        """Reads stderr until a line matching PATTERN; returns its match, or
        None at the end of the output."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            m = rx.search(line)
            if m:
                return m
            if time.monotonic() > deadline:
                break
        return None

    def finish(self, timeout=60):
        """Reads the rest of stderr and waits; returns the exit status."""
        _, rest = self.proc.communicate(timeout=timeout)
        self.lines += rest.splitlines()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def text(self):
        """Everything but the Wayland protocol log, for failure messages."""
        return "\n".join(ln for ln in self.lines if not ln.startswith("[")) or "(no output)"


def clock_log(lines, name):
    """The app's own stamps (--log-requests): {"request": {path: [(start,
    end)]}, "app"/"home"/"window"/"ready": [T], "stall": [(start, end)],
    "dispatcher": class name}. QML's console prefixes its lines with "qml: "."""
    out = {"request": {}, "stall": []}
    for ln in lines:
        m = re.match(r"^(?:qml: )?%s: (\w+)((?: \S+)*)$" % re.escape(name), ln)
        if not m:
            continue
        what, args = m.group(1), m.group(2).split()
        if what == "request" and len(args) == 3 and args[1].isdigit():
            out["request"].setdefault(args[0], []).append((int(args[1]), int(args[2])))
        elif what == "stall":
            out["stall"].append((int(args[0]), int(args[1])))
        elif what == "app":
            out["app"] = [int(args[0])]
            out["dispatcher"] = args[1]
        elif what in ("home", "window", "ready"):
            out.setdefault(what, []).append(int(args[0]))
    return out


def wayland_shown(lines):
    """Titles of the xdg_toplevels whose wl_surface was sent a buffer
    (attach, then commit) after the title was set: from WAYLAND_DEBUG's log
    of what the client sent. Object ids are reused once destroyed, so each
    is followed from its creation."""
    xdg_to_surface, toplevel_to_surface, title_of = {}, {}, {}
    attached, shown = set(), set()
    for ln in lines:
        m = re.search(r"-> xdg_wm_base@\d+\.get_xdg_surface\(new id xdg_surface@(\d+), wl_surface@(\d+)\)", ln)
        if m:
            xdg_to_surface[m.group(1)] = m.group(2)
            continue
        m = re.search(r"-> xdg_surface@(\d+)\.get_toplevel\(new id xdg_toplevel@(\d+)\)", ln)
        if m:
            toplevel_to_surface[m.group(2)] = xdg_to_surface.get(m.group(1))
            continue
        m = re.search(r'-> xdg_toplevel@(\d+)\.set_title\("(.*)"\)', ln)
        if m:
            surface = toplevel_to_surface.get(m.group(1))
            title_of[surface] = m.group(2)
            attached.discard(surface)
            continue
        m = re.search(r"-> wl_surface@(\d+)\.attach\(wl_buffer@\d+", ln)
        if m and m.group(1) in title_of:
            attached.add(m.group(1))
            continue
        m = re.search(r"-> wl_surface@(\d+)\.commit\(\)", ln)
        if m and m.group(1) in attached:
            shown.add(title_of[m.group(1)])
    return shown


class DisplayCase(unittest.TestCase):
    """Tests sharing one display of the class's `kind` ("x11" or
    "wayland") and the demo API server with DELAYS, for the whole class."""
    kind = None

    @classmethod
    def setUpClass(cls):
        cls.display = Display(cls.kind).__enter__()
        cls.server = ApiServer(DELAYS).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        cls.display.__exit__(None, None, None)
