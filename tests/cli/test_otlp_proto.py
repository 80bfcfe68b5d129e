"""What pacer's uploader sends by default — OTLP/HTTP protobuf, gzip — read
by an independent decoder: protobufjs (npm) with the opentelemetry-proto
.proto files an npm package ships (tests/server/otel/decode-proto.js).

  - otlp_probe encodes records of every signal (spans with events from a
    page's API list, logs, metric points) as the uploader does; the
    protobuf decodes against the .proto files, encodes again to the same
    bytes (so every byte is a field of the .proto with its wire type), and
    says exactly what the JSON encoding of the same batch says;
  - `pacer replay --server` against a loopback peer sends that protobuf,
    gzip-compressed, with the right headers, and reads a protobuf
    partial_success answer; --otlp-protocol json / --otlp-compression none
    switch back; a bad value is refused.
Skipped (exit 77) without node and the npm packages (scripts/install-deps.sh)."""
import gzip
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]
PROBE = os.environ["OTLP_PROBE"]
OTEL = os.path.join(ROOT, "tests", "server", "otel")
SHOP = os.path.join(ROOT, "tests", "data", "shop.xml")
EVENTS = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")

TS = 1_700_000_000_000_000_000
RECORDS = [
    {"type": "page", "ts": TS, "app": "shop", "version": "1.0", "session": "s1", "pid": 42, "page": "Home",
     "instance": 7, "kind": "window", "status": "complete", "main": True, "initial_draw_ms": 40.5,
     "api_load_ms": 300.25, "final_draw_ms": 12.0, "total_ms": 352.75,
     "apis": [{"url": "/api/config", "ms": 200.5, "status": 200}, {"url": "/api/list", "ms": 100.0, "status": 503}]},
    {"type": "startup", "ts": TS + 1, "app": "shop", "version": "1.0", "session": "s1", "pid": 42, "kind": "cold",
     "cold_ms": 666.5, "first_screen_ms": 219.5, "outlier": False, "main_page": "Home",
     "phases": {"launch": 1, "main": 5}},
    {"type": "net", "ts": TS + 2, "app": "shop", "version": "1.0", "session": "s1", "pid": 42, "lib": "curl",
     "method": "GET", "url": "https://api.example:8443/api/items/12?x=1", "status": 200, "total_ms": 99.5,
     "dns_ms": None, "bytes_received": 1024, "classes": ["slow"]},
    {"type": "jank", "ts": TS + 3, "app": "shop", "version": "1.0", "session": "s1", "pid": 42, "kind": "jank",
     "duration_ms": 900.0, "page": "Home", "fingerprint": "abc",
     "stack": [{"function": "compute", "module": "shop", "in_app": True}]},
    {"type": "frames", "ts": TS + 4, "app": "shop", "version": "1.0", "session": "s1", "pid": 42, "window": "Home",
     "instance": 7, "final": True, "frames": 120, "slow": 3, "frozen": 0, "dropped_frames": 5, "delay_ms": 40.5,
     "max_frame_ms": 33.25, "refresh_ms": 16.667, "levels": {"best": 100, "normal": 15}},
]


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def node_ok():
    return shutil.which("node") and os.path.isdir(os.path.join(OTEL, "node_modules", "protobufjs"))


