#!/usr/bin/env python3
"""Ended by a signal, as many GTK apps are (a session manager's SIGTERM,
Ctrl+C, a closed terminal's SIGHUP): under `pacer run` the program sees the
dispositions it would see without pacer, dies of the same signal with the
same status, and the records it had pending — the frames of its animating
window, its pages — are written first. A program with its own handler keeps
it: the handler runs, its exit status stands, and its exit path writes the
records."""
import os
import signal
import subprocess
import tempfile
import time
import unittest

from agentlib import APP_ENV, PACER, Xvfb, of_type, read_jsonl

JANK_APP = os.environ["JANK_APP"]


def default_dispositions():
    """The app starts with these signals at their default, whatever the
    test was started under (nohup ignores SIGHUP, and children inherit it)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class ExitSignals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.x = Xvfb().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.x.__exit__(None, None, None)

    def start(self, args, under_pacer, out=None):
        env = dict(os.environ, DISPLAY=self.x.display, **APP_ENV)
        env.pop("WAYLAND_DISPLAY", None)
        cmd = ([PACER, "run", "--out", out, "--"] if under_pacer else []) + [JANK_APP] + args
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=default_dispositions)
        first = p.stdout.readline()  # the dispositions line: the app is up
        return p, first

    def run_and_signal(self, sig, args, under_pacer, out=None):
        p, first = self.start(args + ["--print-dispositions", "--say-drawn"], under_pacer, out)
        drawn = p.stdout.readline()  # the first frame is on screen
        self.assertEqual(drawn, "drawn\n")
        first += drawn
        time.sleep(1.0)  # it animates
        p.send_signal(sig)
        rest, err = p.communicate(timeout=60)
        return p.returncode, first + rest, err

    def test_default_disposition_signals(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(sig=sig.name), tempfile.TemporaryDirectory() as tmp:
                args = ["--animate-ms", "30000"]
                rc0, out0, _ = self.run_and_signal(sig, args, False)
                out = os.path.join(tmp, "records.jsonl")
                rc1, out1, err = self.run_and_signal(sig, args, True, out)
                self.assertEqual(rc0, -sig)
                self.assertEqual(rc1, -sig, err)      # killed by the same signal
                self.assertEqual(out1, out0)           # the same dispositions seen
                self.assertIn("SIGTERM=dfl SIGINT=dfl SIGHUP=dfl", out1)
                records = read_jsonl(out)
                frames = of_type(records, "frames", window="JankAppWindow")
                self.assertTrue(frames, records)
                self.assertTrue(frames[-1]["final"])
                self.assertGreater(sum(f["frames"] for f in frames), 10)
                self.assertEqual(len(of_type(records, "page", page="JankAppWindow")), 1)
                self.assertEqual(len(of_type(records, "startup", kind="cold")), 1)

    def test_own_handler_keeps_its_exit(self):
        with tempfile.TemporaryDirectory() as tmp:
            args = ["--animate-ms", "30000", "--handle-term"]
            rc0, out0, _ = self.run_and_signal(signal.SIGTERM, args, False)
            out = os.path.join(tmp, "records.jsonl")
            rc1, out1, err = self.run_and_signal(signal.SIGTERM, args, True, out)
            self.assertEqual((rc0, rc1), (3, 3), err)
            self.assertIn("handled SIGTERM", out1)
            self.assertEqual(out1, out0)
            self.assertIn("SIGTERM=other", out1)
            frames = of_type(read_jsonl(out), "frames", window="JankAppWindow")
            self.assertTrue(frames and frames[-1]["final"])


if __name__ == "__main__":
    unittest.main()
