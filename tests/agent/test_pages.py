#!/usr/bin/env python3
"""Pages built late, whose data arrives on other threads: pages-app adds a
page of its own type every 250 ms, and each page loads /api/test1 (300 ms
on the demo API server) with libcurl on a worker thread while a spinner
keeps the window painting. Every page must complete with its final draw
after its data (the request's end is submitted before the draw epoch
moves, so no paint can use it up first), with the server's delay as its
API time."""
import os
import re
import socket
import tempfile
import unittest

from agentlib import ApiServer, Xvfb, of_type, pacer_run

PAGES_APP = os.environ["PAGES_APP"]
PAGES = 12
DELAY_MS = 300


class LatePages(unittest.TestCase):
    def test_worker_thread_requests_end_in_a_final_draw(self):
        with tempfile.TemporaryDirectory() as tmp, Xvfb() as x, ApiServer({"/api/test1": DELAY_MS}) as api:
            cfg = os.path.join(tmp, "pages.xml")
            with open(cfg, "w") as f:
                f.write('<pacer><page id="LatePage"><api id="/api/test1"/></page></pacer>')
            rc, records, _, err = pacer_run(x.display, PAGES_APP,
                                            ["--url", api.base + "/api/test1", "--pages", str(PAGES),
                                             "--every-ms", "250"],
                                            config=cfg, workdir=tmp)
        self.assertEqual(rc, 0, err)
        pages = of_type(records, "page", page="LatePage")
        self.assertEqual(len(pages), PAGES, [p["status"] for p in pages])
        ids = set()
        for p in pages:
            self.assertEqual(p["status"], "complete", p)
            self.assertIn("final_draw_ms", p, p)
            api_ms = p["apis"][0]["ms"]
            self.assertGreaterEqual(api_ms, DELAY_MS)
            self.assertLess(api_ms, DELAY_MS + 250, p)
            self.assertGreaterEqual(p["api_load_ms"], DELAY_MS)
            self.assertEqual(p["apis"][0]["status"], 200)
            ids.add(p["instance"])
        # page ids are small numbers of the agent's, never addresses
        self.assertEqual(len(ids), PAGES)
        self.assertLess(max(ids), 10000)
        nets = of_type(records, "net", lib="curl")
        self.assertEqual(len(nets), PAGES)
        for n in nets:
            self.assertEqual(n["status"], 200)
            self.assertGreaterEqual(n["total_ms"], DELAY_MS)

    def test_failed_curl_request_carries_the_apps_error_buffer(self):
        """The app set CURLOPT_ERRORBUFFER: the record's error is the text
        curl wrote there (what the app printed), not the generic one."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with tempfile.TemporaryDirectory() as tmp, Xvfb() as x:
            rc, records, _, err = pacer_run(x.display, PAGES_APP,
                                            ["--url", "http://127.0.0.1:%d/api/test1" % port, "--pages", "2",
                                             "--every-ms", "100"], workdir=tmp)
        self.assertEqual(rc, 0, err)
        printed = re.findall(r"^pages-app: request failed: (.*)$", err, re.M)
        self.assertEqual(len(printed), 2, err)
        self.assertIn("port %d" % port, printed[0])
        nets = of_type(records, "net", lib="curl")
        self.assertEqual(len(nets), 2, records)
        for n in nets:
            self.assertIn(n["error"], printed)
            self.assertEqual(n["status"], 0)
            self.assertIsNone(n["connect_ms"])
            self.assertIsNone(n["tls_ms"])


class BuilderStackPages(unittest.TestCase):
    def test_pages_named_in_a_builder_file_are_measured(self):
        """jank-app --builder-stack: a GtkStack from a GtkBuilder file with
        pages "home" (visible first) and "settings" (selected 400 ms
        later). Both names are configured: each gets a complete page
        record, "settings" measured from its selection (a frame or two,
        not the 400 ms it waited hidden)."""
        jank_app = os.environ["JANK_APP"]
        with tempfile.TemporaryDirectory() as tmp, Xvfb() as x:
            cfg = os.path.join(tmp, "stack.xml")
            with open(cfg, "w") as f:
                f.write('<pacer><page id="home"/><page id="settings"/></pacer>')
            rc, records, _, err = pacer_run(x.display, jank_app, ["--builder-stack"], config=cfg, workdir=tmp)
        self.assertEqual(rc, 0, err)
        for name in ("home", "settings"):
            pages = of_type(records, "page", page=name)
            self.assertEqual(len(pages), 1, records)
            self.assertEqual(pages[0]["status"], "complete", pages[0])
            self.assertEqual(pages[0]["kind"], "page")
            self.assertGreater(pages[0]["initial_draw_ms"], 0)
        self.assertLess(of_type(records, "page", page="settings")[0]["initial_draw_ms"], 300)


if __name__ == "__main__":
    unittest.main()
