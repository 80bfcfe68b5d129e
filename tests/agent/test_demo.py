"""The demo shop under `pacer run`, on a private Xvfb: every number the agent
reports is held against ground truth the test sets itself — the API server's
per-path delays and the app's splash and lazy-page delays — and against the
app's own clock.

Requests: a request takes at least its server delay, plus loopback and
scheduling noise that grows without bound on a busy machine. So a figure
must be at least the delay, and within APP_SLACK_MS of what the app itself
measured for that request (shop-app --log-requests: CLOCK_MONOTONIC before
its send call, and when libsoup's message emits "finished" or libcurl's
transfer returns — the same moments the agent stamps). A real error (a
request missed or counted twice, a wait not subtracted) is off by hundreds
of ms.
"""
import os
import re
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from agentlib import SHOP_APP, SHOP_CONFIG, ApiServer, Xvfb, assert_documented, of_type, pacer_run  # noqa: E402

DELAYS = {"/api/config": 200, "/api/list": 300, "/api/test1": 300}
SPLASH_MS = 400
LAZY_MS = 1500
APP_SLACK_MS = 20  # the agent's figure against the app's own, per request
MS = 1_000_000


def app_args(server, *extra):
    return ["--api", server.base, "--splash-ms", str(SPLASH_MS), "--lazy-ms", str(LAZY_MS),
            "--auto-exit", "--log-requests"] + list(extra)


def app_requests(err):
    """{path: [(start_ns, end_ns), ...]} from shop-app --log-requests."""
    out = {}
    for m in re.finditer(r"^shop-app: request (\S+) (\d+) (\d+)$", err, re.M):
        out.setdefault(m.group(1), []).append((int(m.group(2)) * 1000, int(m.group(3)) * 1000))
    return out


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.x = Xvfb().__enter__()
        cls.server = ApiServer(DELAYS).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        cls.x.__exit__(None, None, None)

    def run_demo(self, *extra):
        rc, records, events, err = pacer_run(self.x.display, SHOP_APP, app_args(self.server, *extra),
                                             config=SHOP_CONFIG)
        self.assertEqual(rc, 0, err)
        self.assertTrue(records, "no records; stderr:\n" + err)
        self.app = app_requests(err)
        return records, events

    def assertClose(self, value, truth, app_ms, what=""):
        """value: at least the server's delay `truth`, and within
        APP_SLACK_MS of one of the app's own figures `app_ms`."""
        self.assertIsNotNone(value, what)
        self.assertGreaterEqual(value, truth - 1, "%s: %.3f ms, truth %d ms" % (what, value, truth))
        self.assertTrue(app_ms, "%s: the app logged no such request" % what)
        near = min(app_ms, key=lambda a: abs(a - value))
        self.assertLessEqual(abs(value - near), APP_SLACK_MS,
                             "%s: %.3f ms, the app measured %s ms" % (what, value, ["%.1f" % a for a in app_ms]))

    def app_ms(self, path):
        return [(e - s) / MS for s, e in self.app.get(path, [])]

    def check_home(self, home, main=True):
        self.assertEqual(home["status"], "complete")
        self.assertEqual(home["main"], main)
        apis = {a["url"]: a for a in home["apis"]}
        self.assertEqual(set(apis), {"/api/config", "/api/list"})
        for url, a in apis.items():
            self.assertEqual(a["status"], 200)
            self.assertClose(a["ms"], DELAYS[url], self.app_ms(url), what=url)
        # Sequential: config, then list. The config request starts inside the
        # window's own init; missing it would leave only /api/list (300).
        # The app's figure: from a config request's start to the end of the
        # list request that followed it.
        pairs = zip(sorted(self.app.get("/api/config", [])), sorted(self.app.get("/api/list", [])))
        self.assertClose(home["api_load_ms"], DELAYS["/api/config"] + DELAYS["/api/list"],
                         [(lst[1] - cfg[0]) / MS for cfg, lst in pairs], "home api_load_ms")
        self.assertGreaterEqual(home["total_ms"], home["api_load_ms"])


