"""Programs that show no window (load no display client library nor a
toolkit) run under `pacer run` exactly as without it: same output, same
exit status, no record file, no GTK or GLib mapped into them; `pacer run`
adds one line on stderr at the end saying the program was not measured and
why (a measured program's line says where its records
went: test_jank.py, the demo). Plus `pacer run`'s own errors, and the agent's link-time promise: it
links no toolkit (only what the pacer core itself needs), and exports its
hooks, not the core's symbols.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import PACER  # noqa: E402

NOT_GTK = ("was not measured: it loaded no display library (the agent measures programs that show windows: "
           "Wayland, X11, EGL, GLX or Vulkan clients)\n")

AGENT = os.environ["PACER_AGENT_LIB"]


class PlainPrograms(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="pacer-plain-")
        self.out = os.path.join(self.work, "records.jsonl")

    def run_pacer(self, *args, env=None, pacer_args=()):
        return subprocess.run([PACER, "run", "--out", self.out, *pacer_args, "--", *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                              env=env)

    def test_exit_status_is_the_programs(self):
        p = self.run_pacer("true")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stderr, r"^pacer: true \(pid [0-9]+\) " + NOT_GTK.replace("(", "\\(").replace(")", "\\)") + "$")
        self.assertEqual(self.run_pacer("false").returncode, 1)
        self.assertFalse(os.path.exists(self.out), "a program without a window produced records")

    def test_shell_script_unchanged(self):
        script = os.path.join(self.work, "s.sh")
        with open(script, "w") as f:
            f.write('#!/bin/sh\necho "out $1 $2"\necho err >&2\nexit 7\n')
        os.chmod(script, 0o755)
        direct = subprocess.run([script, "a", "b c"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p = self.run_pacer(script, "a", "b c")
        self.assertEqual((p.returncode, p.stdout), (direct.returncode, direct.stdout))
        # the script's stderr, then pacer's one line (once: not from each process of the script)
        self.assertTrue(p.stderr.startswith(direct.stderr), p.stderr)
        self.assertEqual(p.stderr[len(direct.stderr):].count("\n"), 1, p.stderr)
        self.assertIn(NOT_GTK, p.stderr)
        self.assertEqual(p.returncode, 7)
        self.assertFalse(os.path.exists(self.out))

    def test_agent_is_preloaded_but_maps_no_gtk(self):
        env = dict(os.environ, LD_PRELOAD="libm.so.6")
        p = self.run_pacer("sh", "-c", 'echo "$LD_PRELOAD"; cat /proc/$$/maps', env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        first, maps = p.stdout.split("\n", 1)
        self.assertEqual(first, os.path.realpath(AGENT) + " libm.so.6", "agent prepended, old value kept")
        self.assertIn("libpacer-agent.so", maps)
        for lib in ("libgtk-4", "libglib-2.0", "libgobject-2.0", "libgio-2.0", "libsoup-3.0"):
            self.assertNotIn(lib, maps)

    def test_launch_env(self):
        p = self.run_pacer("sh", "-c", 'echo "$PACER_LAUNCH_NS|$PACER_OUT|$PACER_APP"',
                           pacer_args=("--app", "demo"))
        launch, out, app = p.stdout.strip().split("|")
        self.assertGreater(int(launch), 0)
        self.assertEqual(out, self.out)
        self.assertEqual(app, "demo")

    def test_errors(self):
        p = self.run_pacer("/nonexistent/program")
        self.assertEqual(p.returncode, 127)
        self.assertIn("/nonexistent/program", p.stderr)
        bad = os.path.join(self.work, "bad.xml")
        with open(bad, "w") as f:
            f.write("<pacer>\n  <page id=\"A\">\n</pacer>\n")
        p = self.run_pacer("true", pacer_args=("--config", bad))
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad.xml", p.stderr)
        p = subprocess.run([PACER, "run"], stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 2)
        env = dict(os.environ, PACER_AGENT_LIB=os.path.join(self.work, "missing.so"))
        p = self.run_pacer("true", env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("PACER_AGENT_LIB", p.stderr)

    def test_unwritable_out_is_found_before_the_program_starts(self):
        marker = os.path.join(self.work, "started")
        for out in (os.path.join(self.work, "no", "such", "dir", "r.jsonl"), self.work):
            p = subprocess.run([PACER, "run", "--out", out, "--", "sh", "-c", "touch " + marker],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--out '%s'" % out, p.stderr)
            self.assertFalse(os.path.exists(marker), "the program ran")
        # a writable place: the check leaves no file behind when nothing was written
        p = self.run_pacer("true")
        self.assertEqual(p.returncode, 0)
        self.assertFalse(os.path.exists(self.out))

    def test_static_program_is_said_to_be_unmeasurable(self):
        static = "/sbin/ldconfig"  # Debian's ldconfig is a static PIE
        if not os.path.exists(static):
            self.skipTest("no static executable here")
        p = self.run_pacer(static, "--version")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pacer run: %s is statically linked: the agent cannot be loaded into it" % static, p.stderr)

    def test_agent_links_no_toolkit(self):
        if not shutil.which("readelf"):
            self.skipTest("readelf not installed")
        dyn = subprocess.run(["readelf", "-d", AGENT], stdout=subprocess.PIPE, text=True).stdout
        needed = sorted(l.split("[", 1)[1].rstrip("]") for l in dyn.splitlines() if "(NEEDED)" in l)
        toolkit = ("libgtk", "libgdk", "libglib", "libgobject", "libgio", "libsoup")
        self.assertEqual([n for n in needed if n.startswith(toolkit)], [])
        syms = subprocess.run(["readelf", "--dyn-syms", "-W", AGENT], stdout=subprocess.PIPE, text=True).stdout
        exported = sorted(l.split()[7].split("@")[0] for l in syms.splitlines()
                          if len(l.split()) >= 8 and l.split()[6] != "UND" and l.split()[4] == "GLOBAL")
        self.assertFalse([s for s in exported if s.startswith("pacer_")], "core symbols leak: %s" % exported)


if __name__ == "__main__":
    unittest.main()
