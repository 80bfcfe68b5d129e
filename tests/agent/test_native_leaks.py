"""Native leaks (`pacer run --leaks=native`, `leak` records of kind "native")
against the ground truth of tests/agent/native-leaks.c, a plain C program:
three leaks (one block, a lost linked list of 20000 nodes, a block of a
thread that ended) among memory that is freed or still reachable through
every kind of root. At the default sampling the report names exactly those
three allocation stacks, with byte counts within 5 %, and nothing else.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import APP_ENV, PACER, Xvfb, assert_documented, of_type, read_jsonl, skip_unless  # noqa: E402

NATIVE_LEAKS = os.environ["NATIVE_LEAKS"]
HEAP_SEMANTICS = os.environ["HEAP_SEMANTICS"]
LEAK_APP = os.environ["LEAK_APP"]

# (innermost in-app function, bytes, blocks) of tests/agent/native-leaks.c
EXPECTED = {
    "native_leak_direct": (100000, 1),
    "list_push": (20000 * 200, 20000),
    "native_leak_thread": (80000, 1),
}


def run(args, leaks="native", extra_env=None, program=NATIVE_LEAKS, display=None):
    tmp = tempfile.mkdtemp(prefix="pacer-native-")
    out = os.path.join(tmp, "records.jsonl")
    env = dict(os.environ, **APP_ENV, **(extra_env or {}))
    if display:
        env["DISPLAY"] = display
        env.pop("WAYLAND_DISPLAY", None)
    cmd = [PACER, "run", "--out", out]
    if leaks:
        cmd.append("--leaks=" + leaks)
    p = subprocess.run(cmd + ["--", program] + list(args), env=env, capture_output=True, text=True, timeout=120)
    return p, read_jsonl(out)


def first_app_function(rec):
    return next(f["function"] for f in rec["stack"] if f["in_app"])


class NativeLeaks(unittest.TestCase):
    def check_three(self, recs):
        leaks = of_type(recs, "leak")
        self.assertEqual(len(leaks), 3, [(r.get("bytes"), [f["function"] for f in r.get("stack", [])][:3])
                                         for r in leaks])
        seen = {}
        for r in leaks:
            self.assertEqual(r["kind"], "native")
            self.assertEqual(r["origin"], "app")
            self.assertRegex(r["signature"], r"^[0-9a-f]{16}$")
            fn = first_app_function(r)
            self.assertIn(fn, EXPECTED, r)
            self.assertNotIn(fn, seen)
            seen[fn] = r
            want_bytes, want_blocks = EXPECTED[fn]
            self.assertLessEqual(abs(r["bytes"] - want_bytes), want_bytes * 0.05, (fn, r["bytes"]))
            self.assertLessEqual(abs(r["count"] - want_blocks), want_blocks * 0.05, (fn, r["count"]))
            self.assertGreaterEqual(r["sampled"], 1)
            self.assertLessEqual(r["sampled"], r["count"])
            top = next(f for f in r["stack"] if f["in_app"])
            self.assertTrue(top["file"].endswith("native-leaks.c") and top["line"] > 0, top)
        self.assertEqual(set(seen), set(EXPECTED))
        self.assertIn("native_leak_list", [f["function"] for f in seen["list_push"]["stack"]])
        self.assertEqual(len({r["signature"] for r in leaks}), 3)
        return seen

    def test_exactly_the_three_leaks(self):
        p, recs = run([])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        self.check_three(recs)
        assert_documented(self, recs, ["leak"])

    def test_every_allocation_sampled_gives_exact_counts(self):
        p, recs = run([], extra_env={"PACER_LEAKS_SAMPLE_BYTES": "1"})
        self.assertEqual(p.returncode, 0, p.stderr)
        seen = self.check_three(recs)
        for fn, (want_bytes, want_blocks) in EXPECTED.items():
            self.assertEqual((seen[fn]["bytes"], seen[fn]["count"], seen[fn]["sampled"]),
                             (want_bytes, want_blocks, want_blocks))

    def test_same_signatures_across_runs(self):
        _, a = run([])
        _, b = run(["--churn", "1000"])
        sig = lambda recs: {first_app_function(r): r["signature"] for r in of_type(recs, "leak")}
        self.assertEqual(sig(a), sig(b))

    def test_nothing_leaked_nothing_reported(self):
        p, recs = run(["--no-leaks"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(of_type(recs, "leak"), [])

    def test_fork_and_exec_children_report_nothing_twice(self):
        p, recs = run(["--fork"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_three(recs)
        self.assertEqual({r["pid"] for r in recs}, {of_type(recs, "leak")[0]["pid"]})

    def test_a_check_on_demand_reports_each_leak_once(self):
        p, recs = run(["--check-early"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_three(recs)
        # the direct leak came from the early check, before the others
        self.assertEqual(first_app_function(of_type(recs, "leak")[0]), "native_leak_direct")

    def test_off_unless_asked(self):
        p, recs = run([], leaks=None)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(of_type(recs, "leak"), [])
        sh = shutil.which("sh")
        p, _ = run(["-c", 'echo "$LD_PRELOAD|${G_SLICE:-}|${PACER_LEAKS:-}"'], leaks=None, program=sh)
        self.assertNotIn("libpacer-agent-heap", p.stdout)
        self.assertTrue(p.stdout.strip().endswith("||"), p.stdout)
        p, _ = run(["-c", 'echo "$LD_PRELOAD|${G_SLICE:-}|${PACER_LEAKS:-}"'], program=sh)
        self.assertIn("libpacer-agent-heap.so", p.stdout)
        self.assertTrue(p.stdout.strip().endswith("|always-malloc|native"), p.stdout)

    def test_the_program_sees_the_allocator_unchanged(self):
        # tests/agent/heap-semantics.c checks sizes, usable sizes, zeroing,
        # realloc, alignments and error codes itself, with threads trading
        # blocks while leak checks run, and a fork; plain first, then with
        # blocks in the bitmaps (default), all in the table (every block
        # sampled), and mixed; it frees everything: no leak either way
        p = subprocess.run([HEAP_SEMANTICS], capture_output=True, text=True, timeout=120)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "ok\n", ""))
        for sample in [None, "1", "512"]:
            extra = {"PACER_LEAKS_SAMPLE_BYTES": sample} if sample else {}
            p, recs = run([], extra_env=extra, program=HEAP_SEMANTICS)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "ok\n", ""), sample)
            self.assertEqual(of_type(recs, "leak"), [], sample)

    def test_bad_option(self):
        for bad in ["--leaks=all", "--leaks=", "--leaks=refs,"]:
            p = subprocess.run([PACER, "run", bad, "--", "true"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn("--leaks wants refs, native, off", p.stderr)


class NativeLeaksInGtk(unittest.TestCase):
    """The heap agent in a GTK program: the app runs as before, object leaks
    carry their creation stacks."""

    def test_gtk_app(self):
        skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
        with Xvfb() as x:
            p, recs = run(["--keep-label"], display=x.display, extra_env={"PACER_LEAK_GRACE_MS": "1000"},
                          program=LEAK_APP)
        self.assertEqual(p.returncode, 0, p.stderr)
        objects = [r for r in of_type(recs, "leak") if r["kind"] == "object"]
        self.assertEqual(len(objects), 1, objects)
        label = objects[0]["objects"][0]
        self.assertEqual(label["type"], "GtkLabel")
        self.assertIn("leak_app_window_init", [f["function"] for f in label["created"]])
        self.assertTrue(of_type(recs, "page", page="LeakAppWindow"))
        native = [r for r in of_type(recs, "leak") if r["kind"] == "native" and r["origin"] == "app"]
        # the label (and what it holds) is reachable from the app's global:
        # no native leak is the app's
        self.assertEqual(native, [])


if __name__ == "__main__":
    unittest.main()
