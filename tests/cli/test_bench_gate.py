"""`pacer bench` as a CI gate, with real runs of the demo shop app (GTK4,
on the private Xvfb that pacer bench starts itself when there is no
display) against the demo API server.

What it holds the gate to:
  - the same build, run alternately with itself (--vs) for 20 pairs, does
    not fail; then 20 tries with different seeds, each comparing a baseline
    of 15 of those runs with another 15 picked by the seed (and the
    bootstrap seeded by it), all exit 0. The tries reuse the recorded runs
    instead of 20 × 15 new ones; every sample is a real run of the demo;
  - a build that sleeps 100 ms before its first window
    (SHOP_STARTUP_DELAY_MS=100, examples/shop-app.c) exits 1 naming cold_ms
    and first_screen_ms, and no page metric takes any of the 100 ms (the
    delay is before any page exists, so no page's own figures change; a page
    may still be flagged for a few ms when a loaded machine runs the first
    draw after the sleep slower — seen on CI: the splash's +5.6 ms over
    72 ms —, never for a share of the delay);
  - the samples are the records' values (ground truth: the records files
    the runs left with --keep), pairs run a b, b a, a b..., the environment is
    this machine's;
  - a baseline from pacerd (--baseline server:VERSION) holds exactly the
    values the runs uploaded;
  - reports: JUnit XML read by an independent parser, Markdown;
  - --help names every option the parser takes; usage errors, failing and
    hanging programs exit 2 with a reason.

No assertion is on a duration: figures are only compared with each other
or with the records they came from.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
from agentlib import SHOP_APP, SHOP_CONFIG, ApiServer, read_jsonl, skip_unless  # noqa: E402

PACER = os.environ["PACER"]
PACERD = os.environ["PACERD"]
SOURCE = os.environ["PACER_SOURCE_ROOT"]
DELAYS = {"/api/config": 200, "/api/list": 300, "/api/test1": 300}
PAIRS = 20       # same build against itself
BASELINE = 15    # runs in a baseline
TRIES = 20       # no-false-alarm tries
SLOW_PAIRS = 15  # the slower build against the baseline build
DELAY_MS = 100   # the slower build's SHOP_STARTUP_DELAY_MS
MORE_PAIRS = 40  # … when the gate says 15 pairs cannot see 100 ms on this machine now
# As root (as `make test` is), the runs take the CPU from the other work of
# a shared machine, which is what --nice is for; otherwise they run as they
# are, noisier.
NICE = ["--nice", "-10"] if os.geteuid() == 0 else []


def bench_env():
    """No display: pacer bench must start its own Xvfb."""
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def bench(*args, timeout=900):
    return subprocess.run([PACER, "bench"] + [str(a) for a in args], env=bench_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def regressions(stdout):
    """The metrics of the REGRESSION lines."""
    return set(re.findall(r"^REGRESSION (\S+):", stdout, flags=re.M))


ROW = re.compile(r"^(\S+) +(\d+)/(\d+) +(\S+) +(\S+) +(\S+) +(\S+) +\[ *(\S+), *(\S+)\] +(\S+) +(\S+) +(.*)$",
                 flags=re.M)


def table(stdout):
    """The comparison table: name → {base, cur, shift, p, detect, verdict}."""
    rows = {}
    for m in ROW.finditer(stdout):
        detect = float(m.group(11)) if re.match(r"^([0-9.]+|inf)$", m.group(11)) else float("nan")
        rows[m.group(1)] = {"base": m.group(4), "cur": m.group(5), "shift": m.group(6), "p": m.group(10),
                            "detect": detect, "verdict": m.group(12)}
    return rows


def pages_given_the_delay(stdout):
    """The page metrics flagged with a shift of 10 ms or more: a tenth of
    SHOP_STARTUP_DELAY_MS, which no page's own figures include."""
    rows = table(stdout)
    return {m for m in regressions(stdout) if "." in m and float(rows[m]["shift"]) >= DELAY_MS / 10}


def junit(path):
    """(testcases by name, suite attributes) of a JUnit file."""
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    return cases, suite.attrib, root.attrib


