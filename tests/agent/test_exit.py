#!/usr/bin/env python3
"""Ended by a signal, as many GTK apps are (a session manager's SIGTERM,
Ctrl+C, a closed terminal's SIGHUP): under `pacer run` the program sees the
dispositions it would see without pacer, dies of the same signal with the
same status, and the records it had pending — the frames of its animating
window, its pages — are written first. A program with its own handler keeps
it: the handler runs, its exit status stands, and its exit path writes the
records. The same holds for a program that ends itself without exit():
abort() (SIGABRT), g_error() (SIGTRAP) and _exit() (test_display_gone.py
has GDK's own _exit, when the display goes away)."""
import os
import resource
import signal
import subprocess
import tempfile
import time
import unittest

from agentlib import APP_ENV, PACER, XvfbCase, of_type, read_jsonl

JANK_APP = os.environ["JANK_APP"]


def default_dispositions():
    """The app starts with these signals at their default, whatever the
    test was started under (nohup ignores SIGHUP, and children inherit it),
    and dumps no core when it aborts."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGABRT, signal.SIGTRAP):
        signal.signal(sig, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class ExitSignals(XvfbCase):
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
                self.assertIn("SIGTERM=dfl SIGINT=dfl SIGHUP=dfl SIGABRT=dfl SIGTRAP=dfl", out1)
                records = read_jsonl(out)
                frames = of_type(records, "frames", window="JankAppWindow")
                self.assertTrue(frames, records)
                self.assertTrue(frames[-1]["final"])
                self.assertGreater(sum(f["frames"] for f in frames), 10)
                self.assertEqual(len(of_type(records, "page", page="JankAppWindow")), 1)
                self.assertEqual(len(of_type(records, "startup", kind="cold")), 1)

    def run_until_it_ends(self, args, under_pacer, out=None):
        p, first = self.start(args + ["--print-dispositions"], under_pacer, out)
        rest, err = p.communicate(timeout=60)
        return p.returncode, first + rest, err

    def test_ends_itself_without_exit(self):
        """abort() and g_error() kill the app with SIGABRT and SIGTRAP
        (their default action), _exit(5) skips atexit: each run under pacer
        ends the same way, with the records of the second the window
        animated (the app ends 1 s after its first frame)."""
        for how, status in (("abort", -signal.SIGABRT), ("g_error", -signal.SIGTRAP), ("_exit", 5)):
            with self.subTest(how=how), tempfile.TemporaryDirectory() as tmp:
                args = ["--animate-ms", "30000", "--end", how, "--end-ms", "1000"]
                rc0, out0, _ = self.run_until_it_ends(args, False)
                out = os.path.join(tmp, "records.jsonl")
                rc1, out1, err = self.run_until_it_ends(args, True, out)
                self.assertEqual(rc0, status)
                self.assertEqual(rc1, status, err)
                self.assertEqual(out1, out0)
                self.assertIn("SIGTERM=dfl SIGINT=dfl SIGHUP=dfl SIGABRT=dfl SIGTRAP=dfl", out1)
                records = read_jsonl(out)
                frames = of_type(records, "frames", window="JankAppWindow")
                self.assertTrue(frames, records)
                self.assertTrue(frames[-1]["final"])
                self.assertGreater(sum(f["frames"] for f in frames), 10)
                self.assertGreaterEqual(sum(f["span_ms"] for f in frames), 1000)
                self.assertEqual([p["status"] for p in of_type(records, "page", page="JankAppWindow")],
                                 ["complete"])
                self.assertEqual(len(of_type(records, "startup", kind="cold")), 1)
                self.assertIn("%d records written to" % len(records), err)

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
