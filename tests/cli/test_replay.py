"""pacer replay: hand-computed scenarios from seed 000/002 fed through the
binary as a user would, and bad input.

Each scenario writes events (times in ms, converted to ns), replays them with
tests/data/shop.xml, and compares the records with values computed by hand
from the seed's formulas.
"""
import json
import os
import subprocess
import tempfile
import unittest

PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]
SHOP = os.path.join(ROOT, "tests", "data", "shop.xml")
DEMO_EVENTS = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")

HOME, MERCHANT, SPLASH = "ShopHomeWindow", "ShopMerchantPage", "ShopSplashWindow"


def ev(ms, name, **fields):
    d = {"t": int(round(ms * 1_000_000)), "ev": name}
    d.update(fields)
    return d


def create(ms, page, cls, kind="window"):
    return ev(ms, "page_create", page=page, **{"class": cls}, kind=kind)


def start(ms, url, req):
    return ev(ms, "api_start", url=url, req=req)


def end(ms, url, req, status=200):
    return ev(ms, "api_end", url=url, req=req, status=status)


def replay(events, config=SHOP, raw_lines=None, extra=()):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
        for line in raw_lines or []:
            f.write(line + "\n")
        path = f.name
    try:
        args = [PACER, "replay", "--app", "shop", "--app-version", "1.2.3"]
        if config:
            args += ["--config", config]
        p = subprocess.run(args + list(extra) + [path], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    records = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return p, records, path


def pages(records, cls=None):
    return [r for r in records if r["type"] == "page" and (cls is None or r["page"] == cls)]


def startups(records, kind):
    return [r for r in records if r["type"] == "startup" and r["kind"] == kind]


class Scenarios(unittest.TestCase):
    def only_page(self, records, cls):
        ps = pages(records, cls)
        self.assertEqual(len(ps), 1, ps)
        return ps[0]

    def assertMs(self, rec, key, want):
        self.assertIn(key, rec, rec)
        self.assertAlmostEqual(rec[key], want, places=3, msg=f"{key} in {rec}")

    def test_normal_page(self):
        # create 0, view 5, first draw 40; config 50→150, list 160→460; draw 480
        p, recs, _ = replay([
            create(0, 1, HOME), ev(5, "page_view_created", page=1), ev(40, "page_draw", page=1),
            start(50, "/api/config", 1), end(150, "/api/config", 1),
            start(160, "/api/list", 2), ev(200, "page_draw", page=1), end(460, "/api/list", 2),
            ev(480, "page_draw", page=1), ev(500, "page_draw", page=1),
        ])
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.only_page(recs, HOME)
        self.assertEqual(r["status"], "complete")
        self.assertEqual(r["main"], True)
        self.assertEqual(r["instance"], 1)
        self.assertEqual(r["app"], "shop")
        self.assertEqual(r["version"], "1.2.3")
        self.assertMs(r, "initial_draw_ms", 40)
        self.assertMs(r, "api_load_ms", 410)
        self.assertMs(r, "final_draw_ms", 20)
        self.assertMs(r, "total_ms", 480)
        self.assertEqual([(a["url"], a["ms"], a["status"]) for a in r["apis"]],
                         [("/api/config", 100.0, 200), ("/api/list", 300.0, 200)])

    def test_no_api_page(self):
        p, recs, _ = replay([create(10, 3, "AboutWindow"), ev(35.5, "page_draw", page=3)])
        r = self.only_page(recs, "AboutWindow")
        self.assertMs(r, "initial_draw_ms", 25.5)
        self.assertMs(r, "total_ms", 25.5)
        for k in ("api_load_ms", "final_draw_ms", "apis"):
            self.assertNotIn(k, r)
        self.assertEqual(r["main"], False)  # the config names the main page

    def test_apis_finished_before_first_draw(self):
        p, recs, _ = replay([
            create(0, 1, HOME), start(1, "/api/config", 1), start(2, "/api/list", 2),
            end(20, "/api/config", 1), end(30, "/api/list", 2), ev(45, "page_draw", page=1),
            ev(60, "page_draw", page=1),
        ])
        r = self.only_page(recs, HOME)
        self.assertMs(r, "initial_draw_ms", 45)
        self.assertMs(r, "api_load_ms", 29)
        self.assertNotIn("final_draw_ms", r)
        self.assertMs(r, "total_ms", 45)

    def test_lazy_page_selected(self):
        # built at 0..10, selected (GtkStack: selected == scrolled to) at 2000
        p, recs, _ = replay([
            create(0, 7, MERCHANT, "page"), ev(10, "page_view_created", page=7),
            ev(2000, "page_select", page=7), ev(2000, "page_scroll", page=7),
            start(2005, "/api/test1", 1), ev(2030, "page_draw", page=7),
            end(2205, "/api/test1", 1), ev(2221, "page_draw", page=7),
        ])
        r = self.only_page(recs, MERCHANT)
        self.assertEqual(r["kind"], "page")
        self.assertMs(r, "initial_draw_ms", 40)     # 2030 - 0 - (2000 - 10)
        self.assertMs(r, "api_load_ms", 200)
        self.assertMs(r, "final_draw_ms", 16)       # 2221 - 2205
        self.assertMs(r, "total_ms", 231)           # 2221 - 0 - (2000 - 10)

    def test_lazy_page_scrolled(self):
        # a carousel: scrolling towards the page starts at 900, selected at 1100
        p, recs, _ = replay([
            create(0, 7, MERCHANT, "page"), ev(10, "page_view_created", page=7),
            ev(900, "page_scroll", page=7), ev(950, "page_draw", page=7),
            start(960, "/api/test1", 1), ev(1100, "page_select", page=7),
            end(1160, "/api/test1", 1), ev(1170, "page_draw", page=7),
        ])
        r = self.only_page(recs, MERCHANT)
        self.assertMs(r, "initial_draw_ms", 60)     # 950 - 0 - (900 - 10)
        self.assertMs(r, "final_draw_ms", 10)       # scroll before api end: no correction
        self.assertMs(r, "total_ms", 80)            # 1170 - 0 - (1100 - 10)

    def test_scroll_after_api_end(self):
        p, recs, _ = replay([
            create(0, 7, MERCHANT, "page"), ev(10, "page_view_created", page=7),
            start(12, "/api/test1", 1), ev(30, "page_draw", page=7), end(100, "/api/test1", 1),
            ev(600, "page_scroll", page=7), ev(600, "page_select", page=7),
            ev(625, "page_draw", page=7),
        ])
        r = self.only_page(recs, MERCHANT)
        self.assertMs(r, "initial_draw_ms", 30)
        self.assertMs(r, "api_load_ms", 88)
        self.assertMs(r, "final_draw_ms", 25)       # 625 - 100 - (600 - 100)
        self.assertMs(r, "total_ms", 35)            # 625 - 0 - (600 - 10)

    def test_two_instances_of_one_class(self):
        p, recs, _ = replay([
            create(0, 1, MERCHANT, "page"), create(100, 2, MERCHANT, "page"),
            start(110, "/api/test1", 21), ev(120, "page_draw", page=1), ev(130, "page_draw", page=2),
            end(300, "/api/test1", 21), ev(310, "page_draw", page=2), ev(320, "page_draw", page=1),
        ])
        ps = pages(recs, MERCHANT)
        self.assertEqual(sorted(r["instance"] for r in ps), [1, 2])
        by = {r["instance"]: r for r in ps}
        self.assertMs(by[1], "total_ms", 320)
        self.assertMs(by[2], "total_ms", 210)
        self.assertMs(by[1], "initial_draw_ms", 120)
        self.assertMs(by[2], "initial_draw_ms", 30)

    def test_failed_request_counts_as_end(self):
        p, recs, _ = replay([
            create(0, 1, HOME), ev(20, "page_draw", page=1),
            start(30, "/api/config", 1), start(31, "/api/list", 2),
            end(80, "/api/config", 1, status=0), end(90, "/api/list", 2, status=503),
            ev(95, "page_draw", page=1),
        ])
        r = self.only_page(recs, HOME)
        self.assertEqual(r["status"], "complete")
        self.assertMs(r, "api_load_ms", 60)
        self.assertEqual([a["status"] for a in r["apis"]], [0, 503])

    def test_unconfigured_url_and_repeated_start(self):
        p, recs, _ = replay([
            create(0, 7, MERCHANT, "page"), ev(10, "page_draw", page=7),
            start(20, "/api/other", 1), end(30, "/api/other", 1),
            start(40, "/api/test1", 2), start(45, "/api/test1", 3), end(50, "/api/test1", 3),
            end(140, "/api/test1", 2), ev(150, "page_draw", page=7),
        ])
        r = self.only_page(recs, MERCHANT)
        self.assertMs(r, "api_load_ms", 100)   # the second start was ignored
        self.assertMs(r, "final_draw_ms", 10)

    def test_url_with_host_and_query(self):
        p, recs, _ = replay([
            create(0, 7, MERCHANT, "page"), ev(10, "page_draw", page=7),
            start(20, "http://127.0.0.1:8080/api/test1?merchant=42&lang=en", 1),
            end(70, "https://127.0.0.1:8080/api/test1?merchant=42", 1),
            ev(75, "page_draw", page=7),
        ])
        r = self.only_page(recs, MERCHANT)
        self.assertMs(r, "api_load_ms", 50)
        self.assertEqual(r["apis"][0]["url"], "/api/test1")

    def test_cold_start_with_splash(self):
        p, recs, _ = replay([
            ev(0, "launch"), ev(3, "agent_init"), ev(8, "main"), ev(60, "app_created"),
            create(65, 1, SPLASH), ev(100, "page_draw", page=1),
            create(400, 2, HOME), ev(401, "page_destroy", page=1), ev(450, "page_draw", page=2),
            start(455, "/api/config", 1), start(456, "/api/list", 2),
            end(600, "/api/config", 1), end(700, "/api/list", 2), ev(720, "page_draw", page=2),
        ])
        cold = startups(recs, "cold")
        self.assertEqual(len(cold), 1, recs)
        c = cold[0]
        self.assertMs(c, "first_screen_ms", 100)
        self.assertMs(c, "cold_ms", 450)
        self.assertMs(c, "app_cost_ms", 60)
        self.assertMs(c, "full_display_ms", 720)
        self.assertEqual(c["outlier"], False)
        self.assertEqual(c["main_page"], HOME)
        self.assertEqual(c["phases"], {"launch": 0, "agent_init": 3_000_000, "main": 8_000_000,
                                       "app_created": 60_000_000, "first_frame": 100_000_000,
                                       "main_frame": 450_000_000, "full_display": 720_000_000})
        self.assertEqual(startups(recs, "warm"), [])

    def test_cold_start_without_splash(self):
        p, recs, _ = replay([
            ev(0, "launch"), ev(2, "agent_init"), ev(4, "main"),
            create(50, 1, "PlainWindow"), ev(90, "page_draw", page=1),
        ], config=None)
        c = startups(recs, "cold")[0]
        self.assertMs(c, "app_cost_ms", 50)     # no GApplication: first window
        self.assertMs(c, "first_screen_ms", 90)
        self.assertMs(c, "cold_ms", 90)
        self.assertMs(c, "full_display_ms", 90)
        self.assertEqual(c["main_page"], "PlainWindow")
        self.assertEqual(self.only_page(recs, "PlainWindow")["main"], True)

    def test_warm_start(self):
        p, recs, _ = replay([
            ev(0, "launch"), create(10, 1, "PlainWindow"), ev(30, "page_draw", page=1),
            ev(5000, "page_destroy", page=1),
            create(9000, 2, "PlainWindow"), ev(9012.25, "page_draw", page=2),
        ], config=None)
        warm = startups(recs, "warm")
        self.assertEqual(len(warm), 1, recs)
        self.assertMs(warm[0], "warm_ms", 12.25)
        self.assertEqual(warm[0]["page"], "PlainWindow")
        self.assertMs(startups(recs, "cold")[0], "cold_ms", 30)

    def test_end_of_input(self):
        # deadline is 30 s in shop.xml: page 1 passes it by the last event, page 2 does not
        p, recs, _ = replay([
            create(0, 1, HOME), ev(10, "page_draw", page=1), start(20, "/api/config", 1),
            create(25000, 2, MERCHANT, "page"), ev(31000, "page_draw", page=2),
        ])
        self.assertEqual(self.only_page(recs, HOME)["status"], "deadline_exceeded")
        self.assertEqual(self.only_page(recs, MERCHANT)["status"], "incomplete")

    def test_abandoned(self):
        p, recs, _ = replay([create(0, 7, MERCHANT, "page"), ev(10, "page_draw", page=7),
                             ev(20, "page_destroy", page=7)])
        self.assertEqual(self.only_page(recs, MERCHANT)["status"], "abandoned")


class BadInput(unittest.TestCase):
    def test_bad_lines_named_rest_processed(self):
        p, recs, path = replay(
            [create(0, 1, "W")],
            raw_lines=[
                '{"t": 5, "ev": "page_draw"',            # line 2: malformed JSON
                '{"t": 5, "ev": "page_bounce", "page": 1}',  # line 3: unknown event
                '{"t": 5, "ev": "page_draw"}',           # line 4: missing field
                '',                                      # blank: ignored
                '{"t": 7000000, "ev": "page_draw", "page": 1}',  # line 6: fine
            ], config=None)
        self.assertEqual(p.returncode, 1, p.stderr)
        err = p.stderr
        self.assertRegex(err, r":2: .*")
        self.assertRegex(err, r':3: .*unknown event "page_bounce"')
        self.assertRegex(err, r':4: .*missing field "page"')
        self.assertIn("3 of 6 lines skipped", err)
        r = pages(recs, "W")[0]
        self.assertAlmostEqual(r["total_ms"], 7.0)

    def test_missing_file_and_bad_config(self):
        p = subprocess.run([PACER, "replay", "/nonexistent/events.jsonl"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/events.jsonl", p.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
            f.write("<page id=\"A\">\n<api/>\n</page>\n")
        try:
            p, recs, _ = replay([create(0, 1, "W")], config=f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(p.returncode, 2)
        self.assertIn(":2:", p.stderr)
        self.assertEqual(recs, [])

    def test_usage(self):
        p = subprocess.run([PACER, "replay"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage: pacer replay", p.stderr)
        p = subprocess.run([PACER, "replay", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("deadline_exceeded", p.stdout)

    def test_stdin_and_out_file(self):
        line = json.dumps(create(0, 1, "W")) + "\n" + json.dumps(ev(3, "page_draw", page=1)) + "\n"
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.jsonl")
            p = subprocess.run([PACER, "replay", "--out", out, "-"], input=line,
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "")
            with open(out) as f:
                recs = [json.loads(l) for l in f]
        self.assertAlmostEqual(pages(recs, "W")[0]["total_ms"], 3.0)


class DemoEvents(unittest.TestCase):
    """The bundled example events (make demo) replay cleanly to the numbers
    they were written for."""

    def test_demo_events(self):
        p = subprocess.run([PACER, "replay", "--config", SHOP, DEMO_EVENTS],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        recs = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertTrue(pages(recs, HOME))
        self.assertTrue(pages(recs, MERCHANT))
        self.assertEqual(len(startups(recs, "cold")), 1)
        self.assertTrue(all(r["status"] == "complete" for r in pages(recs)))


if __name__ == "__main__":
    unittest.main()
