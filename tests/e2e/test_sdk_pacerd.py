"""The SDK and pacerd together, on loopback: records produced by a running
program reach pacerd exactly once whatever happens to the server (killed with
SIGKILL mid-upload and restarted; down for a whole run), a config changed on
the server reaches a running program (its thresholds, and a page type it
adds), and the demo app under `pacer run --server` shows up in the query
API with the numbers it recorded."""
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
from pacerd_harness import ADMIN, KEYS, Pacerd  # noqa: E402

PACER = os.environ["PACER"]
PROBE = os.environ["UPLOAD_PROBE"]


def probe(server, spool, *mode, timeout=90):
    env = dict(os.environ, PACER_KEY=KEYS["shop"])
    return subprocess.Popen([PROBE, server, spool, "shop"] + list(mode), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def key_file(directory):
    """The shop key in a file, for `pacer run --key-file`."""
    path = os.path.join(directory, "shop.key")
    with open(path, "w") as f:
        f.write(KEYS["shop"] + "\n")
    os.chmod(path, 0o600)
    return path


def page_count(d, page):
    for p in d.query("/api/v1/pages?app=shop")["pages"]:
        if p["page"] == page:
            return p["count"]
    return 0


class SdkToPacerd(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.spool = os.path.join(self.tmp.name, "spool.db")
        self.d = Pacerd()

    def tearDown(self):
        self.d.close()
        self.tmp.cleanup()

    def finish(self, p):
        out, err = p.communicate(timeout=90)
        self.assertEqual(p.returncode, 0, out + err)
        return out

    def test_sigkill_mid_upload_exactly_once(self):
        port = self.d.port
        p = probe(self.d.base, self.spool, "pages", "300", "10")   # ~3 s of records
        time.sleep(1.0)
        self.d.kill(9)                       # mid-upload
        time.sleep(0.7)
        self.d.start(port=port)              # same address, same database
        out = self.finish(p)
        self.assertNotIn("retries=0", out)   # uploads did fail while it was down
        # what the run could not deliver before it exited waits in the spool:
        # the next run sends it first
        for _ in range(5):
            if page_count(self.d, "ProbeWindow") >= 300:
                break
            self.finish(probe(self.d.base, self.spool, "pages", "0", "0"))
        self.assertEqual(page_count(self.d, "ProbeWindow"), 300)

    def test_server_down_for_a_whole_run(self):
        port = self.d.port
        self.d.kill(9)
        out = self.finish(probe(self.d.base, self.spool, "pages", "40", "5"))
        self.assertIn("batches_sent=0", out)
        self.d.start(port=port)
        self.finish(probe(self.d.base, self.spool, "pages", "10", "5"))
        self.assertEqual(page_count(self.d, "ProbeWindow"), 50)

    def test_config_change_reaches_running_app(self):
        v1 = '<pacer><page id="Other"/><upload config-poll-ms="200"/></pacer>'
        v2 = '<pacer><page id="LatePage"/><upload config-poll-ms="200"/></pacer>'
        self.d.request("PUT", "/v1/config/shop", v1, token=ADMIN, content_type="application/xml")
        p = probe(self.d.base, self.spool, "await", "LatePage", "30")
        time.sleep(1.5)
        self.assertIsNone(p.poll(), "LatePage was measured before the server's config named it")
        status, _, body = self.d.request("PUT", "/v1/config/shop", v2, token=ADMIN,
                                         content_type="application/xml")
        self.assertIn(status, (200, 201, 204), body)
        out = self.finish(p)
        self.assertRegex(out, r"configs=[2-9]")


class DemoAppToPacerd(unittest.TestCase):
    def test_demo_app_under_pacer_run_server(self):
        from agentlib import SHOP_APP, SHOP_CONFIG, APP_ENV, ApiServer, Xvfb, read_jsonl
        d = Pacerd()
        tmp = tempfile.TemporaryDirectory()
        try:
            out = os.path.join(tmp.name, "records.jsonl")
            with Xvfb() as x, ApiServer({"/api/config": 200, "/api/list": 300, "/api/test1": 300}) as api:
                env = dict(os.environ, DISPLAY=x.display, **APP_ENV)
                env.pop("WAYLAND_DISPLAY", None)
                p = subprocess.run([PACER, "run", "--config", SHOP_CONFIG, "--out", out, "--app", "shop",
                                    "--app-version", "e2e", "--server", d.base, "--key-file", key_file(tmp.name),
                                    "--spool", os.path.join(tmp.name, "spool.db"), "--",
                                    SHOP_APP, "--api", api.base, "--auto-exit"],
                                   env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            records = read_jsonl(out)
            # the app's four requests, none of the uploader's
            nets = [r for r in records if r["type"] == "net"]
            self.assertEqual(len(nets), 4, nets)
            self.assertTrue(all(n["url"].startswith(api.base) for n in nets), nets)
            pages = {r["page"]: r for r in records if r["type"] == "page"}
            self.assertIn("ShopHomeWindow", pages)
            got = {p["page"]: p for p in d.query("/api/v1/pages?app=shop&version=e2e")["pages"]}
            home = got["ShopHomeWindow"]
            self.assertEqual(home["count"], 1)
            self.assertEqual(got["ShopMerchantPage"]["count"], 2)
            # one page load: every percentile is that load, within DDSketch's 1 %
            want = pages["ShopHomeWindow"]["total_ms"]
            for q in ("p50", "p90", "p99"):
                self.assertAlmostEqual(home["metrics"]["total_ms"][q], want, delta=want * 0.01)
            cold = [r for r in records if r["type"] == "startup" and r["kind"] == "cold"][0]
            st = {g["kind"]: g for g in d.query("/api/v1/startup?app=shop&version=e2e")["startup"]}
            self.assertEqual(st["cold"]["count"], 1)
            self.assertAlmostEqual(st["cold"]["metrics"]["cold_ms"]["p50"], cold["cold_ms"],
                                   delta=cold["cold_ms"] * 0.01)
        finally:
            d.close()
            tmp.cleanup()


    def test_key_reaches_the_app_not_its_children(self):
        """The key given in $PACER_KEY reaches the measured app (its records
        arrive) but never its command line or environment; the descriptor
        it came through is closed once read, and the children the app
        spawns (shop-app --children) inherit neither key nor descriptor."""
        from agentlib import SHOP_APP, SHOP_CONFIG, APP_ENV, ApiServer, Xvfb
        d = Pacerd()
        tmp = tempfile.TemporaryDirectory()
        key = KEYS["shop"].encode()
        try:
            with Xvfb() as x, ApiServer({"/api/config": 200, "/api/list": 300, "/api/test1": 300}) as api:
                env = dict(os.environ, DISPLAY=x.display, PACER_KEY=KEYS["shop"], **APP_ENV)
                env.pop("WAYLAND_DISPLAY", None)
                p = subprocess.Popen([PACER, "run", "--config", SHOP_CONFIG, "--out",
                                      os.path.join(tmp.name, "records.jsonl"), "--app", "shop",
                                      "--app-version", "secrets", "--server", d.base,
                                      "--spool", os.path.join(tmp.name, "spool.db"), "--",
                                      SHOP_APP, "--api", api.base, "--children", "--auto-exit"],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                seen_closed = False
                children = {}
                deadline = time.monotonic() + 60
                while p.poll() is None and time.monotonic() < deadline:
                    # pacer run, then (same pid) the app it execs: the key never
                    # is on the command line; the app's environment lacks it
                    self.assertNotIn(key, read_proc(p.pid, "cmdline"))
                    try:
                        is_app = os.readlink("/proc/%d/exe" % p.pid) == os.path.realpath(SHOP_APP)
                    except OSError:
                        is_app = False
                    if not is_app:
                        time.sleep(0.005)
                        continue
                    self.assertNotIn(key, read_proc(p.pid, "environ"), "the key is in the app's environment")
                    fds = proc_fds(p.pid)
                    if fds and not any("pacer-key" in t for t in fds):
                        seen_closed = True
                    # the forked child (whose /proc environ is the parent's first
                    # block) and the program spawned (GLib double-forks: it is
                    # not the app's child any more)
                    for pid in child_pids(p.pid):
                        children.setdefault(pid, (b"", proc_fds(pid)))
                    for pid in spawned_pids(api.base):
                        if not children.get(pid, (b"",))[0]:
                            children[pid] = (read_proc(pid, "environ"), proc_fds(pid))
                    time.sleep(0.005)
                _, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            self.assertTrue(seen_closed, "the key's descriptor stayed open in the app")
            self.assertTrue([c for c in children.values() if c[0]], "shop-app --children spawned no program we saw")
            for pid, (environ, fds) in children.items():
                self.assertNotIn(key, environ)
                self.assertNotIn(b"PACER_SERVER_KEY", environ)
                self.assertFalse([t for t in fds if "pacer-key" in t], "child %d inherited the key" % pid)
            got = {g["page"]: g for g in d.query("/api/v1/pages?app=shop&version=secrets")["pages"]}
            self.assertEqual(got["ShopHomeWindow"]["count"], 1)
        finally:
            d.close()
            tmp.cleanup()


def read_proc(pid, what):
    try:
        with open("/proc/%d/%s" % (pid, what), "rb") as f:
            return f.read()
    except OSError:
        return b""


def proc_fds(pid):
    out = []
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except OSError:
                pass
    except OSError:
        pass
    return out


def spawned_pids(api):
    """The shop-apps that shop-app --children spawned for this api."""
    want = b"\x00--api\x00" + api.encode() + b"\x00--splash-ms\x000\x00--lazy-ms\x00100\x00"
    return [int(n) for n in os.listdir("/proc") if n.isdigit() and want in read_proc(int(n), "cmdline")]


def child_pids(parent):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == parent:
                out.append(int(name))
        except (OSError, IndexError, ValueError):
            pass
    return out


class LiveThresholds(unittest.TestCase):
    def test_jank_threshold_changed_on_the_server_applies_live(self):
        """jank-app janks 500 ms every 0.9 s. The server's config starts at
        jank-ms=2000 (none of them is a jank), then is changed to 300: janks
        after the change are recorded, none before it."""
        from agentlib import APP_ENV, Xvfb, read_jsonl
        d = Pacerd()
        tmp = tempfile.TemporaryDirectory()
        try:
            high = '<pacer><thresholds jank-ms="2000"/><upload config-poll-ms="200"/></pacer>'
            low = '<pacer><thresholds jank-ms="300"/><upload config-poll-ms="200"/></pacer>'
            d.request("PUT", "/v1/config/shop", high, token=ADMIN, content_type="application/xml")
            out = os.path.join(tmp.name, "records.jsonl")
            with Xvfb() as x:
                env = dict(os.environ, DISPLAY=x.display, **APP_ENV)
                env.pop("WAYLAND_DISPLAY", None)
                p = subprocess.Popen([PACER, "run", "--out", out, "--app", "shop", "--server", d.base,
                                      "--key-file", key_file(tmp.name), "--spool", os.path.join(tmp.name, "spool.db"),
                                      "--", os.environ["JANK_APP"], "--janks", "12", "--jank-ms", "500",
                                      "--gap-ms", "400"],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(3.5)
                changed_at = time.time_ns()
                d.request("PUT", "/v1/config/shop", low, token=ADMIN, content_type="application/xml")
                _, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err)
            records = read_jsonl(out)
            # jank-app makes no request: the uploader's are not the app's
            self.assertEqual([r for r in records if r["type"] == "net"], [])
            janks = [r for r in records if r["type"] == "jank"]
            self.assertGreaterEqual(len(janks), 3, "janks after the change were not recorded")
            self.assertLess(len(janks), 12, "janks before the change were recorded")
            for j in janks:
                # ts is when the stuck iteration ended (docs/records.md)
                self.assertGreater(j["ts"], changed_at)
                self.assertGreaterEqual(j["duration_ms"], 500)
        finally:
            d.close()
            tmp.cleanup()


class LivePages(unittest.TestCase):
    def test_page_type_added_on_the_server_is_measured_from_then_on(self):
        """pages-app adds a LatePage every 250 ms. The server's config starts
        without pages and names LatePage 1.5 s in: pages created before the
        change are not measured, those created after the app fetched it are."""
        from agentlib import APP_ENV, ApiServer, Xvfb, read_jsonl
        d = Pacerd()
        tmp = tempfile.TemporaryDirectory()
        try:
            none = '<pacer><upload config-poll-ms="200"/></pacer>'
            late = ('<pacer><page id="LatePage"><api id="/api/test1"/></page>'
                    '<upload config-poll-ms="200"/></pacer>')
            d.request("PUT", "/v1/config/shop", none, token=ADMIN, content_type="application/xml")
            out = os.path.join(tmp.name, "records.jsonl")
            with Xvfb() as x, ApiServer({"/api/test1": 50}) as api:
                env = dict(os.environ, DISPLAY=x.display, **APP_ENV)
                env.pop("WAYLAND_DISPLAY", None)
                p = subprocess.Popen([PACER, "run", "--out", out, "--app", "shop", "--server", d.base,
                                      "--key-file", key_file(tmp.name), "--spool", os.path.join(tmp.name, "spool.db"),
                                      "--", os.environ["PAGES_APP"], "--url", api.base + "/api/test1",
                                      "--pages", "16", "--every-ms", "250"],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(1.5)
                changed = time.monotonic_ns()
                changed_wall = time.time_ns()
                d.request("PUT", "/v1/config/shop", late, token=ADMIN, content_type="application/xml")
                stdout, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err)
            created = [int(line.split()[-1]) for line in stdout.splitlines() if line.startswith("page ")]
            self.assertEqual(len(created), 16)
            before = sum(1 for t in created if t < changed)
            surely_after = sum(1 for t in created if t > changed + 1_000_000_000)  # polled by then
            self.assertGreater(before, 0)
            self.assertGreater(surely_after, 0)
            late_pages = [r for r in read_jsonl(out) if r["type"] == "page" and r["page"] == "LatePage"]
            for r in late_pages:
                self.assertGreater(r["ts"], changed_wall, "a page created before the change was measured")
                self.assertEqual(r["status"], "complete", r)
                self.assertGreaterEqual(r["api_load_ms"], 50)
            self.assertGreaterEqual(len(late_pages), surely_after)
            self.assertLessEqual(len(late_pages), 16 - before)
        finally:
            d.close()
            tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