class ColdStart(Base):
    def test_cold_start_pages_and_requests(self):
        records, events = self.run_demo()
        pids = {r["pid"] for r in records}
        self.assertEqual(len(pids), 1)

        creates = {e["page"]: e for e in events if e["ev"] == "page_create"}
        selects = {}
        for e in events:
            if e["ev"] == "page_select":
                selects.setdefault(e["page"], e["t"])
        home_create = next(e for e in creates.values() if e["class"] == "ShopHomeWindow")

        # Start-up (DESIGN §3.2).
        cold = of_type(records, "startup", kind="cold")
        self.assertEqual(len(cold), 1, records)
        s = cold[0]
        ph = s["phases"]
        order = ["launch", "agent_init", "main", "app_created", "first_frame", "main_frame", "full_display"]
        for a, b in zip(order, order[1:]):
            self.assertLessEqual(ph[a], ph[b], "%s after %s" % (a, b))
        self.assertEqual(s["main_page"], "ShopHomeWindow")
        # The home window is created SPLASH_MS after activation; its first
        # frame is the main frame; its final draw waits for both requests.
        self.assertGreaterEqual(ph["main_frame"] - ph["app_created"], SPLASH_MS * MS)
        self.assertGreaterEqual(ph["full_display"] - home_create["t"], 500 * MS)
        self.assertGreaterEqual(s["cold_ms"], SPLASH_MS)
        self.assertLess(s["cold_ms"], 20000)
        self.assertLessEqual(s["first_screen_ms"], s["cold_ms"])
        self.assertLessEqual(s["app_cost_ms"], s["first_screen_ms"])
        self.assertAlmostEqual(s["cold_ms"], (ph["main_frame"] - ph["launch"]) / MS, delta=0.01)

        # Pages (DESIGN §3.1).
        pages = of_type(records, "page")
        by_class = {}
        for p in pages:
            by_class.setdefault(p["page"], []).append(p)
        self.assertEqual(len(by_class.get("ShopHomeWindow", [])), 1, pages)
        self.assertEqual(len(by_class.get("ShopSplashWindow", [])), 1, pages)
        self.assertEqual(len(by_class.get("ShopMerchantPage", [])), 2, pages)
        self.check_home(by_class["ShopHomeWindow"][0])
        splash = by_class["ShopSplashWindow"][0]
        self.assertEqual(splash["status"], "complete")
        self.assertEqual(splash["kind"], "window")
        self.assertGreater(splash["initial_draw_ms"], 0)

        lazy_ids = [pid for pid, t in selects.items()
                    if creates.get(pid, {}).get("class") == "ShopMerchantPage"
                    and t - creates[pid]["t"] > (LAZY_MS - 100) * MS]
        self.assertEqual(len(lazy_ids), 1, "exactly one merchant page is selected late")
        for m in by_class["ShopMerchantPage"]:
            self.assertEqual(m["status"], "complete")
            self.assertEqual(m["kind"], "page")
            self.assertEqual([a["url"] for a in m["apis"]], ["/api/test1"])
            self.assertClose(m["api_load_ms"], DELAYS["/api/test1"], self.app_ms("/api/test1"),
                             what="merchant api_load_ms")
            if m["instance"] in lazy_ids:
                # Shown LAZY_MS after creation, its data long loaded: the
                # wait is subtracted, only its own drawing remains.
                self.assertLess(m["total_ms"], 300, m)
                self.assertLess(m["initial_draw_ms"], 300, m)
            else:
                # Visible at once: its total includes the request.
                self.assertGreaterEqual(m["total_ms"], DELAYS["/api/test1"], m)

        # Every field of every record is documented.
        assert_documented(self, records, ["page", "startup", "net", "frames"])

        # Requests: one net record each, with the server's delay.
        nets = of_type(records, "net")
        self.assertEqual(len(nets), 4, nets)
        seen = sorted((n["url"].split(self.server.base, 1)[1], n["lib"]) for n in nets)
        self.assertEqual(seen, [("/api/config", "soup"), ("/api/list", "soup"), ("/api/test1", "curl"),
                                ("/api/test1", "curl")])
        for n in nets:
            path = n["url"].split(self.server.base, 1)[1]
            self.assertEqual(n["status"], 200)
            self.assertEqual(n["method"], "GET")
            self.assertEqual(n["content_type"], "application/json")
            self.assertIsNone(n["error"])
            self.assertGreater(n["bytes_received"], 0)
            self.assertGreater(n["bytes_sent"], 0)
            self.assertClose(n["total_ms"], DELAYS[path], self.app_ms(path), what="net " + path)
            self.assertLessEqual(n["first_byte_ms"], n["total_ms"])
            self.assertGreaterEqual(n["first_byte_ms"], DELAYS[path] - 1)
            self.assertEqual(n["classes"], [])