def decode(signal, path):
    out = subprocess.run(["node", os.path.join(OTEL, "decode-proto.js"), signal, path], capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    return json.loads(out.stdout)


def normal(x):
    """OTLP JSON in one spelling: no empty lists or objects, numbers as
    numbers (int64s and fixed64s are strings in both encodings' JSON)."""
    if isinstance(x, dict):
        out = {k: normal(v) for k, v in x.items()}
        return {k: v for k, v in out.items() if v not in ([], {}, None)}
    if isinstance(x, list):
        return [normal(v) for v in x]
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


class OtlpProto(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.records = os.path.join(self.dir.name, "records.jsonl")
        with open(self.records, "w") as f:
            for r in RECORDS:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")

    def tearDown(self):
        self.dir.cleanup()

    def test_protobuf_matches_the_proto_files_and_the_json(self):
        for signal, n in (("traces", 3), ("logs", 1), ("metrics", 1)):
            with self.subTest(signal=signal):
                out = os.path.join(self.dir.name, signal)
                p = subprocess.run([PROBE, signal, self.records, "0123456789abcdef0123456789abcdef", out],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.strip(), "%d records" % n)
                got = decode(signal, out + ".pb")
                self.assertTrue(got["reencoded"], "the protobuf holds bytes the .proto files do not explain")
                want = json.loads(read(out + ".json"))
                self.assertEqual(normal(got["message"]), normal(want))
                self.assertEqual(gzip.decompress(read(out + ".pb.gz")), read(out + ".pb"))
                msg = got["message"]
                if signal == "traces":
                    spans = msg["resourceSpans"][0]["scopeSpans"][0]["spans"]
                    page = [s for s in spans if s["name"] == "page Home"][0]
                    self.assertEqual([e["name"] for e in page["events"]], ["api", "api"])
                    self.assertEqual(len(page["traceId"]), 32)
                    attrs = {a["key"]: a["value"] for a in page["attributes"]}
                    self.assertEqual(attrs["pacer.total_ms"], {"doubleValue": 352.75})
                    self.assertEqual(attrs["pacer.main"], {"boolValue": True})
                    self.assertEqual(attrs["pacer.instance"], {"intValue": "7"})
                if signal == "metrics":
                    names = [m["name"] for m in msg["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]]
                    self.assertIn("pacer.frames.frames", names)
                    self.assertIn("pacer.frames.levels.best", names)


class Peer:
    """Loopback HTTP: records each POST, answers a protobuf partial_success."""

    def __init__(self, answer=b""):
        self.posts = []
        peer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                peer.posts.append((self.path, dict(self.headers), body))
                ct = "application/x-protobuf" if "protobuf" in self.headers.get("Content-Type", "") else "application/json"
                data = answer if ct == "application/x-protobuf" else b"{}"
                self.send_response(200)
                self.send_header("Content-Type", ct)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class UploaderSends(unittest.TestCase):
    def replay(self, peer, *extra):
        d = tempfile.mkdtemp()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PACER_OTLP_")}
            env["PACER_KEY"] = "k"
            return subprocess.run([PACER, "replay", "--config", SHOP, "--app", "shop", "--server", peer.url,
                                   "--spool", os.path.join(d, "spool.db"), *extra, EVENTS],
                                  capture_output=True, text=True, timeout=60, env=env)
        finally:
            shutil.rmtree(d)

    def test_default_is_gzip_protobuf(self):
        # partial_success { rejected_spans: 2, error_message: "two bad" }
        answer = b"\x0a\x0b\x08\x02\x12\x07two bad"
        peer = Peer(answer)
        try:
            p = self.replay(peer)
            self.assertEqual(p.returncode, 0, p.stderr)
            records = [json.loads(l) for l in p.stdout.splitlines()]
            self.assertEqual(peer.posts[0][0], "/v1/traces")
            # the records may go in more than one batch, as the spool fills
            spans = []
            for path, headers, body in peer.posts:
                if path != "/v1/traces":
                    continue
                self.assertEqual(headers["Content-Type"], "application/x-protobuf")
                self.assertEqual(headers["Content-Encoding"], "gzip")
                raw = os.path.join(tempfile.mkdtemp(), "body.pb")
                with open(raw, "wb") as f:
                    f.write(gzip.decompress(body))
                got = decode("traces", raw)
                shutil.rmtree(os.path.dirname(raw))
                self.assertTrue(got["reencoded"])
                spans += [s for rs in got["message"]["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
            self.assertEqual(len(spans), len(records))
            home = [s for s in spans if s["name"] == "page ShopHomeWindow"][0]
            rec = [r for r in records if r.get("page") == "ShopHomeWindow"][0]
            attrs = {a["key"]: a["value"] for a in home["attributes"]}
            self.assertEqual(attrs["pacer.total_ms"]["doubleValue"], rec["total_ms"])
            self.assertEqual([e["name"] for e in home["events"]], ["api"] * len(rec["apis"]))
            # the protobuf answer's partial_success is read and reported
            self.assertIn("rejected %d record(s): two bad" % (2 * len(peer.posts)), p.stderr)
        finally:
            peer.close()

    def test_json_and_no_compression_on_request(self):
        peer = Peer()
        try:
            p = self.replay(peer, "--otlp-protocol", "json", "--otlp-compression", "none")
            self.assertEqual(p.returncode, 0, p.stderr)
            _, headers, body = peer.posts[0]
            self.assertEqual(headers["Content-Type"], "application/json")
            self.assertNotIn("Content-Encoding", headers)
            self.assertIn("resourceSpans", json.loads(body))
            p = self.replay(peer, "--otlp-protocol", "http/protobuf")
            self.assertEqual(p.returncode, 2)
            self.assertIn("OTLP protocol 'http/protobuf': expected protobuf, json or grpc", p.stderr)
        finally:
            peer.close()


if __name__ == "__main__":
    if not node_ok():
        print("skipped: node or tests/server/otel/node_modules missing (run scripts/install-deps.sh)")
        sys.exit(1 if os.environ.get("CI") else 77)
    unittest.main()
