"""The ingest key is never on a command line and never in the environment
of the program `pacer run` starts: --key is refused, --key-file and
$PACER_KEY are taken, and the key reaches the program only through the
descriptor named by PACER_SERVER_KEY_FD (which libpacer closes in the
measured app: tests/e2e)."""
import os
import subprocess
import tempfile
import unittest

PACER = os.environ["PACER"]
KEY = "k-secret-0123456789abcdef"
DUMP = ("tr '\\0' '\\n' < /proc/self/environ; echo @@; "
        "cat /proc/self/fd/$PACER_SERVER_KEY_FD; echo @@; readlink /proc/self/fd/$PACER_SERVER_KEY_FD")


class Secrets(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.key_file = os.path.join(self.tmp.name, "key")
        with open(self.key_file, "w") as f:
            f.write(KEY + "\n")

    def tearDown(self):
        self.tmp.cleanup()

    def run_pacer(self, *args, env=None):
        e = dict(os.environ)
        e.pop("PACER_KEY", None)
        e.update(env or {})
        return subprocess.run([PACER] + list(args), capture_output=True, text=True, timeout=60, env=e)

    def test_key_on_the_command_line_is_refused(self):
        for cmd in (["run", "--server", "http://127.0.0.1:1", "--key", KEY, "--", "true"],
                    ["replay", "--server", "http://127.0.0.1:1", "--key", KEY, "/dev/null"]):
            p = self.run_pacer(*cmd)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--key-file FILE", p.stderr)
            self.assertIn("ps", p.stderr)

    def dump(self, *args, env=None):
        p = self.run_pacer("run", "--out", os.path.join(self.tmp.name, "r.jsonl"), "--server",
                           "http://127.0.0.1:1", *args, "--", "sh", "-c", DUMP, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        environ, through_fd, link = (p.stdout.split("@@") + ["", ""])[:3]
        return environ, through_fd.strip(), link.strip()

    def test_key_file_reaches_the_program_only_through_its_descriptor(self):
        environ, through_fd, link = self.dump("--key-file", self.key_file)
        self.assertNotIn(KEY, environ)
        self.assertIn("PACER_SERVER_KEY_FD=", environ)
        self.assertNotIn("PACER_SERVER_KEY=", environ)
        self.assertEqual(through_fd, KEY)  # a program that is not measured passes it on
        self.assertTrue(link.startswith("/memfd:pacer-key"), link)

    def test_pacer_key_is_removed_from_the_programs_environment(self):
        environ, through_fd, _ = self.dump(env={"PACER_KEY": KEY})
        self.assertNotIn(KEY, environ)
        self.assertNotIn("PACER_KEY=", environ)
        self.assertEqual(through_fd, KEY)
        # without --server the key goes nowhere, and still not to the program
        p = self.run_pacer("run", "--out", os.path.join(self.tmp.name, "r.jsonl"), "--", "sh", "-c",
                           "tr '\\0' '\\n' < /proc/self/environ", env={"PACER_KEY": KEY})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(KEY, p.stdout)
        self.assertNotIn("PACER_SERVER_KEY_FD", p.stdout)

    def test_bad_key_files(self):
        empty = os.path.join(self.tmp.name, "empty")
        open(empty, "w").close()
        for path, reason in ((os.path.join(self.tmp.name, "none"), "No such file"),
                             (empty, "expected the key on the first line")):
            for cmd in (["run", "--server", "http://127.0.0.1:1", "--key-file", path, "--", "true"],
                        ["replay", "--server", "http://127.0.0.1:1", "--key-file", path, "/dev/null"]):
                p = self.run_pacer(*cmd)
                self.assertEqual(p.returncode, 2, (cmd, p.stderr))
                self.assertIn("--key-file %s: %s" % (path, reason), p.stderr)


if __name__ == "__main__":
    unittest.main()
