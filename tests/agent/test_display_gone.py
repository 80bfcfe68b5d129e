#!/usr/bin/env python3
"""The display goes away under a running GTK 4 app: the X server ends (a
logout: SIGTERM to a private Xvfb) or the Wayland compositor crashes
(SIGKILL to a private headless weston). GDK then ends the app itself, from
its display-error path, with _exit(1) on GTK 4.8 — no atexit handler runs.

Under `pacer run`:
- the app ends with the exit status it has when its display goes away the
  same way without pacer;
- what was measured is written: the cold start, the window's page record
  (`complete`), its `frames` record (final, with the frames counted while
  the window animated), the pages still loading when the display went
  (`incomplete`, their request not ended), the windows built and never
  shown (`never_shown`), and the run summary on stderr.

Two apps on each backend: pages-app (ours: a spinner, and pages of its own
type whose requests go to a socket that never answers) and
gtk4-widget-factory (Debian's gtk-4-examples: a spinner on its first stack
page, which the config makes a page waiting for a request that never
starts)."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from agentlib import (APP_ENV, PACER, Weston, Xvfb, assert_frames_invariants, of_type, read_jsonl,
                      skip_unless)

PAGES_APP = os.environ["PAGES_APP"]
LATE_PAGES = 2
READY_TIMEOUT_S = 60
ANIMATE_S = 1.5  # after every page drew: the spinner keeps painting
BARE_RUN_S = 3


def read_jsonl_partial(path):
    """The complete lines of a file another process is still writing."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]


def drawn_classes(raw_path):
    """Class name → number of pages of that class that drew, from the raw
    events written so far."""
    classes, drawn = {}, set()
    for ev in read_jsonl_partial(raw_path):
        if ev.get("ev") == "page_create":
            classes[ev.get("page")] = ev.get("class")
        elif ev.get("ev") == "page_draw":
            drawn.add(ev.get("page"))
    counts = {}
    for page in drawn:
        name = classes.get(page)
        counts[name] = counts.get(name, 0) + 1
    return counts


class Backend:
    """A display that can be taken away: .env for the app, .gone() ends it."""

    def __init__(self, kind):
        self.kind = kind

    def __enter__(self):
        if self.kind == "x11":
            self.server = Xvfb().__enter__()
            self.env = {"DISPLAY": self.server.display, "GDK_BACKEND": "x11"}
        else:
            self.server = Weston().__enter__()
            self.env = dict(self.server.env)
        return self

    def gone(self):
        if self.kind == "x11":
            self.server.proc.terminate()  # a logout
        else:
            self.server.proc.kill()  # a crashed compositor
        self.server.proc.wait(30)

    def __exit__(self, *exc):
        self.server.__exit__(*exc)


