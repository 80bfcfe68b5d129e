"""Apps that load GTK at run time: a PyGObject app (tests/agent/
pygobject-app.py, run by Debian's /usr/bin/python3 with python3-gi and
gir1.2-gtk-4.0) loads libgtk-4 through GObject introspection after main().
Under `pacer run` it is measured like a C app: its window's page record
and the cold start, a jank of the stall it makes (its own measure the
ground truth), its frames — named after the script, not "python3". A
Python program that never loads GTK is not measured, and runs as without
pacer.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import APP_ENV, PACER, XvfbCase, assert_frames_invariants, of_type, read_jsonl, skip_unless  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, where python3-gi lives
APP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pygobject-app.py")
WINDOW = "__main__+PyAppWindow"
SLACK_MS = 250


def has_gtk4_gi():
    if not os.path.exists(PYTHON):
        return False
    probe = "import gi; gi.require_version('Gtk', '4.0'); from gi.repository import Gtk"
    return subprocess.run([PYTHON, "-c", probe], capture_output=True, env=dict(os.environ, DISPLAY="")).returncode == 0


class LateGtk(XvfbCase):
    def test_pygobject_app_is_measured(self):
        work = tempfile.mkdtemp(prefix="pacer-late-")
        out = os.path.join(work, "records.jsonl")
        env = dict(os.environ, DISPLAY=self.x.display, **APP_ENV)
        p = subprocess.run([PACER, "run", "--out", out, "--", PYTHON, APP, "--stall-ms", "900"], env=env,
                           capture_output=True, text=True, timeout=90)
        self.assertEqual(p.returncode, 0, p.stderr)
        stalled = float(re.search(r"stalled ms=([0-9.]+)", p.stdout).group(1))
        records = read_jsonl(out)
        self.assertTrue(records, p.stderr)
        for r in records:
            self.assertEqual(r["app"], "pygobject-app", r)

        pages = of_type(records, "page", page=WINDOW)
        self.assertEqual(len(pages), 1, records)
        self.assertEqual(pages[0]["status"], "complete")
        self.assertGreater(pages[0]["initial_draw_ms"], 0)

        cold = of_type(records, "startup", kind="cold")
        self.assertEqual(len(cold), 1, records)
        self.assertEqual(cold[0]["main_page"], WINDOW)
        ph = cold[0]["phases"]
        # main() ran before GTK was loaded; the agent came up after it
        self.assertLess(ph["launch"], ph["main"])
        self.assertLess(ph["main"], ph["agent_init"])
        self.assertLessEqual(ph["agent_init"], ph["app_created"])
        self.assertLess(ph["app_created"], ph["main_frame"])

        janks = of_type(records, "jank")
        self.assertEqual(len(janks), 1, records)
        self.assertGreaterEqual(janks[0]["duration_ms"], stalled)
        self.assertLessEqual(janks[0]["duration_ms"], stalled + SLACK_MS)
        self.assertEqual(janks[0]["stack_status"], "captured")
        self.assertEqual(janks[0]["page"], WINDOW)
        modules = [f["module"] for f in janks[0]["stack"]]
        self.assertTrue(any(m and m.startswith("libpython3") or m == "python3.11" for m in modules), modules)

        frames = of_type(records, "frames", window=WINDOW)
        self.assertTrue(frames, records)
        for f in frames:
            assert_frames_invariants(self, f)

    def test_python_without_gtk_is_left_alone(self):
        work = tempfile.mkdtemp(prefix="pacer-late-")
        out = os.path.join(work, "records.jsonl")
        script = "import ctypes, os; ctypes.CDLL('libm.so.6'); print(os.environ.get('LD_PRELOAD') is not None)"
        env = dict(os.environ, DISPLAY=self.x.display, **APP_ENV)
        p = subprocess.run([PACER, "run", "--out", out, "--", PYTHON, "-c", script], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "True")
        self.assertFalse(os.path.exists(out) and os.path.getsize(out) > 0)


if __name__ == "__main__":
    skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
    skip_unless(has_gtk4_gi(), "/usr/bin/python3 cannot load GTK 4 (packages python3-gi, gir1.2-gtk-4.0)")
    unittest.main()