class ExitAndWarm(Base):
    def test_exit_from_handler_then_warm_start(self):
        # --warm closes every window and opens a new home window; then the
        # app calls exit(0) from inside a GLib timeout handler.
        records, events = self.run_demo("--warm", "--exit-mode", "exit")
        homes = [p for p in of_type(records, "page") if p["page"] == "ShopHomeWindow"]
        self.assertEqual(len(homes), 2, records)
        # The first is the cold start's main page; the second is not.
        self.check_home(homes[0])
        self.check_home(homes[1], main=False)
        warm = of_type(records, "startup", kind="warm")
        self.assertEqual(len(warm), 1, records)
        w = warm[0]
        creates = [e for e in events if e["ev"] == "page_create" and e["class"] == "ShopHomeWindow"]
        self.assertEqual(w["phases"]["create"], creates[1]["t"])
        self.assertGreater(w["warm_ms"], 0)
        self.assertLess(w["warm_ms"], 5000)
        self.assertEqual(len(of_type(records, "startup", kind="cold")), 1)


class Children(Base):
    def test_fork_and_exec_children_are_not_reported(self):
        # --children: a fork that exits via exit(), and an exec'd second
        # shop-app (a GTK program with the agent preloaded) that loads the
        # same APIs. --sync-config: /api/config through the sync call.
        records, events = self.run_demo("--children", "--sync-config")
        self.assertEqual(len({r["pid"] for r in records}), 1, "records from another process")
        lines = [repr(sorted(r.items())) for r in records]
        self.assertEqual(len(lines), len(set(lines)), "a record was written twice")
        self.assertEqual(len(of_type(records, "startup", kind="cold")), 1)
        self.assertEqual(len([p for p in of_type(records, "page") if p["page"] == "ShopHomeWindow"]), 1)
        self.assertEqual(len(of_type(records, "net")), 4)
        home = [p for p in of_type(records, "page") if p["page"] == "ShopHomeWindow"][0]
        self.check_home(home)



class FailedRequests(Base):
    def test_failed_requests_carry_the_library_error_and_no_made_up_phases(self):
        """Every request to a closed port fails: the app prints the error its
        library gave it (GError message for libsoup, curl's for libcurl);
        each `net` record carries exactly that text, status 0, and the
        phases the request never reached (connect, TLS, first byte) null,
        not 0."""
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        args = ["--api", "http://127.0.0.1:%d" % port, "--splash-ms", "100", "--lazy-ms", "200", "--auto-exit"]
        rc, records, _, err = pacer_run(self.x.display, SHOP_APP, args, config=SHOP_CONFIG)
        self.assertEqual(rc, 0, err)
        seen = set(re.findall(r"^shop-app: request failed: (.*)$", err, re.M))
        nets = of_type(records, "net")
        self.assertEqual({n["lib"] for n in nets}, {"soup", "curl"}, nets)
        for n in nets:
            self.assertEqual(n["status"], 0, n)
            self.assertIn(n["error"], seen, n)
            self.assertIn("error", n["classes"])
            for phase in ("connect_ms", "tls_ms", "first_byte_ms"):
                self.assertIsNone(n[phase], (phase, n))
        soup = [n for n in nets if n["lib"] == "soup"]
        self.assertTrue(soup and all("Connection refused" in n["error"] for n in soup), soup)


if __name__ == "__main__":
    unittest.main()
