#!/usr/bin/env python3
"""pacerd(8), pacerd.conf(5) and the default pacerd.conf the build made
say what `pacerd --help` says (pacerd_manpages.py), and pacerd starts with
that pacerd.conf (the paths of this machine's service replaced).

Environment: PACERD, PACERD_MAN_DIR (where the build wrote the three)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pacerd_manpages  # noqa: E402

PACERD = os.environ.get("PACERD", "pacerd")
DIR = os.environ.get("PACERD_MAN_DIR", ".")


def files(d):
    return [os.path.join(d, n) for n in ("pacerd.8", "pacerd.conf.5", "pacerd.conf")]


class PacerdManual(unittest.TestCase):
    def test_pages_and_file_match_help(self):
        self.assertEqual(pacerd_manpages.problems(PACERD, *files(DIR)), [])

    def test_a_word_changed_is_found(self):
        with tempfile.TemporaryDirectory(prefix="pacerd-man-") as tmp:
            for f in files(DIR):
                shutil.copy(f, tmp)
            page8, page5, conf = files(tmp)
            with open(page8) as f:
                text = f.read()
            with open(page8, "w") as f:
                f.write(text.replace("connections idle longer", "connections idle"))
            with open(conf, "a") as f:
                f.write("#threads = 4\n")
            found = pacerd_manpages.problems(PACERD, page8, page5, conf)
            self.assertEqual(len(found), 2, found)
            self.assertTrue(found[0].startswith("pacerd(8) and `pacerd --help` differ"), found[0])
            self.assertIn("threads is there 2 times", found[1])

    def test_default_file_starts_pacerd(self):
        with tempfile.TemporaryDirectory(prefix="pacerd-conf-") as tmp:
            with open(os.path.join(DIR, "pacerd.conf")) as f:
                text = f.read()
            # every setting of the service's file is set; the rest commented
            set_ = re.findall(r"^([a-z-]+) = (.*)$", text, re.M)
            self.assertEqual([k for k, _ in set_], ["listen", "db", "admin-token-file", "keys-file"])
            with open(os.path.join(tmp, "admin-token"), "w") as f:
                f.write("admin-%s\n" % os.urandom(8).hex())
            with open(os.path.join(tmp, "keys"), "w") as f:
                f.write("shop k-%s\n" % os.urandom(8).hex())
            # every commented default uncommented but the placeholders (FILE, URL, …)
            lines = []
            for line in text.splitlines():
                m = re.match(r"^#([a-z-]+) = (.*)$", line)
                if m and not re.fullmatch(r"[A-Z:|]+", m.group(2)):
                    line = line[1:]
                lines.append(line)
            text = "\n".join(lines) + "\n"
            text = re.sub(r"^listen = .*$", "listen = 127.0.0.1:0", text, flags=re.M)
            text = re.sub(r"^db = .*$", "db = pacer.db", text, flags=re.M)
            text = re.sub(r"^admin-token-file = .*$", "admin-token-file = admin-token", text, flags=re.M)
            text = re.sub(r"^keys-file = .*$", "keys-file = keys", text, flags=re.M)
            conf = os.path.join(tmp, "pacerd.conf")
            with open(conf, "w") as f:
                f.write(text)
            p = subprocess.Popen([PACERD, "--config", conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            try:
                line = p.stdout.readline()
                self.assertIn("listening on http://127.0.0.1:", line, p.stderr.read() if not line else "")
            finally:
                p.terminate()
                p.communicate(timeout=40)


if __name__ == "__main__":
    unittest.main(verbosity=2)
