"""Programs nobody here wrote, from Debian's gtk-4-examples, under
`pacer run`, the way people end them: each runs RUN_S seconds and is ended
with SIGTERM (a session manager's way; these apps have no quit key that a
test could press reliably). Then:

- the exit status is the one the app has when ended the same way without
  pacer (killed by SIGTERM);
- the records written before and at the signal hold: one cold start, a
  complete record for every window the app showed, and for windows the app
  built but never showed (dialogs, the shortcuts window) `never_shown`,
  never a failure;
- every `frames` record satisfies the invariants (the delays and the
  dropped refresh slots fit in the span).
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
from agentlib import APP_ENV, PACER, XvfbCase, assert_frames_invariants, of_type, read_jsonl, skip_unless  # noqa: E402

RUN_S = float(os.environ.get("PACER_FOREIGN_RUN_S", "40"))
BARE_RUN_S = 3


class ForeignApps(XvfbCase):
    def end_with_sigterm(self, argv, env, cwd, run_s, err):
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + run_s
        while time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.2)
        if p.poll() is not None:
            err.seek(0)
            self.fail("%s exited early (%s): %s" % (argv, p.returncode, err.read()))
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            self.fail("%s did not end within 20 s of SIGTERM" % argv)

    def run_app(self, program):
        path = shutil.which(program)
        if not path:
            self.skipTest(program + " is not installed (package gtk-4-examples)")
        work = tempfile.mkdtemp(prefix="pacer-foreign-")
        out = os.path.join(work, "records.jsonl")
        env = dict(os.environ, DISPLAY=self.x.display, **APP_ENV)
        with open(os.path.join(work, "bare-stderr.txt"), "w+") as err:
            bare = self.end_with_sigterm([path], env, work, BARE_RUN_S, err)
        with open(os.path.join(work, "stderr.txt"), "w+") as err:
            status = self.end_with_sigterm([PACER, "run", "--out", out, "--", path], env, work, RUN_S, err)
            err.seek(0)
            stderr = err.read()
        self.assertEqual(bare, -signal.SIGTERM)
        self.assertEqual(status, bare, stderr)
        records = read_jsonl(out)

        cold = of_type(records, "startup", kind="cold")
        self.assertEqual(len(cold), 1, records)
        self.assertGreater(cold[0]["cold_ms"], 0)
        self.assertLess(cold[0]["cold_ms"], RUN_S * 1000)
        self.assertEqual(cold[0]["app"], os.path.basename(path))
        windows = of_type(records, "page", kind="window")
        shown = [w for w in windows if w["status"] != "never_shown"]
        self.assertTrue(shown, windows)
        for w in shown:
            self.assertEqual(w["status"], "complete", w)
            self.assertGreater(w["initial_draw_ms"], 0)
        for w in windows:
            if w["status"] == "never_shown":
                self.assertNotIn("initial_draw_ms", w)
        # Zero config: the main frame is the first non-splash window's.
        self.assertEqual(cold[0]["main_page"], shown[0]["page"])

        frames = of_type(records, "frames")
        self.assertTrue(frames, records)
        for f in frames:
            assert_frames_invariants(self, f)
        # the last window's frames were flushed by the signal: they reach
        # the end of the run, not only the last full interval
        last = max(f["ts"] for f in frames)
        first_window = min(w["ts"] for w in shown)
        self.assertGreater((last - first_window) / 1e9, RUN_S - 5, frames)
        return records, windows

    def test_gtk4_widget_factory(self):
        _, windows = self.run_app("gtk4-widget-factory")
        # it builds its dialogs and shortcuts window up front, shows none
        self.assertTrue([w for w in windows if w["status"] == "never_shown"], windows)

    def test_gtk4_demo(self):
        self.run_app("gtk4-demo")


if __name__ == "__main__":
    skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
    unittest.main()
