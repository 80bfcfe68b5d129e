#!/usr/bin/env python3
"""The manual pages the build made (pacer(1), pacer-CMD(1)) say what
`pacer --help` and `pacer CMD --help` say, and there is one for each
command `pacer --help` lists.

Environment: PACER is the built pacer binary, PACER_MAN_DIR where the build
wrote the pages.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import manpages  # noqa: E402

PACER = os.environ.get("PACER", "pacer")
MAN_DIR = os.environ.get("PACER_MAN_DIR", ".")


class ManPagesTest(unittest.TestCase):
    def test_pages_match_help(self):
        found = manpages.problems(PACER, lambda name: os.path.join(MAN_DIR, name + ".1"))
        self.assertEqual(found, [])

    def test_every_command_has_its_page(self):
        names = {name for name, _ in manpages.commands(PACER)}
        self.assertIn("run", names)
        pages = {f[len("pacer-"):-2] for f in os.listdir(MAN_DIR) if f.startswith("pacer-") and f.endswith(".1")}
        self.assertEqual(pages, names)

    def test_page_follows_help(self):
        # A page that lost a word of its command's help is found, and named.
        import tempfile
        with tempfile.TemporaryDirectory(prefix="pacer-man-") as tmp:
            for f in os.listdir(MAN_DIR):
                if f.endswith(".1"):
                    with open(os.path.join(MAN_DIR, f)) as src, open(os.path.join(tmp, f), "w") as dst:
                        text = src.read()
                        if f == "pacer-run.1":
                            text = text.replace("window is still measured", "window is measured")
                        dst.write(text)
            found = manpages.problems(PACER, lambda name: os.path.join(tmp, name + ".1"))
            self.assertEqual(len(found), 1, found)
            self.assertTrue(found[0].startswith("pacer-run: the page and `pacer run --help` differ"), found[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