def write_set(path, doc, runs):
    """A samples file holding the runs `runs` (indexes) of doc."""
    out = {"pacer_bench": 1, "env": doc["env"], "runs": [doc["runs"][k] for k in runs],
           "metrics": {m: [v[k] for k in runs] for m, v in doc["metrics"].items()}}
    with open(path, "w") as f:
        json.dump(out, f)


def first_of(records, t, **match):
    for r in records:
        if r.get("type") == t and all(r.get(k) == v for k, v in match.items()):
            return r
    return None


class BenchGate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
        cls.work = tempfile.mkdtemp(prefix="pacer-bench-test-")
        cls.server = ApiServer(DELAYS).__enter__()
        cls.app = [SHOP_APP, "--api", cls.server.base]
        cls.app_text = " ".join(cls.app)
        w = cls.work
        # The same build against itself, alternately.
        cls.same = bench(*NICE, "--runs", PAIRS, "--config", SHOP_CONFIG, "--vs", cls.app_text,
                         "--save", w + "/again.json", "--save-vs", w + "/base.json", "--keep", w + "/keep",
                         "--junit", w + "/same.xml", "--report-md", w + "/same.md", "--", *cls.app)
        # The build that is 100 ms slower before its first window, against the baseline build.
        cls.slow = bench(*NICE, "--runs", SLOW_PAIRS, "--config", SHOP_CONFIG, "--vs", cls.app_text,
                         "--save", w + "/slow.json", "--save-vs", w + "/slowbase.json",
                         "--junit", w + "/slow.xml", "--report-md", w + "/slow.md",
                         "--", "env", "SHOP_STARTUP_DELAY_MS=%d" % DELAY_MS, *cls.app)
        cls.first_slow = cls.slow
        if not {"cold_ms", "first_screen_ms"} <= regressions(cls.slow.stdout):
            # The gate may say that 15 pairs cannot see 100 ms on this
            # machine now (the test below holds it to that); given more
            # runs it must.
            print("again with %d pairs:\n%s" % (MORE_PAIRS, cls.slow.stdout))
            cls.slow = bench(*NICE, "--runs", MORE_PAIRS, "--config", SHOP_CONFIG, "--vs", cls.app_text,
                             "--junit", w + "/slow.xml", "--report-md", w + "/slow.md",
                             "--", "env", "SHOP_STARTUP_DELAY_MS=%d" % DELAY_MS, *cls.app)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.work, ignore_errors=True)

    def load(self, name):
        with open(os.path.join(self.work, name)) as f:
            return json.load(f)

    # ---- the same build ----

    def test_same_build_interleaved_exits_0(self):
        self.assertEqual(self.same.returncode, 0, self.same.stdout + self.same.stderr)
        self.assertIn("no regression among", self.same.stdout)
        self.assertEqual(regressions(self.same.stdout), set())
        cases, suite, _ = junit(os.path.join(self.work, "same.xml"))
        self.assertEqual(suite["failures"], "0")
        for m in ("cold_ms", "first_screen_ms", "app_cost_ms", "full_display_ms", "ShopHomeWindow.initial_draw_ms",
                  "ShopHomeWindow.api_load_ms", "ShopHomeWindow.total_ms", "ShopMerchantPage.api_load_ms",
                  "ShopMerchantPage[2].api_load_ms", "ShopSplashWindow.initial_draw_ms"):
            self.assertIn(m, cases)
            self.assertIsNone(cases[m].find("failure"), m)
        self.assertEqual(cases["cold_ms"].get("classname"), "pacer.bench.startup")
        self.assertEqual(cases["ShopHomeWindow.total_ms"].get("classname"), "pacer.bench.page.ShopHomeWindow")

    def test_no_false_alarm_in_20_tries(self):
        base, again = self.load("base.json"), self.load("again.json")
        self.assertEqual(len(base["runs"]), PAIRS)
        self.assertEqual(len(again["runs"]), PAIRS)
        # A baseline of 15 runs, spread over the whole recording.
        b15 = os.path.join(self.work, "b15.json")
        write_set(b15, base, sorted(random.Random(0).sample(range(PAIRS), BASELINE)))
        passed, shifts = 0, set()
        for seed in range(1, TRIES + 1):
            cur = os.path.join(self.work, "cur%d.json" % seed)
            write_set(cur, again, sorted(random.Random(seed).sample(range(PAIRS), BASELINE)))
            p = bench("--baseline", b15, "--current", cur, "--seed", seed, timeout=120)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            self.assertNotIn("REGRESSION", p.stdout if p.returncode == 0 else "")
            passed += p.returncode == 0
            row = re.search(r"^cold_ms +15/15 +\S+ +\S+ +(\S+) .*\[ *(\S+), *(\S+)\]", p.stdout, flags=re.M)
            self.assertTrue(row, p.stdout)
            shifts.add(row.groups())
            if p.returncode != 0:
                print("try %d failed:\n%s" % (seed, p.stdout))
        self.assertEqual(passed, TRIES, "the same build failed the gate in %d of %d tries" % (TRIES - passed, TRIES))
        # the tries are different comparisons, not one repeated
        self.assertGreater(len(shifts), TRIES // 2)

    # ---- the slower build ----

    def test_slower_start_fails_naming_cold_and_first_screen(self):
        first = self.first_slow
        missed = {"cold_ms", "first_screen_ms"} - regressions(first.stdout)
        if first is not self.slow:
            # the first try missed one: allowed only when the gate said that
            # 15 pairs could not see 100 ms on this machine then
            rows = table(first.stdout)
            self.assertTrue(missed)
            for m in missed:
                self.assertGreater(rows[m]["detect"], 100, "missed %s although it could see 100 ms:\n%s"
                                   % (m, first.stdout))
                self.assertRegex(first.stdout, r"warning: %s: (the differences within its pairs spread|too few runs)"
                                 % re.escape(m))
        else:
            self.assertFalse(missed, first.stdout)
        self.assertEqual(pages_given_the_delay(first.stdout), set(),
                         "page metrics took some of the delay although no page changed:\n" + first.stdout)
        p = self.slow
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        found = regressions(p.stdout)
        self.assertIn("cold_ms", found, p.stdout)
        self.assertIn("first_screen_ms", found, p.stdout)
        self.assertEqual(pages_given_the_delay(p.stdout), set(),
                         "page metrics took some of the delay although no page changed:\n" + p.stdout)
        for line in p.stdout.splitlines():
            if line.startswith("REGRESSION cold_ms:"):
                # which metric, by how much, with the interval
                self.assertRegex(line, r"\+[0-9.]+ ms \(\+[0-9.]+ %\), 95 % CI [-+][0-9.]+ … \+[0-9.]+ ms")
        cases, suite, top = junit(os.path.join(self.work, "slow.xml"))
        failed = {n for n, c in cases.items() if c.find("failure") is not None}
        self.assertEqual(failed, found)
        self.assertEqual(int(suite["failures"]), len(found))
        self.assertEqual(int(top["failures"]), len(found))
        self.assertIn("cold_ms", cases["cold_ms"].find("failure").get("message"))

    def test_paired_replay_gives_the_same_verdict(self):
        w = self.work
        p = bench("--baseline", w + "/slowbase.json", "--current", w + "/slow.json", "--paired", timeout=120)
        self.assertEqual(p.returncode, self.first_slow.returncode, p.stdout)
        self.assertEqual(regressions(p.stdout), regressions(self.first_slow.stdout))
        self.assertEqual(table(p.stdout), table(self.first_slow.stdout))

    def test_markdown_reports(self):
        with open(os.path.join(self.work, "slow.md")) as f:
            md = f.read()
        self.assertTrue(md.startswith("### pacer bench: "), md[:200])
        self.assertRegex(md, r"\| cold\\_ms \| [0-9.]+ \| [0-9.]+ \| \+[0-9.]+ ms \(\+[0-9.]+ %\) \| .* \| \*\*regression\*\* \|")
        self.assertRegex(md, r"\| ShopHomeWindow\.total\\_ms \| .* \| ok \|")
        self.assertIn("<details><summary>Environment</summary>", md)
        with open(os.path.join(self.work, "same.md")) as f:
            self.assertTrue(f.read().startswith("### pacer bench: no regression"))

    # ---- what the samples are ----

    def test_runs_alternate(self):
        keep = os.path.join(self.work, "keep")
        starts = []
        for k in range(1, PAIRS + 1):
            for side in "ab":
                recs = read_jsonl(os.path.join(keep, "%s%02d.jsonl" % (side, k)))
                cold = first_of(recs, "startup", kind="cold")
                self.assertIsNotNone(cold, "%s%02d" % (side, k))
                starts.append((cold["ts"], side, cold["pid"]))
        # pairs in the order a b, b a, a b, ...: each side first as often
        self.assertEqual([s for _, s, _ in sorted(starts)],
                         [x for k in range(PAIRS) for x in (("a", "b") if k % 2 == 0 else ("b", "a"))])
        self.assertEqual(len({pid for _, _, pid in starts}), 2 * PAIRS)
        # warm-ups ran first, one of each, and are not samples
        self.assertTrue(os.path.exists(os.path.join(keep, "aw01.jsonl")))
        self.assertTrue(os.path.exists(os.path.join(keep, "bw01.jsonl")))

    def test_samples_are_the_records_values(self):
        keep = os.path.join(self.work, "keep")
        for name, side in (("base.json", "a"), ("again.json", "b")):
            doc = self.load(name)
            for k in range(PAIRS):
                recs = read_jsonl(os.path.join(keep, "%s%02d.jsonl" % (side, k + 1)))
                cold = first_of(recs, "startup", kind="cold")
                for m in ("cold_ms", "first_screen_ms", "app_cost_ms", "full_display_ms"):
                    self.assertEqual(doc["metrics"][m][k], cold[m], "%s run %d %s" % (name, k + 1, m))
                home = first_of(recs, "page", page="ShopHomeWindow")
                self.assertTrue(home["main"])
                self.assertEqual(doc["metrics"]["ShopHomeWindow.total_ms"][k], home["total_ms"])
                # the two merchant pages, in the order they were created
                merchants = sorted((r for r in recs if r.get("page") == "ShopMerchantPage"),
                                   key=lambda r: (r["ts"], r["instance"]))
                self.assertEqual(len(merchants), 2)
                self.assertEqual(doc["metrics"]["ShopMerchantPage.api_load_ms"][k], merchants[0]["api_load_ms"])
                self.assertEqual(doc["metrics"]["ShopMerchantPage[2].api_load_ms"][k], merchants[1]["api_load_ms"])
                # the run ended at the main page's record (no --auto-exit: pacer ended it)
                self.assertLess(doc["runs"][k]["wall_ms"], 30000)

    def test_environment_and_noise_notes(self):
        doc = self.load("again.json")
        env = doc["env"]
        self.assertEqual(env["kernel"], os.uname().release)
        self.assertEqual(env["cpus"], os.cpu_count())
        version = subprocess.run([PACER, "--version"], stdout=subprocess.PIPE, text=True).stdout.split()[1]
        self.assertEqual(env["pacer"], version)
        if shutil.which("pkg-config"):
            gtk = subprocess.run(["pkg-config", "--modversion", "gtk4"], stdout=subprocess.PIPE, text=True).stdout.strip()
            if gtk:
                self.assertEqual(env["gtk"], gtk)
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
        if model:
            self.assertEqual(env["cpu_model"], model)
        self.assertEqual(env["program"], self.app_text)
        for r in doc["runs"]:
            self.assertIn("load1", r)
            self.assertIn("background", r)
            self.assertGreaterEqual(r["background"], 0)
            self.assertGreater(r["cpu_ms"], 0)
            self.assertIn("start", r)
        self.assertRegex(self.same.stdout, r"load [0-9.]+–[0-9.]+; other processes busy")

    def test_min_detectable(self):
        base = os.path.join(self.work, "base.json")
        figures = []
        for runs in (5, 15, 60):
            p = bench("--baseline", base, "--min-detectable", "--runs", runs, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            row = re.search(r"^cold_ms +%d +(\S+) .* ([0-9.]+)(?: !)?$" % PAIRS, p.stdout, flags=re.M)
            self.assertTrue(row, p.stdout)
            figures.append(float(row.group(2)))
        # more current runs, a smaller shift found
        self.assertGreater(figures[0], figures[1])
        self.assertGreater(figures[1], figures[2])

    # ---- a baseline from pacerd ----

    def test_server_baseline(self):
        w = tempfile.mkdtemp(prefix="pacer-bench-server-", dir=self.work)
        with open(w + "/admin", "w") as f:
            f.write("admin-%s\n" % os.urandom(12).hex())
        key = "key-%s" % os.urandom(12).hex()
        with open(w + "/keys", "w") as f:
            f.write("shop %s\n" % key)
        with open(w + "/key", "w") as f:
            f.write(key + "\n")

        def start_pacerd():
            # a rollup lag of 10 minutes: the records stay after the rollup
            # mark (read from the raw table) until pacerd stops
            d = subprocess.Popen([PACERD, "--listen", "127.0.0.1:0", "--db", w + "/pacer.db", "--admin-token-file",
                                  w + "/admin", "--keys-file", w + "/keys", "--rollup-lag", "600000"],
                                 stdout=subprocess.PIPE, text=True)
            return d, d.stdout.readline().split("listening on ", 1)[1].strip()

        d, url = start_pacerd()
        try:
            admin = open(w + "/admin").read().strip()
            up = bench("--runs", 4, "--warmup", 0, "--config", SHOP_CONFIG, "--server", url, "--key-file", w + "/key",
                       "--app", "shop", "--app-version", "1.0", "--spool", w + "/spool.db", "--save", w + "/up.json",
                       "--keep", w + "/keep", "--", *self.app)
            self.assertEqual(up.returncode, 0, up.stderr)

            def get(path, token=admin):
                rq = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + token})
                try:
                    with urllib.request.urlopen(rq, timeout=30) as r:
                        return r.status, json.loads(r.read())
                except urllib.error.HTTPError as e:
                    return e.code, json.loads(e.read())

            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                st, doc = get("/api/v1/samples?app=shop&version=1.0")
                if st == 200 and sum(r["type"] == "startup" for r in doc["records"]) == 4:
                    break
                time.sleep(0.2)
            self.assertEqual(st, 200, doc)
            # the endpoint returns the records the runs wrote (ground truth: --keep)
            local = []
            for k in (1, 2, 3, 4):
                local += read_jsonl("%s/keep/r%02d.jsonl" % (w, k))
            want = sorted((r["session"], r["cold_ms"]) for r in local if r["type"] == "startup")
            got = sorted((r["session"], r["cold_ms"]) for r in doc["records"] if r["type"] == "startup")
            self.assertEqual(got, want)
            want = sorted((r["session"], r["page"], r.get("total_ms", -1)) for r in local if r["type"] == "page")
            got = sorted((r["session"], r["page"], r.get("total_ms", -1)) for r in doc["records"] if r["type"] == "page")
            self.assertEqual(got, want)
            self.assertFalse(doc["truncated"])
            st, small = get("/api/v1/samples?app=shop&version=1.0&limit=2")
            self.assertEqual(st, 200)
            self.assertEqual(sum(r["type"] == "startup" for r in small["records"]), 2)
            self.assertTrue(small["truncated"])
            self.assertEqual(get("/api/v1/samples?app=shop")[0], 400)
            self.assertEqual(get("/api/v1/samples?app=shop&version=1.0&limit=0")[0], 400)
            self.assertEqual(get("/api/v1/samples?app=shop&version=1.0", token=key)[0], 403)
            self.assertEqual(get("/api/v1/samples?app=shop&version=1.0", token="nope")[0], 401)
            st, none = get("/api/v1/samples?app=shop&version=2.0")
            self.assertEqual((st, none["records"]), (200, []))

            # restarted, pacerd has moved the records into the rollups and
            # their keys table: the same answer through it
            d.terminate()
            d.wait(10)
            d, url = start_pacerd()
            st, again = get("/api/v1/samples?app=shop&version=1.0")
            self.assertEqual(st, 200)
            self.assertEqual(sorted(map(json.dumps, again["records"])), sorted(map(json.dumps, doc["records"])))

            # the same values through pacer bench: every shift is exactly 0
            p = bench("--baseline", "server:1.0", "--server", url, "--token-file", w + "/admin", "--app", "shop",
                      "--current", w + "/up.json", timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            rows = re.findall(r"^(\S+) +4/4 +(\S+) +(\S+) +(\S+) ", p.stdout, flags=re.M)
            self.assertGreater(len(rows), 5, p.stdout)
            for name, b, c, shift in rows:
                self.assertEqual((b, shift), (c, "+0.0"), name)
            self.assertIn("pacerd: app shop, version 1.0", p.stdout)
            # errors name the server's answer
            p = bench("--baseline", "server:1.0", "--server", url, "--app", "shop", "--current", w + "/up.json",
                      timeout=60)
            self.assertEqual(p.returncode, 2)
            self.assertIn("admin token", p.stderr)
            with open(w + "/wrong", "w") as f:
                f.write("wrong\n")
            p = bench("--baseline", "server:1.0", "--server", url, "--token-file", w + "/wrong", "--app", "shop",
                      "--current", w + "/up.json", timeout=60)
            self.assertEqual(p.returncode, 2)
            self.assertIn("HTTP 401", p.stderr)
            p = bench("--baseline", "server:9.9", "--server", url, "--token-file", w + "/admin", "--app", "shop",
                      "--current", w + "/up.json", timeout=60)
            self.assertEqual(p.returncode, 2)
            self.assertIn("no page or start-up records", p.stderr)
        finally:
            d.terminate()
            d.wait(10)

    # ---- runs that end otherwise ----

    def test_until_conditions(self):
        w = tempfile.mkdtemp(prefix="pacer-bench-until-", dir=self.work)
        # the lazy merchant page (selected 1.5 s after the home window) reports after the main page
        p = bench("--runs", 1, "--warmup", 0, "--config", SHOP_CONFIG, "--until", "ShopMerchantPage:2",
                  "--until", "ShopHomeWindow.total_ms", "--keep", w + "/two", "--", *self.app)
        self.assertEqual(p.returncode, 0, p.stderr)
        recs = read_jsonl(w + "/two/r01.jsonl")
        merchants = [r for r in recs if r.get("page") == "ShopMerchantPage"]
        self.assertEqual([r["status"] for r in merchants], ["complete", "complete"])
        self.assertIn("ShopMerchantPage[2].total_ms", p.stdout)
        # exit: the app closes itself
        p = bench("--runs", 1, "--warmup", 0, "--config", SHOP_CONFIG, "--until", "exit", "--keep", w + "/exit",
                  "--", *self.app, "--auto-exit", "--linger-ms", "0")
        self.assertEqual(p.returncode, 0, p.stderr)
        # a program that exits before the main page reported
        p = bench("--runs", 1, "--warmup", 0, "--", "sh", "-c", "echo about to fail >&2; exit 3", timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("run r01: the program exited with status 3 before its record of the main page", p.stderr)
        self.assertIn("about to fail", p.stderr)
        kept = re.search(r"the runs' records and output are kept in (\S+)", p.stderr)
        self.assertTrue(kept, p.stderr)
        self.assertIn("about to fail", open(os.path.join(kept.group(1), "r01.log")).read())
        shutil.rmtree(kept.group(1))
        # a program that never reports
        p = bench("--runs", 1, "--warmup", 0, "--timeout", 2, "--", "sleep", "30", timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("gave no record of the main page within 2 s", p.stderr)
        p = bench("--runs", 1, "--warmup", 0, "--timeout", 2, "--until", "exit", "--", "sleep", "30", timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("did not exit within 2 s", p.stderr)


class Offline(unittest.TestCase):
    """What needs no app run."""

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="pacer-bench-offline-")

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def synthetic(self, name, medians, spread, n=15, seed=1, gtk="4.8.3"):
        rng = random.Random(seed)
        metrics = {m: [round(med + rng.uniform(-spread, spread), 3) for _ in range(n)] for m, med in medians.items()}
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            json.dump({"pacer_bench": 1, "env": {"gtk": gtk, "pacer": "0.1.0"}, "runs": [{} for _ in range(n)],
                       "metrics": metrics}, f)
        return path

    def test_help_names_every_option(self):
        p = subprocess.run([PACER, "bench", "--help"], stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0)
        src = open(os.path.join(SOURCE, "src", "cli", "cmd_bench.c")).read()
        parsed = set(re.findall(r'"(--[a-z][a-z0-9-]*)"', src.split("static int parse_options", 1)[1]))
        self.assertGreater(len(parsed), 20)
        for opt in sorted(parsed):
            self.assertRegex(p.stdout, r"(?m)^  %s\b" % re.escape(opt), "--help does not explain " + opt)
        self.assertIn("Exit status: 0 no regression, 1 a regression", p.stdout)
        top = subprocess.run([PACER, "--help"], stdout=subprocess.PIPE, text=True).stdout
        self.assertRegex(top, r"(?m)^  bench ")

    def test_usage_errors(self):
        cases = [
            ([], "no program given"),
            (["--runs", "0", "--", "true"], "--runs: expected a count"),
            (["--runs"], "--runs needs a value"),
            (["--bogus", "--", "true"], "unknown option '--bogus'"),
            (["--vs", "true", "--baseline", "x.json", "--", "true"], "choose one"),
            (["--current", "x.json"], "--current needs a --baseline"),
            (["--save-vs", "x.json", "--", "true"], "it needs --vs"),
            (["--baseline", "server:1.0", "--current", "x.json"], "needs --server URL"),
            (["--until", "Shop.bogus_ms", "--", "true"], "a page metric"),
            (["--until", "Page:0", "--", "true"], "a count of records"),
            (["--vs", "'unclosed", "--", "true"], "unclosed '"),
            (["--alpha", "2", "--", "true"], "--alpha: expected a probability"),
            (["--baseline", "/nonexistent/b.json", "--", "true"], "/nonexistent/b.json: No such file"),
            (["--paired", "--", "true"], "--paired is for"),
            (["--nice", "-30", "--", "true"], "--nice: expected a niceness from -20 to 19"),
            (["--baseline", "x.json", "--min-detectable", "--nice", "5"], "concern runs"),
        ]
        for args, message in cases:
            p = subprocess.run([PACER, "bench"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=bench_env(), timeout=60)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr, args)

    def test_bad_baseline_files(self):
        good = self.synthetic("good.json", {"cold_ms": 700}, 10)
        cases = [
            ('{"pacer_bench": 1, "runs": [{}], "metrics": {"cold_ms": [1, 2]}}', "metrics.cold_ms: 2 values for 1 runs"),
            ('{"pacer_bench": 2, "runs": [], "metrics": {}}', "format version 1 expected"),
            ('{"runs": [], "metrics": {}}', "not a pacer bench file"),
            ('{"pacer_bench": 1, "runs": [{}], "metrics": {"cold_ms": [-1]}}', "metrics.cold_ms[0]: negative"),
            ('{"pacer_bench": 1, "runs": [{}], "metrics": {"cold_ms": ["x"]}}', "expected a finite number"),
            ('{"pacer_bench": 1, "runs": [{"wall_ms": "x"}], "metrics": {}}', "runs[0].wall_ms: expected a finite number"),
            ('{"pacer_bench": 1, "runs": [], "metrics": {}', "byte 44: expected ',' or '}'"),
            ('[1, 2]', "expected a JSON object"),
        ]
        for text, message in cases:
            path = os.path.join(self.work, "bad.json")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([PACER, "bench", "--baseline", path, "--current", good], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, text)
            self.assertIn(message, p.stderr, text)
            self.assertIn(path, p.stderr)

    def test_verdicts_on_known_samples(self):
        """Synthetic samples whose shifts are known exactly: +100 ms on one
        metric, +3 ms (under the 5 ms floor) on another, -100 on a third,
        none on the rest."""
        base = self.synthetic("b.json", {"cold_ms": 700, "first_screen_ms": 200, "X.total_ms": 300,
                                         "X.initial_draw_ms": 50}, 10, seed=1)
        cur = self.synthetic("c.json", {"cold_ms": 800, "first_screen_ms": 100, "X.total_ms": 303,
                                        "X.initial_draw_ms": 50}, 10, seed=2)
        p = subprocess.run([PACER, "bench", "--baseline", base, "--current", cur, "--junit",
                            os.path.join(self.work, "j.xml")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(regressions(p.stdout), {"cold_ms"})
        self.assertRegex(p.stdout, r"(?m)^improved first_screen_ms:")
        self.assertRegex(p.stdout, r"(?m)^X\.total_ms .* ok")
        # a lower threshold and floor let the 3 ms through
        p = subprocess.run([PACER, "bench", "--baseline", base, "--current", cur, "--floor", "1", "--threshold", "0.5"],
                           stdout=subprocess.PIPE, text=True)
        self.assertEqual(regressions(p.stdout), {"cold_ms", "X.total_ms"})
        # --metric narrows the gate
        p = subprocess.run([PACER, "bench", "--baseline", base, "--current", cur, "--metric", "X.*"],
                           stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertNotIn("cold_ms", p.stdout)
        # the same samples and seed print the same figures; another seed other intervals
        a = subprocess.run([PACER, "bench", "--baseline", base, "--current", cur], stdout=subprocess.PIPE, text=True)
        b = subprocess.run([PACER, "bench", "--baseline", base, "--current", cur], stdout=subprocess.PIPE, text=True)
        c = subprocess.run([PACER, "bench", "--baseline", base, "--current", cur, "--seed", "7"],
                           stdout=subprocess.PIPE, text=True)
        self.assertEqual(a.stdout, b.stdout)
        self.assertNotEqual(a.stdout, c.stdout)

    def test_noise_and_environment_warnings(self):
        # spread ±300 ms around 700: a 35 ms gate cannot be seen with 15 runs
        base = self.synthetic("noisy.json", {"cold_ms": 700}, 300, seed=3)
        cur = self.synthetic("cur.json", {"cold_ms": 700}, 300, seed=4, gtk="4.12.5")
        p = subprocess.run([PACER, "bench", "--baseline", base, "--current", cur, "--report-md",
                            os.path.join(self.work, "r.md")], stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"warning: cold_ms: the baseline's noise \(σ ≈ [0-9.]+ ms\) hides shifts below "
                                   r"[0-9.]+ ms, above its gate of [0-9.]+ ms; about [0-9]+ runs on each side")
        self.assertIn("warning: the baseline was taken with GTK 4.8.3, these runs with 4.12.5", p.stdout)
        with open(os.path.join(self.work, "r.md")) as f:
            self.assertIn("**Warnings**", f.read())
        # too few runs for any significance (4 against 4: p ≥ 1/70 > 0.01): said so
        few = self.synthetic("few.json", {"cold_ms": 700}, 10, n=4)
        p = subprocess.run([PACER, "bench", "--baseline", few, "--current", few, "--alpha", "0.01"],
                           stdout=subprocess.PIPE, text=True)
        self.assertIn("too few runs for any shift to be significant", p.stdout)

    def test_split_of_vs(self):
        """--vs is split as a shell splits words: check with a program that
        prints its arguments (a run that fails prints the program's output)."""
        if not shutil.which("Xvfb"):
            self.skipTest("Xvfb is not installed")  # BenchGate fails the file for it in CI
        p = subprocess.run([PACER, "bench", "--runs", "1", "--warmup", "0", "--timeout", "20",
                            "--vs", """sh -c 'printf "[%s]" "$@" >&2; exit 4' x 'a b' "c\\"d" e\\ f""", "--", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=bench_env(), timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn('[a b][c"d][e f]', p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
