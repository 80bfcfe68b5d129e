"""A launch that only hands off: jank-app --unique is a unique GApplication.
With one instance running on a private session bus, a second launch under
`pacer run` passes its activation to the first (which says "activated"
again: the ground truth that the handoff happened) and exits. Its records:
one `startup` record of kind `handoff`, no cold start, no page.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import APP_ENV, PACER, Xvfb, of_type, read_jsonl, skip_unless  # noqa: E402

JANK_APP = os.environ["JANK_APP"]


class Handoff(unittest.TestCase):
    def setUp(self):
        self.x = Xvfb().__enter__()
        self.bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        address = self.bus.stdout.readline().strip()
        self.assertTrue(address)
        self.env = dict(os.environ, DISPLAY=self.x.display, DBUS_SESSION_BUS_ADDRESS=address, **APP_ENV)
        self.primary = subprocess.Popen([JANK_APP, "--unique", "--idle-ms", "20000"], env=self.env,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.assertEqual(self.primary.stdout.readline().strip(), "activated")

    def tearDown(self):
        for p in (self.primary, self.bus):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.x.__exit__(None, None, None)

    def test_second_launch_is_a_handoff_not_a_cold_start(self):
        out = os.path.join(tempfile.mkdtemp(prefix="pacer-handoff-"), "records.jsonl")
        t0 = time.monotonic()
        p = subprocess.run([PACER, "run", "--out", out, "--", JANK_APP, "--unique"], env=self.env,
                           capture_output=True, text=True, timeout=60)
        wall_ms = (time.monotonic() - t0) * 1000
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.primary.stdout.readline().strip(), "activated")  # it got the activation
        records = read_jsonl(out)
        starts = of_type(records, "startup")
        self.assertEqual(len(starts), 1, records)
        self.assertEqual(starts[0]["kind"], "handoff")
        self.assertGreater(starts[0]["handoff_ms"], 0)
        self.assertLess(starts[0]["handoff_ms"], wall_ms)
        self.assertNotIn("cold_ms", starts[0])
        self.assertIn("handoff", starts[0]["phases"])
        self.assertEqual(of_type(records, "page"), [])


if __name__ == "__main__":
    skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
    skip_unless(shutil.which("dbus-daemon"), "dbus-daemon is not installed")
    unittest.main()
