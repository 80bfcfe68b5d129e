"""Main-loop jank and frames (DESIGN §3.3) under `pacer run`, on a private
Xvfb, against ground truth the programs set themselves:

- the demo's --jank-ms N blocks the main loop N ms inside
  shop_compute_recommendations(): one `jank` record of N ms (+ slack), the
  function at the top of the in-app frames with shop-app.c and a line inside
  its body (read from the source), the same fingerprint in two runs;
- tests/agent/jank-app.c animates a window and spends a known time inside
  one frame: counted slow and frozen, its duration the known time;
- many janks in a row, threads that block every signal, and a main thread
  that blocks the capture signal while stuck: every jank is recorded, the
  program neither crashes nor hangs;
- a main loop blocked 1200 ms in usleep, poll, read of a pipe, waitpid,
  g_usleep or a futex: the call returns what it returns without pacer,
  after as long (its own measure), and the jank lasts the block — its stack
  taken from the kernel's view of the sleeping thread, no signal sent; a
  busy main thread's stack comes from a perf sample, or with perf off from
  the signal.

Slack: a busy loop of N ms ends N ms after it began; the iteration around
it adds the handler's other work and scheduling on a shared 2-core machine
(measured 1-20 ms). The bounds allow 250 ms above, none below: a jank
measured short, or a stack taken after the iteration ended, is a bug.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import APP_ENV, SHOP_APP, ApiServer, XvfbCase, assert_documented, assert_frames_invariants, of_type, pacer_run  # noqa: E402,E501

JANK_APP = os.environ["JANK_APP"]
SHOP_SOURCE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "shop-app.c")
SLACK_MS = 250


def function_lines(path, name):
    """The lines of the body of C function `name` in `path` (1-based)."""
    with open(path) as f:
        lines = f.read().split("\n")
    # the definition: a line starting in column 0, not a declaration
    start = next(i for i, l in enumerate(lines)
                 if re.match(r"\w.*\b%s\(" % name, l) and not l.rstrip().endswith(";"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return range(start + 1, end + 2)


def in_app(stack):
    return [f for f in stack if f["in_app"]]


def write_config(jank_ms, hang_ms=5000):
    fd, path = tempfile.mkstemp(suffix=".xml", prefix="pacer-jank-")
    with os.fdopen(fd, "w") as f:
        f.write('<pacer>\n  <thresholds jank-ms="%d" hang-ms="%d"/>\n</pacer>\n' % (jank_ms, hang_ms))
    return path


class Base(XvfbCase):
    def run_ok(self, program, args, config=None, timeout=90):
        rc, records, events, err = pacer_run(self.x.display, program, args, config=config, timeout=timeout)
        self.assertEqual(rc, 0, err)
        return records

    def assertDuration(self, rec, truth):
        self.assertGreaterEqual(rec["duration_ms"], truth, rec)
        self.assertLessEqual(rec["duration_ms"], truth + SLACK_MS, rec)


class DemoJank(Base):
    JANK_MS = 900

    def demo_jank(self, server):
        records = self.run_ok(SHOP_APP, ["--api", server.base, "--splash-ms", "100", "--lazy-ms", "300",
                                         "--linger-ms", "300", "--auto-exit", "--jank-ms", str(self.JANK_MS)])
        janks = [r for r in of_type(records, "jank")
                 if any(f["function"] == "shop_compute_recommendations" for f in r.get("stack", []))]
        self.assertEqual(len(janks), 1, of_type(records, "jank"))
        return janks[0], records

    def test_jank_stack_and_fingerprint(self):
        body = function_lines(SHOP_SOURCE, "shop_compute_recommendations")
        with ApiServer({"/api/config": 50, "/api/list": 50, "/api/test1": 50}) as server:
            first, records = self.demo_jank(server)
            second, _ = self.demo_jank(server)
        for j in (first, second):
            self.assertEqual(j["kind"], "jank")
            self.assertEqual(j["stack_status"], "captured")
            self.assertEqual(j["page"], "ShopHomeWindow")
            self.assertDuration(j, self.JANK_MS)
            app = in_app(j["stack"])
            top = app[0]
            self.assertEqual(top["function"], "shop_compute_recommendations")
            self.assertEqual(top["module"], "shop-app")
            self.assertEqual(os.path.basename(top["file"]), "shop-app.c")
            self.assertIn(top["line"], body, "line %d not in the function's body %s" % (top["line"], body))
            self.assertEqual(app[1]["function"], "on_recommend")
            self.assertIn("main", [f["function"] for f in app])
            # the system frames between the handler and main() are there too
            funcs = [f["function"] for f in j["stack"]]
            self.assertIn("g_main_context_dispatch", funcs)
            self.assertRegex(j["fingerprint"], r"^[0-9a-f]{16}$")
        self.assertNotEqual(first["pid"], second["pid"])
        self.assertEqual(first["fingerprint"], second["fingerprint"])
        assert_documented(self, records, ["jank", "frames"])
        # the demo's windows also report their frames
        frames = of_type(records, "frames", window="ShopHomeWindow")
        self.assertTrue(frames)
        self.assertGreater(sum(f["frames"] for f in frames), 0)
        self.assertTrue(frames[-1]["final"])


class StrippedFingerprints(Base):
    """An app as packages ship it: a stripped copy of jank-app (no .symtab,
    no DWARF: its own functions have no names). Two stalls with the same
    library frames (usleep) in two different functions of the app give two
    fingerprints; the same stall in two runs gives one."""

    def setUp(self):
        super().setUp()
        self.work = tempfile.mkdtemp(prefix="pacer-stripped-")
        self.app = os.path.join(self.work, "jank-app")
        subprocess.run(["strip", "-o", self.app, JANK_APP], check=True)
        syms = subprocess.run(["nm", self.app], capture_output=True, text=True)
        self.assertIn("no symbols", syms.stderr)

    def stall(self, which):
        records = self.run_ok(self.app, ["--stall", which, "--block-ms", "900"])
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), 1, records)
        j = janks[0]
        self.assertEqual(j["stack_status"], "captured", j)
        self.assertEqual(j["fingerprint_version"], 2, j)
        app = in_app(j["stack"])
        self.assertTrue(app and all(f["module"] == "jank-app" for f in app), j["stack"])
        return j

    def test_two_stalls_two_fingerprints_one_per_stall(self):
        a1, b, a2 = self.stall("a"), self.stall("b"), self.stall("a")
        self.assertRegex(a1["fingerprint"], r"^[0-9a-f]{16}$")
        self.assertNotEqual(a1["fingerprint"], b["fingerprint"])
        self.assertNotEqual(a1["pid"], a2["pid"])
        self.assertEqual(a1["fingerprint"], a2["fingerprint"])


class Frames(Base):
    def test_animation_and_one_slow_frame(self):
        slow_ms = 800
        records = self.run_ok(JANK_APP, ["--animate-ms", "2400", "--slow-frame-ms", str(slow_ms)])
        frames = of_type(records, "frames", window="JankAppWindow")
        self.assertTrue(frames, records)
        self.assertTrue(frames[-1]["final"])
        total = sum(f["frames"] for f in frames)
        # 2.4 s at 60 Hz is 144 frames; a software renderer on a busy machine
        # gives fewer, never a handful.
        self.assertGreaterEqual(total, 20)
        self.assertGreaterEqual(sum(f["frozen"] for f in frames), 1)
        self.assertGreaterEqual(sum(f["slow"] for f in frames), 1)
        self.assertGreaterEqual(sum(f["levels"]["frozen"] for f in frames), 1)
        self.assertEqual(sum(sum(f["levels"].values()) for f in frames), total)
        worst = max(f["max_frame_ms"] for f in frames)
        self.assertGreaterEqual(worst, slow_ms)
        self.assertLessEqual(worst, slow_ms + SLACK_MS)
        for f in frames:
            self.assertGreater(f["refresh_ms"], 5)
            self.assertLess(f["refresh_ms"], 50)
            self.assertGreaterEqual(f["dropped_frames"], f["frozen"] * 42)
            assert_frames_invariants(self, f)
        # the slow frame is a main-loop jank too, its stack inside the tick callback
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), 1, janks)
        self.assertDuration(janks[0], slow_ms)
        funcs = [f["function"] for f in in_app(janks[0]["stack"])]
        self.assertEqual(funcs[:2], ["jank_app_busy_work", "tick"])


class Profiles(Base):
    """A 1200 ms stall, its first half busy (jank_app_mixed_busy), its
    second asleep in usleep (jank_app_mixed_sleep): the jank record's
    profile samples both, every 10 ms from 100 ms on, each half in
    proportion to its time; the usleep keeps its whole length and its
    result (no EINTR: the app measures and reports both)."""

    def test_profile_of_a_half_busy_half_asleep_stall(self):
        block_ms = 1200
        records = self.run_ok(JANK_APP, ["--stall", "mixed", "--block-ms", str(block_ms)])
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), 1, janks)
        j = janks[0]
        self.assertDuration(j, block_ms)
        self.assertGreaterEqual(j["profile_samples"], 100, j)
        self.assertEqual(j["profile_interval_ms"], 10)
        lines = j["profile"].split("\n")
        counts = {}
        for line in lines:
            stack, _, count = line.rpartition(" ")
            frames = stack.split(";")
            self.assertTrue(all(frames), line)
            self.assertEqual(frames[0], "_start", line)  # outermost first
            for f in ("jank_app_mixed_busy", "jank_app_mixed_sleep"):
                if f in frames:
                    counts[f] = counts.get(f, 0) + int(count)
        self.assertEqual(sum(int(l.rpartition(" ")[2]) for l in lines), j["profile_samples"])
        busy, asleep = counts.get("jank_app_mixed_busy", 0), counts.get("jank_app_mixed_sleep", 0)
        # sampled from 100 ms on: the busy half is sampled for 500 ms, the
        # asleep half for 600 ms
        self.assertGreater(busy + asleep, 0.9 * j["profile_samples"], counts)
        share = busy / (busy + asleep)
        self.assertAlmostEqual(share, 500 / 1100, delta=0.15, msg=(counts, j["profile"]))
        sleep_lines = [l for l in lines if "jank_app_mixed_sleep" in l]
        self.assertTrue(all("usleep" in l for l in sleep_lines), sleep_lines)
        assert_documented(self, records, ["jank"])

    def test_the_sleep_keeps_its_length(self):
        block_ms = 1200
        p = subprocess.run([os.environ["PACER"], "run", "--out", os.path.join(tempfile.mkdtemp(), "r.jsonl"), "--",
                            JANK_APP, "--stall", "mixed", "--block-ms", str(block_ms)],
                           env=dict(os.environ, DISPLAY=self.x.display, **APP_ENV), capture_output=True, text=True,
                           timeout=90)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.search(r"mixed busy ms=([0-9.]+) sleep ms=([0-9.]+) errno=([0-9]+) result=(-?[0-9]+)", p.stdout)
        self.assertTrue(m, p.stdout)
        self.assertGreaterEqual(float(m.group(2)), block_ms / 2, p.stdout)
        self.assertEqual((m.group(3), m.group(4)), ("0", "0"), p.stdout)

    def test_short_iterations_have_no_profile(self):
        # 300 ms janks under a 700 ms jank-ms: sampled from 100 ms, never
        # written; a 900 ms one gets its profile
        records = self.run_ok(JANK_APP, ["--janks", "3", "--jank-ms", "300"])
        self.assertFalse(of_type(records, "jank"), records)
        records = self.run_ok(JANK_APP, ["--janks", "1", "--jank-ms", "900"])
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), 1, janks)
        self.assertGreaterEqual(janks[0]["profile_samples"], 50, janks[0])
        self.assertIn("jank_app_busy_work", janks[0]["profile"])


class Robustness(Base):
    def test_many_janks_and_signal_blocking_threads(self):
        # each stays stuck 300 ms past the 200 ms threshold: room for a
        # watchdog that a loaded machine wakes late to take its stack
        n, ms = 10, 500
        records = self.run_ok(JANK_APP, ["--janks", str(n), "--jank-ms", str(ms), "--block-signals"],
                              config=write_config(200))
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), n, janks)
        for j in janks:
            self.assertDuration(j, ms)
            self.assertEqual(j["stack_status"], "captured")
            self.assertEqual(in_app(j["stack"])[0]["function"], "jank_app_busy_work")
        self.assertEqual(len({j["fingerprint"] for j in janks}), 1)

    def test_main_thread_blocking_the_signal(self):
        n, ms = 3, 450
        records = self.run_ok(JANK_APP, ["--janks", str(n), "--jank-ms", str(ms), "--main-blocks-signals"],
                              config=write_config(200, hang_ms=400))
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), n, janks)
        for j in janks:
            self.assertDuration(j, ms)
            self.assertEqual(j["kind"], "hang")  # hang-ms 400 < 450
            # the signal waits until the main thread unblocks it: no stack,
            # or one taken as it unblocks, still inside the busy function
            self.assertIn(j["stack_status"], ("no_answer", "captured"))
            if j["stack_status"] == "captured":
                self.assertEqual(in_app(j["stack"])[0]["function"], "jank_app_busy_work")


BLOCK_MS = 1200


class BusyFrames(Base):
    def test_late_frames_do_not_overlap(self):
        """Every frame spends 40 ms in its tick: each is late, and a late
        frame counts from when it was due but never from before the previous
        one ended — 2.4 s hold at most 2.4 s of delay and 144 dropped slots."""
        records = self.run_ok(JANK_APP, ["--animate-ms", "2400", "--busy-frame-ms", "40"])
        frames = of_type(records, "frames", window="JankAppWindow")
        self.assertTrue(frames, records)
        self.assertGreater(sum(f["slow"] for f in frames), 10)
        for f in frames:
            assert_frames_invariants(self, f)


class IdleFrames(Base):
    def test_an_idle_window_draws_a_handful_of_frames(self):
        records = self.run_ok(JANK_APP, ["--idle-ms", "3000"])
        frames = of_type(records, "frames", window="JankAppWindow")
        self.assertTrue(frames, records)
        # it drew its first frames, then nothing changed: the frame clock's
        # cycles that rendered nothing are no frames
        self.assertLess(sum(f["frames"] for f in frames), 10, frames)
        for f in frames:
            assert_frames_invariants(self, f)


def block_line(out):
    """'block KIND ms=D errno=E result=R' → (D, E, R)."""
    m = re.search(r"^block \S+ ms=([0-9.]+) errno=(\d+) result=(-?\d+)$", out, re.M)
    assert m, out
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


def perf_permitted():
    try:
        level = int(open("/proc/sys/kernel/perf_event_paranoid").read())
    except OSError:
        return False
    return level <= 2 or os.geteuid() == 0


class NonInterference(Base):
    """The main thread blocked in a system call is never interrupted."""

    def plain(self, args):
        env = dict(os.environ, DISPLAY=self.x.display, **APP_ENV)
        env.pop("WAYLAND_DISPLAY", None)
        p = subprocess.run([JANK_APP] + args, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return block_line(p.stdout)

    def test_blocking_calls_run_as_without_pacer(self):
        for kind in ("usleep", "poll", "read", "waitpid", "g_usleep", "futex"):
            with self.subTest(kind=kind):
                args = ["--block", kind, "--block-ms", str(BLOCK_MS)]
                ms0, errno0, result0 = self.plain(args)
                rc, records, _, err, out = pacer_run_out(self.x.display, JANK_APP, args, write_config(700))
                self.assertEqual(rc, 0, err)
                ms1, errno1, result1 = block_line(out)
                self.assertEqual((errno1, result1), (errno0, result0))
                self.assertEqual(errno1, 0)
                for ms in (ms0, ms1):
                    self.assertGreaterEqual(ms, BLOCK_MS)
                    self.assertLess(ms, BLOCK_MS + SLACK_MS)
                janks = of_type(records, "jank")
                self.assertEqual(len(janks), 1, janks)
                j = janks[0]
                # the jank is the block (the iteration also set the block up)
                self.assertGreaterEqual(j["duration_ms"], ms1)
                self.assertLess(j["duration_ms"], ms1 + SLACK_MS)
                self.assertEqual((j["stack_status"], j["stack_method"]), ("captured", "syscall"))
                self.assertIn("jank_app_block", [f["function"] for f in in_app(j["stack"])])

    def busy_jank(self, extra_env=None):
        rc, records, _, err = pacer_run(self.x.display, JANK_APP, ["--janks", "1", "--jank-ms", "900"],
                                        config=write_config(500), extra_env=extra_env)
        self.assertEqual(rc, 0, err)
        janks = of_type(records, "jank")
        self.assertEqual(len(janks), 1, janks)
        self.assertDuration(janks[0], 900)
        self.assertEqual(janks[0]["stack_status"], "captured")
        self.assertEqual(in_app(janks[0]["stack"])[0]["function"], "jank_app_busy_work")
        return janks[0], err

    def test_busy_thread_is_sampled(self):
        j, _ = self.busy_jank()
        self.assertEqual(j["stack_method"], "perf" if perf_permitted() else "signal")

    def test_without_perf_the_signal_takes_it_and_says_so(self):
        j, err = self.busy_jank({"PACER_AGENT_NO_PERF": "1"})
        self.assertEqual(j["stack_method"], "signal")
        self.assertIn("no perf events (PACER_AGENT_NO_PERF is set)", err)


def pacer_run_out(display, program, args, config):
    """pacer_run that also returns the program's stdout."""
    import json
    workdir = tempfile.mkdtemp(prefix="pacer-agent-test-")
    out = os.path.join(workdir, "records.jsonl")
    cmd = [os.environ["PACER"], "run", "--out", out, "--config", config, "--", program] + list(args)
    env = dict(os.environ, DISPLAY=display, **APP_ENV)
    env.pop("WAYLAND_DISPLAY", None)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=90)
    records = [json.loads(line) for line in open(out)] if os.path.exists(out) else []
    return p.returncode, records, None, p.stderr, p.stdout


if __name__ == "__main__":
    unittest.main()