class DisplayGone(unittest.TestCase):
    def app_env(self, backend):
        env = dict(os.environ, **APP_ENV)
        for name in ("DISPLAY", "WAYLAND_DISPLAY", "GDK_BACKEND"):
            env.pop(name, None)
        env.update(backend.env)
        return env

    def run_until_gone(self, kind, argv, under_pacer, work, config, ready):
        """Runs argv on a display of `kind` until ready(raw_events_path)
        says the app is drawn (under pacer) or BARE_RUN_S passed (without),
        then takes the display away. Returns (exit status, stderr)."""
        out = os.path.join(work, "records.jsonl")
        raw = os.path.join(work, "events.jsonl")
        cmd = ([PACER, "run", "--out", out, "--raw-events", raw, "--config", config, "--"] if under_pacer
               else []) + argv
        err_path = os.path.join(work, "stderr-%s.txt" % ("pacer" if under_pacer else "bare"))
        with Backend(kind) as backend, open(err_path, "w+") as err:
            p = subprocess.Popen(cmd, env=self.app_env(backend), cwd=work, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=err)
            try:
                if under_pacer:
                    deadline = time.monotonic() + READY_TIMEOUT_S
                    while not ready(raw):
                        if p.poll() is not None or time.monotonic() > deadline:
                            err.seek(0)
                            self.fail("%s was not drawn (exit %s): %s" % (argv, p.poll(), err.read()))
                        time.sleep(0.1)
                    time.sleep(ANIMATE_S)
                else:
                    time.sleep(BARE_RUN_S)
                self.assertIsNone(p.poll(), "%s ended before its display went away" % argv)
                backend.gone()
                status = p.wait(60)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            err.seek(0)
            return status, err.read()

    def check_records(self, records, window, stderr, program):
        cold = of_type(records, "startup", kind="cold")
        self.assertEqual(len(cold), 1, records)
        self.assertEqual(cold[0]["main_page"], window)
        pages = of_type(records, "page", page=window, kind="window")
        self.assertEqual([p["status"] for p in pages], ["complete"], records)

        frames = of_type(records, "frames", window=window)
        self.assertTrue(frames, records)
        self.assertTrue(frames[-1]["final"], frames)
        for f in frames:
            assert_frames_invariants(self, f)
        # the spinner painted for ANIMATE_S at least before the display went
        self.assertGreater(sum(f["frames"] for f in frames), 10, frames)
        self.assertGreaterEqual(sum(f["span_ms"] for f in frames), ANIMATE_S * 1000, frames)

        self.assertIn("pacer: %s (pid " % program, stderr)
        self.assertIn("%d records written to" % len(records), stderr)

    def own_app(self, kind):
        with tempfile.TemporaryDirectory() as work, socket.socket() as silent:
            # accepts connections (the kernel's backlog) and never answers:
            # the pages' requests are still running when the display goes
            silent.bind(("127.0.0.1", 0))
            silent.listen(8)
            url = "http://127.0.0.1:%d/api/test1" % silent.getsockname()[1]
            config = os.path.join(work, "pages.xml")
            with open(config, "w") as f:
                f.write('<pacer><page id="LatePage"><api id="/api/test1"/></page></pacer>')
            argv = [PAGES_APP, "--url", url, "--pages", str(LATE_PAGES), "--every-ms", "200"]

            def ready(raw):
                drawn = drawn_classes(raw)
                return drawn.get("GtkApplicationWindow", 0) >= 1 and drawn.get("LatePage", 0) >= LATE_PAGES

            bare, _ = self.run_until_gone(kind, argv, False, work, config, ready)
            status, stderr = self.run_until_gone(kind, argv, True, work, config, ready)
            self.assertEqual(status, bare, stderr)
            records = read_jsonl(os.path.join(work, "records.jsonl"))
        self.check_records(records, "GtkApplicationWindow", stderr, "pages-app")
        late = of_type(records, "page", page="LatePage")
        self.assertEqual(len(late), LATE_PAGES, records)
        for p in late:
            self.assertEqual(p["status"], "incomplete", p)
            self.assertGreater(p["initial_draw_ms"], 0, p)
            self.assertEqual([a["url"] for a in p["apis"]], ["/api/test1"], p)
            self.assertNotIn("ms", p["apis"][0], p)  # still waiting for its answer
        self.assertEqual(of_type(records, "net"), [])

    def widget_factory(self, kind):
        path = shutil.which("gtk4-widget-factory")
        if not path:
            self.skipTest("gtk4-widget-factory is not installed (package gtk-4-examples)")
        with tempfile.TemporaryDirectory() as work:
            config = os.path.join(work, "factory.xml")
            with open(config, "w") as f:
                f.write('<pacer><page id="page1"><api id="/api/never"/></page></pacer>')

            def ready(raw):
                drawn = drawn_classes(raw)
                return drawn.get("GtkApplicationWindow", 0) >= 1 and drawn.get("page1", 0) >= 1

            bare, _ = self.run_until_gone(kind, [path], False, work, config, ready)
            status, stderr = self.run_until_gone(kind, [path], True, work, config, ready)
            self.assertEqual(status, bare, stderr)
            records = read_jsonl(os.path.join(work, "records.jsonl"))
        self.check_records(records, "GtkApplicationWindow", stderr, "gtk4-widget-factory")
        # its first page; a stack on another, hidden page of it has a
        # page of that name too, never on screen: never_shown
        page1 = of_type(records, "page", page="page1")
        shown = [p for p in page1 if p["status"] != "never_shown"]
        self.assertEqual([p["status"] for p in shown], ["incomplete"], records)
        self.assertGreater(shown[0]["initial_draw_ms"], 0, shown)
        # its dialogs and shortcuts window, built up front and never shown
        never = of_type(records, "page", kind="window", status="never_shown")
        self.assertGreaterEqual(len(never), 2, records)

    def test_x11_own_app(self):
        self.own_app("x11")

    def test_x11_gtk4_widget_factory(self):
        self.widget_factory("x11")

    def test_wayland_own_app(self):
        self.own_app("wayland")

    def test_wayland_gtk4_widget_factory(self):
        self.widget_factory("wayland")


if __name__ == "__main__":
    skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
    unittest.main()
