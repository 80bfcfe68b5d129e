#!/usr/bin/env python3
"""`pacer config check FILE`, run as a user would.

Environment: PACER is the built pacer binary, PACER_SOURCE_ROOT the source
tree (for tests/data).
"""
import os
import re
import subprocess
import tempfile
import unittest

PACER = os.environ.get("PACER", "pacer")
ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "tests", "data")

SEED_OUTPUT = """\
seed000.xml: OK, 2 pages, 3 APIs
page HomeActivity (main)
  api /api/config
  api /api/list
page com.test.MerchantFragment
  api /api/test1
thresholds jank-ms=700 hang-ms=5000 page-deadline-ms=30000
leaks leak-grace-ms=5000
upload config-poll-ms=60000 spool-max-kb=65536
"""

SHOP_OUTPUT = """\
shop.xml: OK, 2 pages, 3 APIs
page ShopHomeWindow (main)
  api /api/config
  api /api/list
page ShopMerchantPage
  api /api/test1
splash ShopSplashWindow
thresholds jank-ms=700 hang-ms=5000 page-deadline-ms=30000
leaks leak-grace-ms=5000
upload config-poll-ms=60000 spool-max-kb=65536
"""


def run(*args, cwd=None):
    return subprocess.run([PACER, *args], cwd=cwd, capture_output=True, timeout=30)


class ConfigCheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="pacer-config-check-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, content):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
        return path

    def check_ok(self, path, cwd=None):
        r = run("config", "check", path, cwd=cwd)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        self.assertEqual(r.stderr, b"")
        return r.stdout.decode()

    def check_fails(self, name, content):
        """Writes `content` to `name`, expects exit 2 and one error line;
        returns the error without its "pacer config check: " prefix."""
        self.write(name, content)
        r = run("config", "check", name, cwd=self.tmp.name)
        self.assertEqual(r.returncode, 2, r.stdout.decode(errors="replace"))
        self.assertEqual(r.stdout, b"")
        err = r.stderr.decode()
        self.assertTrue(err.startswith("pacer config check: "), err)
        self.assertTrue(err.endswith("\n") and err.count("\n") == 1, err)
        return err[len("pacer config check: "):-1]

    # ---- accepted files -------------------------------------------------

    def test_seed_verbatim(self):
        self.assertEqual(self.check_ok("seed000.xml", cwd=DATA), SEED_OUTPUT)

    def test_shop(self):
        self.assertEqual(self.check_ok("shop.xml", cwd=DATA), SHOP_OUTPUT)

    def test_seed_with_prologue_and_root(self):
        with open(os.path.join(DATA, "seed000.xml")) as f:
            seed = f.read()
        path = self.write("seed000.xml", '\ufeff<?xml version="1.0" encoding="UTF-8"?>\n<pacer>\n' + seed + "</pacer>\n")
        self.assertEqual(self.check_ok("seed000.xml", cwd=self.tmp.name), SEED_OUTPUT)
        self.assertTrue(self.check_ok(path).startswith(path + ": OK, 2 pages, 3 APIs\n"))

    def test_singular_and_defaults(self):
        self.write("one.xml", '<page id="A"><api id="/x"/></page>\n<thresholds hang-ms="100"/>\n')
        self.assertEqual(
            self.check_ok("one.xml", cwd=self.tmp.name),
            "one.xml: OK, 1 page, 1 API\npage A\n  api /x\nthresholds jank-ms=700 hang-ms=100 page-deadline-ms=30000\n"
            "leaks leak-grace-ms=5000\nupload config-poll-ms=60000 spool-max-kb=65536\n",
        )

    def test_known_leaks(self):
        self.write("leaks.xml", '<thresholds leak-grace-ms="800"/>\n<known-leak id="im" type="GtkIMContextSimple"/>\n'
                   '<known-leak function="FcInit" page="W"/>\n')
        self.assertEqual(
            self.check_ok("leaks.xml", cwd=self.tmp.name),
            "leaks.xml: OK, 0 pages, 0 APIs\nthresholds jank-ms=700 hang-ms=5000 page-deadline-ms=30000\n"
            "leaks leak-grace-ms=800\nknown-leak im type GtkIMContextSimple\nknown-leak FcInit function FcInit page W\n"
            "upload config-poll-ms=60000 spool-max-kb=65536\n",
        )

    def test_empty_file_is_an_empty_config(self):
        self.write("empty.xml", b"")
        out = self.check_ok("empty.xml", cwd=self.tmp.name)
        self.assertTrue(out.startswith("empty.xml: OK, 0 pages, 0 APIs\n"), out)

    def test_control_characters_are_escaped(self):
        self.write("odd.xml", '<page id="a&#10;b&#9;c"/>')
        out = self.check_ok("odd.xml", cwd=self.tmp.name)
        self.assertIn("page a\\x0ab\\x09c\n", out)

    # ---- rejected files -------------------------------------------------

    def test_api_outside_page(self):
        err = self.check_fails("shop.xml", '<pacer>\n  <page id="a"/>\n    <api id="/x"/>\n</pacer>\n')
        self.assertEqual(err, "shop.xml:3:5: <api> outside of a <page>")

    def test_duplicate_page(self):
        with open(os.path.join(DATA, "seed000.xml")) as f:
            seed = f.read()
        err = self.check_fails("dup.xml", seed + '<page id="HomeActivity"/>\n')
        self.assertEqual(err, 'dup.xml:8:1: duplicate page id "HomeActivity" (first defined on line 1)')

    def test_errors_name_file_line_column(self):
        cases = [
            ('<page id="a">\n<apis id="x"/>\n</page>', "2:1", "unknown element <apis>"),
            ('<page id="a" tag="yes"/>', "1:1", 'tag="yes"'),
            ('\n\n<page/>', "3:1", "<page> has no id attribute"),
            ('<page id="a">\n<page id="b"/></page>', "2:1", "nested <page>"),
            ('<thresholds jank-ms="0"/>', "1:1", "from 1 to 3600000"),
            ('<page id="a" tag="1"/>\n<page id="b" tag="1"/>', "2:1", "only one page may have tag=\"1\""),
            ('<thresholds/>\n<thresholds/>', "2:1", "more than one <thresholds>"),
            ('<page id="a">\n  text\n</page>', "2:3", 'unexpected text "text"'),
            ('<page id="a">\n<api id="x">\n</page>', "3:1", "expected </api> (opened on line 2)"),
            ('<page id="a">\n', "2:1", "end of file inside <page>"),
            ('<page id="a"><api id="x"/><api id="x"/></page>', "1:27", 'duplicate api "x"'),
        ]
        for content, where, words in cases:
            with self.subTest(content=content):
                err = self.check_fails("bad.xml", content)
                self.assertTrue(err.startswith("bad.xml:" + where + ": "), err)
                self.assertIn(words, err)

    def test_garbage_does_not_crash(self):
        inputs = [
            bytes(range(256)),
            b"\x00" * 100,
            b"\xff\xfe<\x00p\x00",
            os.urandom(4096),
            b"<" * 10000,
            b"<page id='a'>" * 5000,
        ]
        for i, content in enumerate(inputs):
            with self.subTest(i=i):
                err = self.check_fails("garbage.bin", content)
                self.assertRegex(err, r"^garbage\.bin:[0-9]+:[0-9]+: \S")

    def test_missing_file(self):
        r = run("config", "check", os.path.join(self.tmp.name, "nope.xml"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(
            r.stderr.decode(), "pacer config check: %s: No such file or directory\n" % os.path.join(self.tmp.name, "nope.xml")
        )

    def test_too_large(self):
        self.write("big.xml", b" " * (1024 * 1024 + 1))
        r = run("config", "check", "big.xml", cwd=self.tmp.name)
        self.assertEqual(r.returncode, 2)
        self.assertIn("big.xml: file is larger than 1 MiB", r.stderr.decode())

    # ---- command line ---------------------------------------------------

    def test_usage_errors(self):
        for args in (["config"], ["config", "check"], ["config", "lint", "x.xml"], ["config", "check", "a", "b"],
                     ["config", "check", "--verbose", "a"]):
            with self.subTest(args=args):
                r = run(*args)
                self.assertEqual(r.returncode, 2)
                self.assertEqual(r.stdout, b"")
                self.assertIn("usage: pacer config check FILE", r.stderr.decode())

    def test_help(self):
        r = run("config", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: pacer config check FILE", r.stdout.decode())
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(re.search(r"^  config +Check a page config file$", r.stdout.decode(), re.M), r.stdout)

    def test_dash_dash_before_file(self):
        self.write("-dash.xml", '<page id="A"/>')
        r = run("config", "check", "--", "-dash.xml", cwd=self.tmp.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(b"-dash.xml: OK, 1 page, 0 APIs\n"))


if __name__ == "__main__":
    unittest.main()
