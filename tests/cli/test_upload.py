"""Upload from the SDK side: spool → OTLP/HTTP JSON → server, against a
scriptable HTTP peer on loopback (it answers what each test needs: 503 with
Retry-After, 400, being down, a config with an ETag). The mapping checked is
docs/otlp-mapping.md. These tests read the bodies as JSON, so they ask the
uploader for uncompressed JSON (PACER_OTLP_PROTOCOL, PACER_OTLP_COMPRESSION);
the default, gzip protobuf, is test_otlp_proto.py's. pacerd itself is
exercised end to end by the server tests."""
import http.server
import json
import os
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

os.environ["PACER_OTLP_PROTOCOL"] = "json"
os.environ["PACER_OTLP_COMPRESSION"] = "none"
PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]
PROBE = os.environ["UPLOAD_PROBE"]
SHOP = os.path.join(ROOT, "tests", "data", "shop.xml")
EVENTS = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")


class Peer:
    """A loopback HTTP server recording every request."""

    def __init__(self):
        self.requests = []
        self.script = []          # statuses for the next POSTs, then 200
        self.partial = None       # a partialSuccess to answer 200s with
        self.retry_after = None
        self.config = None        # (etag, body) served on GET /v1/config/…
        self.lock = threading.Lock()
        peer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def reply(self, status, body=b"{}", headers=()):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with peer.lock:
                    status = peer.script.pop(0) if peer.script else 200
                    peer.requests.append({"method": "POST", "path": self.path, "time": time.monotonic(),
                                          "headers": dict(self.headers), "body": body, "status": status})
                hdrs = [("Retry-After", str(peer.retry_after))] if status in (429, 503) and peer.retry_after else []
                body = json.dumps({"partialSuccess": peer.partial}).encode() if peer.partial and status == 200 else b"{}"
                self.reply(status, body, hdrs)

            def do_GET(self):
                with peer.lock:
                    peer.requests.append({"method": "GET", "path": self.path, "time": time.monotonic(),
                                          "headers": dict(self.headers), "body": b""})
                    cfg = peer.config
                if not cfg or not self.path.startswith("/v1/config/"):
                    return self.reply(404, b"")
                etag, text = cfg
                if self.headers.get("If-None-Match") == etag:
                    return self.reply(304, b"", [("ETag", etag)])
                self.reply(200, text.encode(), [("ETag", etag), ("Content-Type", "application/xml")])

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def posts(self, path="/v1/traces"):
        with self.lock:
            return [r for r in self.requests if r["method"] == "POST" and r["path"] == path]

    def spans(self):
        """Spans of the requests the peer accepted (2xx), as a server stores them."""
        out = []
        for r in self.posts():
            if r["status"] != 200:
                continue
            doc = json.loads(r["body"])
            for rs in doc["resourceSpans"]:
                res = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
                for ss in rs["scopeSpans"]:
                    for sp in ss["spans"]:
                        sp["_resource"] = res
                        sp["_attrs"] = {a["key"]: a["value"] for a in sp["attributes"]}
                        out.append(sp)
        return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Upload(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.spool = os.path.join(self.dir.name, "spool.db")
        self.peer = Peer()

    def tearDown(self):
        self.peer.close()
        self.dir.cleanup()

    def replay(self, server, session, events=EVENTS):
        p = subprocess.run([PACER, "replay", "--config", SHOP, "--app", "shop", "--app-version", "2.0",
                            "--session", session, "--server", server,
                            "--spool", self.spool, events],
                           capture_output=True, text=True, timeout=60, env=dict(os.environ, PACER_KEY="k-shop"))
        self.assertEqual(p.returncode, 0, p.stderr)
        return [json.loads(l) for l in p.stdout.splitlines()]

    def test_durations_to_the_microsecond(self):
        """A page whose times are not whole microseconds: the upload carries
        its durations as the records file has them (three decimals), and the
        span ends where that duration says."""
        events = os.path.join(self.dir.name, "ns.jsonl")
        with open(events, "w") as f:
            f.write('{"t":1000000000,"ev":"launch"}\n'
                    '{"t":1000000123,"ev":"page_create","page":1,"class":"NsWindow","kind":"window"}\n'
                    '{"t":1000400456,"ev":"page_view_created","page":1}\n'
                    '{"t":1012345789,"ev":"page_draw","page":1}\n')
        records = self.replay(self.peer.url, "s-ns", events)
        rec = [r for r in records if r["type"] == "page" and r["page"] == "NsWindow"][0]
        self.assertEqual(rec["initial_draw_ms"], 12.346)  # 12.345666 ms
        span = [s for s in self.peer.spans() if s["name"] == "page NsWindow"][0]
        self.assertEqual(span["_attrs"]["pacer.initial_draw_ms"], {"doubleValue": 12.346})
        self.assertEqual(span["_attrs"]["pacer.total_ms"], {"doubleValue": rec["total_ms"]})
        self.assertEqual(int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"]), 12346000)

    def test_records_arrive_as_spans(self):
        records = self.replay(self.peer.url, "s-one")
        spans = self.peer.spans()
        self.assertEqual(len(spans), len(records))
        post = self.peer.posts()[0]
        self.assertEqual(post["headers"]["Authorization"], "Bearer k-shop")
        self.assertRegex(post["headers"]["X-Pacer-Batch-Id"], r"^[0-9a-f]{32}$")
        self.assertEqual(post["headers"]["Content-Type"], "application/json")
        home = [s for s in spans if s["name"] == "page ShopHomeWindow"]
        self.assertEqual(len(home), 1)
        a = home[0]["_attrs"]
        rec = [r for r in records if r["type"] == "page" and r["page"] == "ShopHomeWindow"][0]
        self.assertEqual(a["pacer.type"], {"stringValue": "page"})
        self.assertEqual(a["pacer.status"], {"stringValue": "complete"})
        self.assertEqual(a["pacer.main"], {"boolValue": True})
        self.assertAlmostEqual(a["pacer.total_ms"]["doubleValue"], rec["total_ms"])
        self.assertAlmostEqual(a["pacer.api_load_ms"]["doubleValue"], rec["api_load_ms"])
        self.assertEqual(int(home[0]["startTimeUnixNano"]), rec["ts"])
        self.assertEqual(int(home[0]["endTimeUnixNano"]) - rec["ts"], round(rec["total_ms"] * 1e6))
        self.assertEqual([e["name"] for e in home[0]["events"]], ["api", "api"])
        res = home[0]["_resource"]
        self.assertEqual(res["service.name"], {"stringValue": "shop"})
        self.assertEqual(res["service.version"], {"stringValue": "2.0"})
        self.assertEqual(res["pacer.session"], {"stringValue": "s-one"})
        cold = [s for s in spans if s["name"] == "startup cold"][0]
        self.assertAlmostEqual(cold["_attrs"]["pacer.cold_ms"]["doubleValue"], 872.9)
        self.assertEqual(cold["_attrs"]["pacer.phases.launch"], {"intValue": "1000000000"})
        # the config service was asked for this app
        gets = [r for r in self.peer.requests if r["method"] == "GET"]
        self.assertTrue(any(r["path"] == "/v1/config/shop" for r in gets))

    def test_server_down_then_next_run_delivers(self):
        down = "http://127.0.0.1:%d" % free_port()
        first = self.replay(down, "s-down")
        self.assertEqual(self.peer.spans(), [])
        second = self.replay(self.peer.url, "s-up")
        spans = self.peer.spans()
        self.assertEqual(len(spans), len(first) + len(second))
        sessions = sorted({s["_resource"]["pacer.session"]["stringValue"] for s in spans})
        self.assertEqual(sessions, ["s-down", "s-up"])
        # nothing twice
        ids = [(s["traceId"], s["spanId"]) for s in spans]
        self.assertEqual(len(ids), len(set(ids)))
        # each record a trace of its own, its span id the trace id's low half
        self.assertEqual(len({t for t, _ in ids}), len(ids))
        self.assertEqual([sid for _, sid in ids], [t[16:] for t, _ in ids])

    def test_retry_keeps_batch_id_and_body(self):
        self.peer.script = [503]
        self.peer.retry_after = 1
        self.replay(self.peer.url, "s-retry")   # 503, and Retry-After ends after the drain? not here: 1 s < 3 s
        posts = self.peer.posts()
        self.assertGreaterEqual(len(posts), 2, "the 503 batch was retried")
        self.assertEqual(posts[0]["headers"]["X-Pacer-Batch-Id"], posts[1]["headers"]["X-Pacer-Batch-Id"])
        self.assertEqual(posts[0]["body"], posts[1]["body"])
        # Retry-After: 1 was honoured
        self.assertGreaterEqual(posts[1]["time"] - posts[0]["time"], 0.95)
        # the spool is empty now: a new run sends only its own records
        self.peer.requests.clear()
        records = self.replay(self.peer.url, "s-after")
        self.assertEqual(len(self.peer.spans()), len(records))

    def test_refused_batch_is_dropped_not_retried(self):
        self.peer.script = [400]
        first = self.replay(self.peer.url, "s-bad")
        posts = self.peer.posts()
        refused = posts[0]["headers"]["X-Pacer-Batch-Id"]
        # the records the refused batch held were not sent again; the rest were
        refused_n = len(json.loads(posts[0]["body"])["resourceSpans"][0]["scopeSpans"][0]["spans"])
        self.assertNotIn(refused, [p["headers"]["X-Pacer-Batch-Id"] for p in posts[1:]])
        self.assertEqual(len(self.peer.spans()), len(first) - refused_n)
        self.peer.requests.clear()
        records = self.replay(self.peer.url, "s-next")
        self.assertEqual(len(self.peer.spans()), len(records))

    def test_partial_success_is_reported(self):
        self.peer.partial = {"rejectedSpans": "3", "errorMessage": "spans[0]: not your app"}
        self.peer.requests.clear()
        p = subprocess.run([PACER, "replay", "--server", self.peer.url, "--spool", self.spool, EVENTS],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"uploaded [1-9]\d* batch\(es\)")
        # each accepted upload said 3 were rejected; how many uploads the
        # records make depends on when the batches were cut
        with self.peer.lock:
            accepted = sum(1 for r in self.peer.requests if r["method"] == "POST" and r["status"] == 200)
        self.assertGreaterEqual(accepted, 1)
        self.assertIn("the server rejected %d record(s): spans[0]: not your app" % (3 * accepted), p.stderr)
        # rejected items are not retried: the next run sends only its own
        self.peer.partial = None
        self.peer.requests.clear()
        records = self.replay(self.peer.url, "s-after")
        self.assertEqual(len(self.peer.spans()), len(records))

    def test_backoff_in_a_long_running_app(self):
        # the first two attempts fail (503 without Retry-After, then 500): the
        # app keeps producing, and everything arrives once the server recovers
        self.peer.script = [503, 500]
        p = subprocess.run([PROBE, self.peer.url, self.spool, "probe", "pages", "20", "50"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("retries=2", p.stdout)
        spans = self.peer.spans()
        names = [s["_attrs"]["pacer.instance"]["intValue"] for s in spans if s["name"] == "page ProbeWindow"]
        self.assertEqual(sorted(int(n) for n in names), list(range(1, 21)))
        # the failed batch was resent under its id
        posts = self.peer.posts()
        self.assertEqual(posts[0]["headers"]["X-Pacer-Batch-Id"], posts[2]["headers"]["X-Pacer-Batch-Id"])

    def test_config_from_server_applied_live_and_cached(self):
        self.peer.config = ("\"v1\"", "<page id=\"Other\"/>")

        def switch():
            time.sleep(1.0)
            self.peer.config = ("\"v2\"", "<pacer><page id=\"LatePage\"/>"
                                          "<upload config-poll-ms=\"200\"/></pacer>")
        # poll quickly from the start: the first config sets the interval
        self.peer.config = ("\"v1\"", "<pacer><page id=\"Other\"/><upload config-poll-ms=\"200\"/></pacer>")
        t = threading.Thread(target=switch)
        t.start()
        p = subprocess.run([PROBE, self.peer.url, self.spool, "cfgapp", "await", "LatePage", "20"],
                           capture_output=True, text=True, timeout=60)
        t.join()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        gets = [r for r in self.peer.requests if r["method"] == "GET"]
        self.assertTrue(any(r["headers"].get("If-None-Match") == "\"v1\"" for r in gets))
        cache = os.path.join(self.dir.name, "config-cfgapp.xml")
        with open(cache) as f:
            self.assertIn("LatePage", f.read())
        # offline start: the cached config is used without a server
        self.peer.close()
        self.peer = Peer()
        down = "http://127.0.0.1:%d" % free_port()
        p = subprocess.run([PROBE, down, self.spool, "cfgapp", "await", "LatePage", "3"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_spool_of_an_older_version_is_delivered(self):
        """A spool an earlier libpacer left: its schema, records as JSON
        lines, a batch it sent but had no answer for. After an upgrade the
        batch goes first under its id (a server that stored it stores
        nothing again), then the other lines, then the new run's records."""
        lines = [{"type": "page", "ts": 1_700_000_000_000_000_000 + i, "app": "old", "version": "0.9",
                  "session": "s-old", "pid": 7, "page": "OldWindow%d" % i, "status": "complete",
                  "total_ms": 10.5 + i} for i in range(3)]
        db = sqlite3.connect(self.spool)
        db.executescript(
            "PRAGMA journal_mode=WAL;"
            "CREATE TABLE record(id INTEGER PRIMARY KEY AUTOINCREMENT,"
            "  signal INTEGER NOT NULL, body TEXT NOT NULL, bytes INTEGER NOT NULL);"
            "CREATE INDEX record_signal ON record(signal, id);"
            "CREATE TABLE pending(signal INTEGER PRIMARY KEY, first_id INTEGER, last_id INTEGER, batch TEXT);"
            "CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;")
        total = 0
        for r in lines:
            body = json.dumps(r, separators=(",", ":"))
            db.execute("INSERT INTO record(signal, body, bytes) VALUES (0, ?, ?)", (body, len(body)))
            total += len(body)
        db.execute("INSERT INTO meta VALUES ('uuid', 'aaaabbbbccccddddeeeeffff00001111'), ('bytes', ?)", (total,))
        db.execute("INSERT INTO pending VALUES (0, 1, 2, 'feedfacefeedfacefeedfacefeedface')")
        db.commit()
        db.close()
        records = self.replay(self.peer.url, "s-new")
        posts = [p for p in self.peer.posts() if p["status"] == 200]
        self.assertEqual(posts[0]["headers"]["X-Pacer-Batch-Id"], "feedfacefeedfacefeedfacefeedface")
        first = json.loads(posts[0]["body"])["resourceSpans"][0]
        self.assertEqual([s["name"] for s in first["scopeSpans"][0]["spans"]],
                         ["page OldWindow0", "page OldWindow1"])
        spans = self.peer.spans()
        old = [s for s in spans if s["_resource"]["service.name"]["stringValue"] == "old"]
        self.assertEqual(sorted(s["name"] for s in old), ["page OldWindow0", "page OldWindow1", "page OldWindow2"])
        self.assertEqual(old[2]["_attrs"]["pacer.total_ms"], {"doubleValue": 12.5})
        self.assertEqual(old[0]["_resource"]["pacer.session"], {"stringValue": "s-old"})
        self.assertEqual(len(spans), len(records) + 3)
        db = sqlite3.connect(self.spool)
        self.assertEqual(db.execute("SELECT count(*) FROM record").fetchone()[0], 0)
        db.close()

    def test_spool_cap_drops_oldest_and_counts(self):
        # 64 KiB cap, server down: the spool keeps the newest records only
        events = os.path.join(self.dir.name, "many.jsonl")
        with open(events, "w") as f:
            for i in range(1, 1501):
                f.write(json.dumps({"t": i * 10, "ev": "page_create", "page": i, "class": "W%04d" % i,
                                    "kind": "window"}) + "\n")
                f.write(json.dumps({"t": i * 10 + 5, "ev": "page_draw", "page": i}) + "\n")
        cfg = os.path.join(self.dir.name, "cap.xml")
        with open(cfg, "w") as f:
            f.write("<pacer><upload spool-max-kb=\"64\"/></pacer>")
        down = "http://127.0.0.1:%d" % free_port()
        p = subprocess.run([PACER, "replay", "--config", cfg, "--server", down, "--spool", self.spool,
                            "--app", "cap", events], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.replay(self.peer.url, "s-cap", events=os.path.join(ROOT, "tests", "data", "empty.jsonl"))
        spans = self.peer.spans()
        names = sorted(s["_attrs"]["pacer.page"]["stringValue"] for s in spans if s["name"].startswith("page W"))
        self.assertTrue(0 < len(names) < 1500, len(names))
        self.assertEqual(names[-1], "W1500")            # the newest kept
        self.assertNotIn("W0001", names)                # the oldest dropped
        dropped = int(spans[0]["_resource"]["pacer.spool.dropped"]["intValue"])
        self.assertEqual(dropped, 1500 + 1 - len([s for s in spans if s["_resource"]["service.name"]["stringValue"] == "cap"]))


if __name__ == "__main__":
    unittest.main()
