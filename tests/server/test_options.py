"""pacerd's options come from one table (src/server/app/options.c): its
--help lists every option the command line takes, each once, and
docs/server.md's table of options ("Running it") names the same ones; an
option the table does not have is refused naming it, and a value out of
its range names the option and the range."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import PACERD  # noqa: E402

ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))


def help_options():
    p = subprocess.run([PACERD, "--help"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    return re.findall(r"^  (--[a-z][a-z-]*)", p.stdout, re.M)


def documented_options():
    with open(os.path.join(ROOT, "docs", "server.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("| option | meaning |")
    table = text[start:text.index("\n\n", start)]
    names = []
    for line in table.splitlines()[2:]:
        first = line.split("|")[1]
        names += re.findall(r"`(--[a-z][a-z-]*)", first)
    return names


class Options(unittest.TestCase):
    def test_help_lists_each_option_once(self):
        names = help_options()
        self.assertGreater(len(names), 30)
        self.assertEqual(len(names), len(set(names)), names)

    def test_docs_name_the_options_help_lists(self):
        listed = set(help_options()) - {"--help"}
        documented = documented_options()
        self.assertEqual(len(documented), len(set(documented)), documented)
        self.assertEqual(listed - set(documented), set(), "in --help, not in docs/server.md")
        self.assertEqual(set(documented) - listed, set(), "in docs/server.md, not in --help")

    def run_pacerd(self, *args):
        return subprocess.run([PACERD, *args], capture_output=True, text=True, timeout=10)

    def test_unknown_option_is_named(self):
        p = self.run_pacerd("--listen", "127.0.0.1:0", "--no-such-option")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--no-such-option", p.stderr)

    def test_value_out_of_range_names_the_option(self):
        p = self.run_pacerd("--listen", "127.0.0.1:0", "--max-per-address", "0")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--max-per-address", p.stderr)


if __name__ == "__main__":
    unittest.main()
