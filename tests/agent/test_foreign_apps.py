"""Programs nobody here wrote, from Debian's gtk-4-examples, under
`pacer run`: they must run normally (still running when the test closes
them) and yield a cold start and a record for their window.

They never exit by themselves; the test stops them with SIGTERM once the
records are in (the agent's writer makes records durable within about a
second, so a signal loses nothing already reported).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import APP_ENV, PACER, Xvfb, of_type, read_jsonl, skip_unless  # noqa: E402

WAIT_S = 45


class ForeignApps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.x = Xvfb().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.x.__exit__(None, None, None)

    def run_app(self, program):
        path = shutil.which(program)
        if not path:
            self.skipTest(program + " is not installed (package gtk-4-examples)")
        work = tempfile.mkdtemp(prefix="pacer-foreign-")
        out = os.path.join(work, "records.jsonl")
        env = dict(os.environ, DISPLAY=self.x.display, **APP_ENV)
        err = open(os.path.join(work, "stderr.txt"), "w+")
        p = subprocess.Popen([PACER, "run", "--out", out, "--", path], env=env, cwd=work,
                             stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + WAIT_S
            records = []
            while time.monotonic() < deadline:
                records = read_jsonl(out)
                if of_type(records, "startup", kind="cold") and of_type(records, "page", kind="window"):
                    break
                if p.poll() is not None:
                    break
                time.sleep(0.2)
            if p.poll() is not None:
                err.seek(0)
                self.fail("%s exited early (%s): %s" % (program, p.returncode, err.read()))
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            err.close()
        cold = of_type(records, "startup", kind="cold")
        self.assertEqual(len(cold), 1, records)
        self.assertGreater(cold[0]["cold_ms"], 0)
        self.assertLess(cold[0]["cold_ms"], WAIT_S * 1000)
        self.assertEqual(cold[0]["app"], os.path.basename(path))
        windows = of_type(records, "page", kind="window")
        self.assertTrue(windows)
        for w in windows:
            self.assertTrue(w["page"].startswith("Gtk") or w["page"], w)
            self.assertGreater(w["initial_draw_ms"], 0)
            self.assertEqual(w["status"], "complete")
        # Zero config: the main frame is the first non-splash window's.
        self.assertEqual(cold[0]["main_page"], windows[0]["page"])
        return records

    def test_gtk4_widget_factory(self):
        self.run_app("gtk4-widget-factory")

    def test_gtk4_demo(self):
        self.run_app("gtk4-demo")


if __name__ == "__main__":
    skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
    unittest.main()
