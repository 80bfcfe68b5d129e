"""pacer trace end to end: record the sample program (linked with the
runtime, and preloaded), then check the exact call tree, the report, the
three exports, filters, exit()/signal endings and damaged input.
Paths come from meson: PACER, TRACE_SAMPLE, TRACE_SAMPLE_PRELOAD."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perfetto_decode  # noqa: E402

PACER = os.environ["PACER"]
SAMPLE = os.environ["TRACE_SAMPLE"]
SAMPLE_PRELOAD = os.environ["TRACE_SAMPLE_PRELOAD"]
SAMPLE_STATIC = os.environ.get("TRACE_SAMPLE_STATIC")

MAIN_TREE = {
    ("main",): 1,
    ("main", "loop"): 1,
    ("main", "loop", "leaf"): 1000,
    ("main", "lib_work"): 1,
    ("main", "lib_work", "lib_inner"): 2,
    ("main", "interrupted"): 1,
    ("main", "interrupted", "on_alarm"): 1,
    ("main", "interrupted", "on_alarm", "leaf"): 1,
    ("main", "jumper"): 1,
    ("main", "jumper", "deep1"): 1,
    ("main", "jumper", "deep1", "deep2"): 1,
    ("main", "jumper", "after_jump"): 1,
    ("main", "spawn"): 1,
}
for depth in range(1, 7):
    MAIN_TREE[("main",) + ("recurse",) * depth] = 1
WORKER_TREE = {("worker",): 1, ("worker", "leaf"): 100}


def pacer(*args, check=True):
    p = subprocess.run([PACER, *args], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError("pacer %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr))
    return p


class TraceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "rec")

    def tearDown(self):
        self.tmp.cleanup()

    def record(self, program, *args, expect_rc=0):
        p = pacer("trace", "record", "-o", self.dir, "--", program, *args, check=False)
        self.assertEqual(p.returncode, expect_rc, p.stderr)
        return p

    def export(self, fmt, *extra):
        out = os.path.join(self.tmp.name, "out." + fmt)
        pacer("trace", "export", self.dir, "--format", fmt, "-o", out, *extra)
        with open(out, "rb") as f:
            return f.read()

    def threads(self, *extra):
        """{thread name: call tree} from the Perfetto export."""
        tracks, slices = perfetto_decode.decode(self.export("perfetto", *extra))
        trees = {}
        for uuid, s in slices.items():
            name = tracks[uuid]["name"]
            self.assertNotIn(name, trees)
            trees[name] = perfetto_decode.call_tree(s)
        return trees, tracks, slices

    def check_tree(self, extra_main=None):
        trees, tracks, slices = self.threads()
        main_name = os.path.basename(SAMPLE)[:15]
        expected = dict(MAIN_TREE)
        expected.update(extra_main or {})
        self.assertEqual(set(trees), {main_name, "worker-1", "worker-2"})
        main = trees[next(n for n in trees if n.startswith("trace-sample"))]
        self.assertEqual(main, expected)
        self.assertEqual(trees["worker-1"], WORKER_TREE)
        self.assertEqual(trees["worker-2"], WORKER_TREE)
        return trees, tracks, slices

    def test_linked(self):
        self.record(SAMPLE)
        trees, tracks, slices = self.check_tree()

        # Chrome JSON: valid, one complete event per call, same counts.
        doc = json.loads(self.export("chrome"))
        xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        calls = sum(sum(t.values()) for t in trees.values())
        self.assertEqual(len(xs), calls)
        names = {}
        for e in xs:
            names[e["name"]] = names.get(e["name"], 0) + 1
        self.assertEqual(names["leaf"], 1201)
        lib = [e for e in xs if e["name"] == "lib_inner"]
        self.assertTrue(lib[0]["args"]["file"].split("/")[-1].startswith("sample_lib.c:"), lib[0])
        meta = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"}
        self.assertIn("worker-1", meta)

        # Folded stacks sum to the outermost calls' total time.
        folded = self.export("folded").decode()
        total = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines())
        roots = sum(s[1] - s[0] for sl in slices.values() for s in sl if s[2] == 0)
        self.assertEqual(total, roots)
        for line in folded.splitlines():
            stack = line.rsplit(" ", 1)[0].split(";")
            self.assertIn(tuple(stack[1:]), set(MAIN_TREE) | set(WORKER_TREE))

        # The report: tables, names, thread names, compact file.
        rep = pacer("trace", "report", self.dir).stdout
        self.assertIn("top functions by total time", rep)
        self.assertIn("top functions by self time", rep)
        self.assertIn("(worker-1)", rep)
        self.assertRegex(rep, r"\n\s+[\d.]+\s+[\d.]+\s+1201  leaf \(.*sample\.c:\d+\)")
        self.assertRegex(rep, r"lib_work \(.*sample_lib\.c:\d+\)")
        bpe = float(rep.split(" bytes/event")[0].rsplit(", ", 1)[1])
        self.assertLessEqual(bpe, 8.0)

    def test_preloaded(self):
        self.record(SAMPLE_PRELOAD)
        trees, _, _ = self.threads()
        main = trees[next(n for n in trees if n.startswith("trace-sample"))]
        self.assertEqual(main, MAIN_TREE)

    def test_static_runtime(self):
        # Linked with libpacer-trace.a: the same exact tree.
        self.assertTrue(SAMPLE_STATIC, "TRACE_SAMPLE_STATIC not set")
        self.record(SAMPLE_STATIC)
        trees, _, _ = self.threads()
        main = trees[next(n for n in trees if n.startswith("trace-sample"))]
        self.assertEqual(main, MAIN_TREE)
        self.assertEqual(trees["worker-1"], WORKER_TREE)

    def test_exit_inside_a_call(self):
        self.record(SAMPLE, "exit", expect_rc=3)
        self.check_tree({("main", "finish"): 1})

    def test_fatal_signal_inside_a_call(self):
        self.record(SAMPLE, "kill", expect_rc=128 + 15)
        self.check_tree({("main", "finish"): 1})
        rep = pacer("trace", "report", self.dir).stdout
        self.assertNotIn("did not end cleanly", rep)

    def test_filters(self):
        self.record(SAMPLE)
        trees, _, _ = self.threads("--max-depth", "2")
        for t in trees.values():
            self.assertTrue(all(len(k) <= 2 for k in t), t)
        self.assertEqual(trees["worker-1"], WORKER_TREE)
        trees, _, _ = self.threads("--filter", "lib_*")
        main = trees[next(n for n in trees if n.startswith("trace-sample"))]
        self.assertEqual(main, {("lib_work",): 1, ("lib_work", "lib_inner"): 2})
        # A call shorter than min-ns is hidden: the tree shown is exactly
        # the calls the unfiltered trace timed at 1 ms or more (a leaf the
        # scheduler held up may be one of them). interrupted spins ~2 ms.
        _, tracks, slices = self.threads()
        main_uuid = next(u for u in slices if tracks[u]["name"].startswith("trace-sample"))
        kept = [s for s in slices[main_uuid] if s[1] - s[0] >= 1000000]
        expected = perfetto_decode.call_tree(kept)
        trees, _, _ = self.threads("--min-ns", "1000000")
        main = trees[next(n for n in trees if n.startswith("trace-sample"))]
        self.assertEqual(main, expected)
        self.assertIn(("main", "interrupted"), main)
        self.assertLess(main.get(("main", "loop", "leaf"), 0), 100)
        # Filters given to record are stored and used by report.
        p = pacer("trace", "record", "-o", self.dir, "--filter", "jumper", "--", SAMPLE)
        rep = pacer("trace", "report", self.dir).stdout
        self.assertIn("filters: pattern jumper", rep)
        self.assertNotIn(" loop (", rep)
        self.assertIn(" after_jump (", rep)
        del p

    def storm_trees(self, env=None):
        """Records the sample's signal storm; returns its counts and tree."""
        p = subprocess.run([PACER, "trace", "record", "-o", self.dir, "--", SAMPLE, "storm"],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        made = dict(kv.split("=") for kv in p.stdout.split())
        trees, _, _ = self.threads()
        self.assertEqual(len(trees), 1)
        tree = next(iter(trees.values()))
        rep = pacer("trace", "report", self.dir).stdout
        return int(made["leaf"]), int(made["ticks"]), tree, rep

    def dropped(self, rep):
        """Events the report says were dropped (0 when it says none)."""
        if "dropped" not in rep:
            return 0
        return int(rep.split(" events were dropped")[0].rsplit(" ", 1)[1])

    def test_signal_storm(self):
        # A handler that interrupts the hooks themselves (thousands of
        # times, at every point of them) nests exactly: each on_tick with
        # its one leaf, inside storm or inside a leaf, and every leaf of the
        # loop is there. The one window left, a handler that runs while its
        # thread switches chunks (once per ~10,000 calls here), drops that
        # handler's calls whole and counts them.
        leaves, ticks, tree, rep = self.storm_trees()
        allowed = {("main",), ("main", "storm"), ("main", "storm", "leaf"),
                   ("main", "storm", "on_tick"), ("main", "storm", "on_tick", "leaf"),
                   ("main", "storm", "leaf", "on_tick"), ("main", "storm", "leaf", "on_tick", "leaf")}
        self.assertLessEqual(set(tree), allowed, tree)
        self.assertEqual(tree[("main", "storm", "leaf")], leaves)
        on_tick = tree.get(("main", "storm", "on_tick"), 0) + tree.get(("main", "storm", "leaf", "on_tick"), 0)
        nested = tree.get(("main", "storm", "on_tick", "leaf"), 0) + tree.get(("main", "storm", "leaf", "on_tick", "leaf"), 0)
        self.assertEqual(nested, on_tick)
        dropped = self.dropped(rep)
        self.assertEqual(dropped % 4, 0, rep)  # on_tick and its leaf, enter and exit
        self.assertEqual(on_tick + dropped // 4, ticks, rep)
        self.assertGreater(on_tick, 0)

    def test_without_rseq(self):
        # glibc told not to register rseq: the portable path records every
        # hook. The sample's tree is exact; in the storm, a handler that
        # lands inside a hook is dropped whole and counted, never half.
        env = dict(os.environ, GLIBC_TUNABLES="glibc.pthread.rseq=0")
        p = subprocess.run([PACER, "trace", "record", "-o", self.dir, "--", SAMPLE],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_tree()
        leaves, ticks, tree, rep = self.storm_trees(env)
        self.assertEqual(tree[("main", "storm", "leaf")], leaves)
        on_tick = tree.get(("main", "storm", "on_tick"), 0) + tree.get(("main", "storm", "leaf", "on_tick"), 0)
        nested = tree.get(("main", "storm", "on_tick", "leaf"), 0) + tree.get(("main", "storm", "leaf", "on_tick", "leaf"), 0)
        self.assertEqual(nested, on_tick)
        dropped = self.dropped(rep)
        self.assertEqual(dropped % 4, 0, rep)  # on_tick and its leaf, enter and exit
        self.assertEqual(on_tick + dropped // 4, ticks, rep)

    def test_version_1_file(self):
        # A recording in the earlier format (zstd, exits with addresses)
        # still reads: the sample's counts, unchanged.
        os.makedirs(self.dir)
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "trace", "sample.ptrace")
        with open(src, "rb") as f, open(os.path.join(self.dir, "1.ptrace"), "wb") as g:
            g.write(f.read())
        rep = pacer("trace", "report", self.dir).stdout
        self.assertIn("3 threads, 1221 calls shown, 2441 events", rep)
        self.assertRegex(rep, r"\n\s+[\d.]+\s+[\d.]+\s+1201  0x[0-9a-f]+\n")

    def test_compressed(self):
        # PACER_TRACE_ZSTD_LEVEL: the same exact tree from a zstd body.
        env = dict(os.environ, PACER_TRACE_ZSTD_LEVEL="3")
        p = subprocess.run([PACER, "trace", "record", "-o", self.dir, "--", SAMPLE],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_tree()
        path = [os.path.join(self.dir, n) for n in os.listdir(self.dir) if n.endswith(".ptrace")][0]
        with open(path, "rb") as f:
            self.assertEqual(f.read(64)[28:32], b"\x01\0\0\0")  # flags: zstd

    def test_damaged_input(self):
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "1.ptrace"), "wb") as f:
            f.write(b"this is not a trace at all, not even close" * 3)
        p = pacer("trace", "report", self.dir, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a pacer trace", p.stderr)

        # A stream cut short (a process killed mid-write) still reads.
        self.record(SAMPLE)
        path = [os.path.join(self.dir, n) for n in os.listdir(self.dir) if n.endswith(".ptrace")][0]
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.truncate(64 + (size - 64) * 2 // 3)
        p = pacer("trace", "report", self.dir, check=False)
        self.assertIn(p.returncode, (0, 2), p.stderr)
        if p.returncode == 0:
            self.assertIn("did not end cleanly", p.stdout)
        else:
            self.assertIn("damaged", p.stderr)

        p = pacer("trace", "report", os.path.join(self.tmp.name, "nope"), check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("No such file", p.stderr)

    def test_usage(self):
        p = pacer("trace", "export", self.dir, "--format", "svg", "-o", "x", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown format", p.stderr)
        p = pacer("trace", "record", "--max-depth", "many", "--", SAMPLE, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a valid count", p.stderr)
        p = pacer("trace", "--help")
        self.assertIn("pacer trace record", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
