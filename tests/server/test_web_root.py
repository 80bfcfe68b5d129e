"""Where pacerd finds the dashboard without --web-root: the pacerd of a
build tree serves that build's web/ (the README's Server section, run as
written); a copy of the same binary elsewhere, as `meson install` puts it,
looks only where the install puts the files (DATADIR/pacer/web) and never
serves the build tree's; --web-root names the one place; when nothing is
found, / answers 404 naming every place looked in.

PACER_WEB_DIR: the build's web/ (skipped without the built dashboard,
except in CI)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import PACERD, Pacerd  # noqa: E402

WEB_DIR = os.path.abspath(os.environ.get("PACER_WEB_DIR", "build/web"))


def built():
    if os.path.isfile(os.path.join(WEB_DIR, "index.html")):
        return
    if os.environ.get("CI"):
        raise AssertionError("the dashboard is not built (%s)" % WEB_DIR)
    raise unittest.SkipTest("the dashboard is not built (%s)" % WEB_DIR)


def installed_dir():
    """Where this build's pacerd looks once installed, from its --help."""
    out = subprocess.run([PACERD, "--help"], capture_output=True, text=True).stdout
    m = re.search(r"--web-root DIR .*\(default ([^;)]+)", out)
    if not m:
        raise AssertionError("--help names no default --web-root: " + out)
    return m.group(1)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class WebRoot(unittest.TestCase):
    def test_the_build_trees_pacerd_serves_the_builds_dashboard(self):
        built()
        d = Pacerd()  # the README's command line: no --web-root
        try:
            st, h, body = d.request("GET", "/")
            self.assertEqual(st, 200, body[:300])
            self.assertEqual(h["Content-Type"], "text/html; charset=utf-8")
            self.assertEqual(body, read(os.path.join(WEB_DIR, "index.html")))
            st, _, body = d.request("GET", "/assets/app.js")
            self.assertEqual((st, body), (200, read(os.path.join(WEB_DIR, "app.js"))))
            self.assertNotIn("no dashboard", d.stderr_text())
        finally:
            d.close()

    def test_a_copy_installed_elsewhere_never_serves_the_build_tree(self):
        built()
        tmp = tempfile.mkdtemp(prefix="pacerd-installed-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        copy = os.path.join(tmp, "bin", "pacerd")
        os.mkdir(os.path.dirname(copy))
        shutil.copy2(PACERD, copy)
        # the build's libraries, found by the build's relative RUNPATH only from the build tree
        libs = [os.path.dirname(line.split("=>")[1].split("(")[0].strip())
                for line in subprocess.run(["ldd", PACERD], capture_output=True, text=True).stdout.splitlines()
                if "libpacer" in line and "=>" in line]
        env = dict(os.environ, LD_LIBRARY_PATH=":".join(libs))
        d = Pacerd(binary=copy, env=env)
        try:
            st, _, body = d.request("GET", "/")
            share = installed_dir()
            if os.path.isfile(os.path.join(share, "index.html")):  # installed on this machine
                self.assertEqual((st, body), (200, read(os.path.join(share, "index.html"))))
                return
            self.assertEqual(st, 404)
            self.assertEqual(json.loads(body)["error"],
                             "the dashboard is not installed here (pacerd --web-root DIR; looked in %s)" % share)
            self.assertIn("pacerd: no dashboard: %s: No such file or directory (--web-root DIR; / answers 404)"
                          % share, d.stderr_text())
        finally:
            d.close()

    def test_web_root_is_the_one_place(self):
        built()
        empty = tempfile.mkdtemp(prefix="pacerd-web-")
        self.addCleanup(os.rmdir, empty)
        d = Pacerd(["--web-root", empty])
        try:
            st, _, body = d.request("GET", "/")
            self.assertEqual(st, 404)
            self.assertEqual(json.loads(body)["error"],
                             "the dashboard is not installed here (pacerd --web-root DIR; looked in %s)" % empty)
        finally:
            d.close()
        d = Pacerd(["--web-root", WEB_DIR])
        try:
            self.assertEqual(d.request("GET", "/")[0], 200)
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
