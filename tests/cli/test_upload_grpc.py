"""Upload over OTLP/gRPC (--otlp-protocol grpc), against a real gRPC server:
@grpc/grpc-js with the OpenTelemetry JS SDK's opentelemetry-proto messages
(tests/server/otel/grpc-receiver.js, test infrastructure; grpc_receiver.py
runs it). It serves the three Export services, decodes every request,
records the HTTP/2 headers and the message's compressed flag as they came,
stores a batch id once (as pacerd does), and answers what each test asks:
UNAVAILABLE or RESOURCE_EXHAUSTED with or without a google.rpc.RetryInfo,
INVALID_ARGUMENT, UNAUTHENTICATED, a partial_success, or a SIGKILL of itself
between storing a batch and answering.

Checked (docs/otlp-mapping.md, "OTLP/gRPC"): each record arrives exactly
once, the request message byte for byte the protobuf the uploader sends
over HTTP, gzip (compressed flag 1) or not; the key as `authorization:
Bearer`, the batch id as `x-pacer-batch-id`, grpc-timeout; the status table
of the OTLP specification (retry, RetryInfo's delay and its doubling, drop
and count); a crash of the server between storing and answering costs
nothing and stores nothing twice; TLS with ALPN h2; a server that is not
gRPC keeps the records spooled; where the page config comes from.
Skipped (exit 77) without node and the npm packages (scripts/install-deps.sh)."""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc_receiver  # noqa: E402
from grpc_receiver import (CANCELLED, INVALID_ARGUMENT, OK, RESOURCE_EXHAUSTED,  # noqa: E402,F401
                           UNAUTHENTICATED, UNAVAILABLE, GrpcReceiver, items)

PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]
PROBE = os.environ["UPLOAD_PROBE"]
OTLP_PROBE = os.environ["OTLP_PROBE"]
SHOP = os.path.join(ROOT, "tests", "data", "shop.xml")
EVENTS = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")
EMPTY = os.path.join(ROOT, "tests", "data", "empty.jsonl")
PATHS = {"traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
         "logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
         "metrics": "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"}

# records of the other two signals, as instrumentation submits them
TS = 1_000_000_000
EXTRA = [
    {"t": TS + 5_000_000_000, "ev": "record", "record": {
        "type": "jank", "kind": "jank", "duration_ms": 900.0, "page": "ShopHomeWindow", "fingerprint": "abc",
        "stack": [{"function": "compute", "module": "shop", "in_app": True}]}},
    {"t": TS + 6_000_000_000, "ev": "record", "record": {
        "type": "frames", "window": "ShopHomeWindow", "instance": 1, "final": True, "frames": 120, "slow": 3,
        "frozen": 0, "dropped_frames": 5, "delay_ms": 40.5, "max_frame_ms": 33.25, "refresh_ms": 16.667,
        "levels": {"best": 100, "normal": 15}}},
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def base_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PACER_OTLP_", "PACER_CONFIG_SERVER"))}
    env.update(extra)
    return env


def attrs_of(o):
    return {a["key"]: a["value"] for a in o.get("attributes", [])}


def probe_window_instances(calls):
    """pacer.instance of every ProbeWindow span the receiver stored."""
    out = []
    for c in calls:
        if c["stored"] and c["signal"] == "traces":
            for s in items(c):
                if s["name"] == "page ProbeWindow":
                    a = {x["key"]: x["value"] for x in s["attributes"]}
                    out.append(int(a["pacer.instance"]["intValue"]))
    return out


class Grpc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not grpc_receiver.available():
            raise unittest.SkipTest("node or the npm packages of tests/server/otel are missing")

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pacer-grpc-")
        self.spool = os.path.join(self.dir, "spool.db")
        self.log = os.path.join(self.dir, "calls.jsonl")
        self.rx = GrpcReceiver(self.log)
        self.events = os.path.join(self.dir, "events.jsonl")
        with open(EVENTS) as src, open(self.events, "w") as f:
            f.write(src.read())
            for e in EXTRA:
                f.write(json.dumps(e) + "\n")

    def tearDown(self):
        self.rx.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def replay(self, *extra, server=None, session="s-grpc", events=None, key="k-shop", expect=0, spool=None):
        env = base_env()
        if key:
            env["PACER_KEY"] = key
        else:
            env.pop("PACER_KEY", None)
        p = subprocess.run([PACER, "replay", "--config", SHOP, "--app", "shop", "--app-version", "2.0",
                            "--session", session, "--server", server or self.rx.url, "--otlp-protocol", "grpc",
                            "--spool", spool or self.spool, *extra, events or self.events],
                           capture_output=True, text=True, timeout=90, env=env)
        self.assertEqual(p.returncode, expect, p.stderr)
        self.lines = p.stdout.splitlines()
        return [json.loads(line) for line in self.lines], p.stderr

    def probe(self, *mode, server=None):
        p = subprocess.run([PROBE, server or self.rx.url, self.spool, "probe", *mode], capture_output=True,
                           text=True, timeout=90, env=base_env(PACER_OTLP_PROTOCOL="grpc", PACER_KEY="k-probe"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return dict(kv.split("=") for kv in p.stdout.split())

    def delivered(self, calls=None):
        """Every item the receiver stored, by signal."""
        out = {"traces": [], "logs": [], "metrics": []}
        for c in calls if calls is not None else self.rx.calls():
            if c["stored"]:
                out[c["signal"]] += items(c)
        return out

    def otlp_probe_body(self, signal, lines, batch):
        """The protobuf the uploader's encoder makes of these records (their
        JSON lines) as batch `batch`: what OTLP/HTTP sends as the body."""
        path = os.path.join(self.dir, "records-%s.jsonl" % signal)
        with open(path, "w") as f:
            for line in lines:
                f.write(line + "\n")
        out = os.path.join(self.dir, "probe-%s" % signal)
        p = subprocess.run([OTLP_PROBE, signal, path, batch, out], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out + ".pb", "rb") as f:
            return f.read()

    def test_every_record_once_gzip_and_plain(self):
        import base64
        for compression in ("gzip", "none"):
            with self.subTest(compression=compression):
                os.path.exists(self.spool) and os.unlink(self.spool)
                before = len(self.rx.calls())
                records, err = self.replay("--otlp-compression", compression, session="s-" + compression)
                calls = self.rx.calls()[before:]
                # one batch a signal, or more when the spool took the records
                # in several rounds
                self.assertEqual(sorted({c["signal"] for c in calls}), ["logs", "metrics", "traces"])
                self.assertIn("uploaded %d batch(es)" % len(calls), err)
                lines = {sig: [line for line, r in zip(self.lines, records)
                               if {"jank": "logs", "frames": "metrics"}.get(r["type"], "traces") == sig]
                         for sig in ("traces", "logs", "metrics")}
                for c in calls:
                    self.assertEqual(c["code"], OK)
                    self.assertTrue(c["stored"])
                    self.assertEqual(c["path"], PATHS[c["signal"]])
                    h = c["headers"]
                    self.assertEqual(h["content-type"], "application/grpc")
                    self.assertEqual(h["te"], "trailers")
                    self.assertIn("gzip", h["grpc-accept-encoding"].split(","))
                    if compression == "gzip":
                        self.assertEqual(h["grpc-encoding"], "gzip")
                        self.assertEqual(c["flag"], 1)
                    else:
                        self.assertNotIn("grpc-encoding", h)
                        self.assertEqual(c["flag"], 0)
                    # the deadline: the request's, or what is left of the
                    # 3 s the run gives the upload at its end
                    m = re.fullmatch(r"(\d{1,8})m", h["grpc-timeout"])
                    self.assertTrue(m, h["grpc-timeout"])
                    self.assertTrue(1 <= int(m.group(1)) <= 15000)
                    self.assertIsNotNone(c["deadlineMs"])
                    self.assertEqual(c["metadata"]["authorization"], "Bearer k-shop")
                    self.assertRegex(c["metadata"]["x-pacer-batch-id"], r"^[0-9a-f]{32}$")
                    self.assertEqual(c["batch"], c["metadata"]["x-pacer-batch-id"])
                    # the message is the OTLP/HTTP body of the same batch: the
                    # signal's next records, in order
                    got = items(c)
                    n = len({p["timeUnixNano"] for p in got}) if c["signal"] == "metrics" else len(got)
                    want, lines[c["signal"]] = lines[c["signal"]][:n], lines[c["signal"]][n:]
                    self.assertEqual(base64.b64decode(c["raw"]), self.otlp_probe_body(c["signal"], want, c["batch"]))
                self.assertEqual(lines, {"traces": [], "logs": [], "metrics": []})
                got = self.delivered(calls)
                # each record once: page and startup spans, the jank log
                # record, the frames record's points
                spans = got["traces"]
                self.assertEqual(len(spans), len([r for r in records if r["type"] in ("page", "startup")]))
                self.assertEqual(len({s["traceId"] for s in spans}), len(spans))
                names = sorted(s["name"] for s in spans)
                self.assertEqual(names, sorted(("page " + r["page"]) if r["type"] == "page" else "startup " + r["kind"]
                                               for r in records if r["type"] in ("page", "startup")))
                home = [s for s in spans if s["name"] == "page ShopHomeWindow"][0]
                rec = [r for r in records if r.get("page") == "ShopHomeWindow" and r["type"] == "page"][0]
                attrs = {a["key"]: a["value"] for a in home["attributes"]}
                self.assertEqual(attrs["pacer.total_ms"]["doubleValue"], rec["total_ms"])
                self.assertEqual(int(home["startTimeUnixNano"]), rec["ts"])
                self.assertEqual(len(got["logs"]), 1)
                self.assertIn({"key": "pacer.type", "value": {"stringValue": "jank"}}, got["logs"][0]["attributes"])
                self.assertGreater(len(got["metrics"]), 0)

    def spans_by_session(self):
        """How many spans of each session the receiver stored."""
        out = {}
        for c in self.rx.calls():
            if c["stored"] and c["signal"] == "traces":
                for rs in c["message"]["resourceSpans"]:
                    session = attrs_of(rs["resource"])["pacer.session"]["stringValue"]
                    out[session] = out.get(session, 0) + sum(len(ss.get("spans", [])) for ss in rs["scopeSpans"])
        return out

    def batch_calls(self, first=0):
        """The calls of the batch the call at index `first` carried."""
        calls = self.rx.calls()
        return [c for c in calls[first:] if c["batch"] == calls[first]["batch"]]

    def test_receiver_takes_the_sdk_grpc_exporter(self):
        """The receiver against an independent client: the OpenTelemetry JS
        SDK's own gRPC exporter (@opentelemetry/exporter-trace-otlp-grpc)
        delivers a span, with the headers pacer sends too."""
        script = """
const grpc = require('@grpc/grpc-js');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-grpc');
const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const md = new grpc.Metadata();
md.set('authorization', 'Bearer k-js');
md.set('x-pacer-batch-id', 'js-1');
const exporter = new OTLPTraceExporter({ url: process.argv[1], metadata: md, compression: 'gzip' });
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.getTracer('t').startSpan('from the js sdk').end();
provider.shutdown().then(() => process.stdout.write('done'), (e) => { console.error(e); process.exit(1); });
"""
        p = subprocess.run(["node", "-e", script, self.rx.url], cwd=grpc_receiver.OTEL, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        [c] = self.rx.calls()
        self.assertEqual((c["path"], c["code"], c["stored"], c["flag"]), (PATHS["traces"], OK, True, 1))
        self.assertEqual([s["name"] for s in items(c)], ["from the js sdk"])
        self.assertEqual(c["headers"]["content-type"], "application/grpc")
        self.assertEqual(c["headers"]["grpc-encoding"], "gzip")
        self.assertEqual(c["metadata"]["authorization"], "Bearer k-js")

    def test_unavailable_with_retryinfo_waits_its_delay(self):
        self.rx.answer({"code": UNAVAILABLE, "message": "overloaded", "retryDelayMs": 1500})
        records, err = self.replay(events=EVENTS)
        calls = self.batch_calls()
        self.assertEqual([c["code"] for c in calls], [UNAVAILABLE, OK])
        self.assertEqual(calls[0]["raw"], calls[1]["raw"])
        self.assertGreaterEqual(calls[1]["t"] - calls[0]["t"], 1500)
        self.assertEqual(len(self.delivered()["traces"]), len(records))
        self.assertRegex(err, r"uploaded [1-9] batch\(es\)")

    def test_retryinfo_delay_doubles_while_failures_last(self):
        # three UNAVAILABLE in a row, each with a 300 ms RetryInfo: the
        # waits are at least 300, 600 and 1200 ms (RetryInfo's own advice)
        # (the app runs 3 s: after its end the uploader makes one last try)
        self.rx.answer(*[{"code": UNAVAILABLE, "retryDelayMs": 300}] * 3)
        out = self.probe("pages", "150", "20")
        calls = self.rx.calls()
        self.assertEqual([c["code"] for c in calls[:4]], [UNAVAILABLE] * 3 + [OK])
        self.assertEqual(len({c["batch"] for c in calls[:4]}), 1)
        gaps = [calls[i + 1]["t"] - calls[i]["t"] for i in range(3)]
        for gap, want in zip(gaps, (300, 600, 1200)):
            self.assertGreaterEqual(gap, want, gaps)
        self.assertEqual(out["retries"], "3")
        for _ in range(3):
            if len(probe_window_instances(self.rx.calls())) >= 150:
                break
            self.probe("pages", "0", "0")
        self.assertEqual(sorted(probe_window_instances(self.rx.calls())), list(range(1, 151)))

    def test_resource_exhausted_retried_only_with_retryinfo(self):
        self.rx.answer({"code": RESOURCE_EXHAUSTED, "message": "quota", "retryDelayMs": 200})
        records, err = self.replay(events=EVENTS, session="s-re-retry")
        calls = self.batch_calls()
        self.assertEqual([c["code"] for c in calls], [RESOURCE_EXHAUSTED, OK])
        self.assertEqual(len(self.delivered()["traces"]), len(records))
        # without a RetryInfo it is not retryable: dropped and counted
        first = len(self.rx.calls())
        self.rx.answer({"code": RESOURCE_EXHAUSTED, "message": "too big"})
        records, err = self.replay(events=EVENTS, session="s-re-drop")
        refused = self.batch_calls(first)
        self.assertEqual([c["code"] for c in refused], [RESOURCE_EXHAUSTED])
        self.assertIn("1 batch(es) refused (gRPC RESOURCE_EXHAUSTED: too big) and dropped", err)
        # the refused records are not sent again; the rest of that run (in
        # another batch, when the spool took them in two rounds) were
        first = len(self.rx.calls())
        second, err = self.replay(events=EVENTS, session="s-re-next")
        self.assertNotIn(refused[0]["batch"], [c["batch"] for c in self.rx.calls()[first:]])
        want = {"s-re-retry": len(records), "s-re-drop": len(records) - len(items(refused[0])),
                "s-re-next": len(second)}
        self.assertEqual(self.spans_by_session(), {k: v for k, v in want.items() if v})

    def test_refusals_are_dropped_and_counted(self):
        for code, name in ((INVALID_ARGUMENT, "INVALID_ARGUMENT"), (UNAUTHENTICATED, "UNAUTHENTICATED")):
            with self.subTest(code=name):
                before = len(self.rx.calls())
                self.rx.answer({"code": code, "message": "no: %s" % name})
                out = self.probe("pages", "3", "10")
                calls = self.rx.calls()[before:]
                self.assertEqual(calls[0]["code"], code)
                self.assertEqual(out["batches_refused"], "1")
                self.assertEqual(out["retries"], "0")
                # the refused batch never again; the rest arrived
                self.assertNotIn(calls[0]["batch"], [c["batch"] for c in calls[1:]])
                refused = [int({x["key"]: x["value"] for x in s["attributes"]}["pacer.instance"]["intValue"])
                           for s in items(calls[0]) if s["name"] == "page ProbeWindow"]
                self.assertEqual(sorted(probe_window_instances(calls) + refused), [1, 2, 3])
        records, err = self.replay(events=EVENTS, key=None, expect=0)  # no key: no authorization
        self.assertNotIn("authorization", self.rx.calls()[-1]["metadata"])
        self.rx.answer({"code": UNAUTHENTICATED, "message": "unknown key for app shop"})
        records, err = self.replay(events=EVENTS, session="s-unauth")
        self.assertIn("refused (gRPC UNAUTHENTICATED: unknown key for app shop) and dropped", err)

    def test_partial_success_is_reported(self):
        self.rx.command(partial={"rejected": 3, "message": "spans[0]: not your app"})
        records, err = self.replay(events=EVENTS)
        n = len(self.rx.calls())  # each answered with 3 rejected
        self.assertIn("uploaded %d batch(es)" % n, err)
        self.assertIn("the server rejected %d record(s): spans[0]: not your app" % (3 * n), err)
        # not retried: the next run sends only its own
        self.rx.command(partial=None)
        second, _ = self.replay(events=EVENTS, session="s-after")
        batches = [c["batch"] for c in self.rx.calls()]
        self.assertEqual(len(batches), len(set(batches)))
        self.assertEqual(self.spans_by_session(), {"s-grpc": len(records), "s-after": len(second)})

    def test_server_killed_between_storing_and_answering(self):
        """The receiver stores the second call's batch and dies (SIGKILL)
        before answering; restarted on the same port, it gets that batch
        again under the same id and stores nothing twice; every record
        arrives once."""
        self.rx.command(dieAfterStoring=2)
        port = self.rx.port
        p = subprocess.Popen([PROBE, self.rx.url, self.spool, "probe", "pages", "150", "10"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=base_env(PACER_OTLP_PROTOCOL="grpc", PACER_KEY="k-probe"))
        self.rx.wait()  # killed itself
        self.assertEqual(self.rx.proc.returncode, -9)
        killed = self.rx.calls()[-1]
        self.assertTrue(killed["stored"])
        time.sleep(0.5)
        self.rx.start(port)
        out, err = p.communicate(timeout=90)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertNotIn("retries=0", out)
        # what the run could not deliver waits in the spool: the next sends it
        for _ in range(5):
            if len(probe_window_instances(self.rx.calls())) >= 150:
                break
            self.probe("pages", "0", "0")
        calls = self.rx.calls()
        self.assertEqual(sorted(probe_window_instances(calls)), list(range(1, 151)))
        again = [c for c in calls if c["batch"] == killed["batch"]]
        self.assertGreaterEqual(len(again), 2, "the unanswered batch was sent again under its id")
        self.assertTrue(all(c["duplicate"] for c in again[1:]))
        self.assertEqual(len({c["raw"] for c in again}), 1)

    def test_batches_stay_under_the_4_mib_a_grpc_server_takes(self):
        """20 records of 300 kB (6 MB): in batches whose messages stay under
        the 4 MiB grpc-js takes by default (the OTLP specification's limit),
        every one arrives; in one batch the server would refuse it."""
        import base64
        import random
        rng = random.Random(7)
        events = os.path.join(self.dir, "big.jsonl")
        with open(events, "w") as f:
            for i in range(20):
                text = base64.b64encode(rng.randbytes(225000)).decode()  # 300 000 characters
                f.write(json.dumps({"t": TS + i * 1000, "ev": "record",
                                    "record": {"type": "blob", "i": i, "text": text}}) + "\n")
        # the server down for the run: the spool holds them all when the
        # next run (with nothing of its own) sends them
        down = "http://127.0.0.1:%d" % free_port()
        records, err = self.replay("--otlp-compression", "none", events=events, server=down)
        self.assertIn("uploaded 0 batch(es)", err)
        self.replay("--otlp-compression", "none", events=EMPTY)
        calls = self.rx.calls()
        self.assertGreaterEqual(len(calls), 2)
        for c in calls:
            self.assertEqual(c["code"], OK)
            self.assertLess(len(base64.b64decode(c["raw"])), 4 << 20)
        spans = self.delivered()["traces"]
        self.assertEqual(sorted(int(attrs_of(s)["pacer.i"]["intValue"]) for s in spans), list(range(20)))
        self.assertTrue(all(len(attrs_of(s)["pacer.text"]["stringValue"]) == 300000 for s in spans))

    def test_not_a_grpc_server_keeps_the_records(self):
        # an HTTP/1.1 server: the HTTP/2 preface gets no gRPC answer
        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            records, err = self.replay(events=EVENTS, server="http://127.0.0.1:%d" % srv.server_address[1],
                                       session="s-lost")
        finally:
            srv.shutdown()
            srv.server_close()
        self.assertIn("uploaded 0 batch(es)", err)
        self.assertIn("the rest waits in the spool for the next run (gRPC UNAVAILABLE", err)
        # the next run, to the gRPC receiver, delivers both
        second, err = self.replay(events=EVENTS, session="s-found")
        sessions = sorted({a["value"]["stringValue"] for c in self.rx.calls() if c["stored"]
                           for rs in c["message"]["resourceSpans"] for a in rs["resource"]["attributes"]
                           if a["key"] == "pacer.session"})
        self.assertEqual(sessions, ["s-found", "s-lost"])
        self.assertEqual(len(self.delivered()["traces"]), len(records) + len(second))

    def test_tls_with_alpn_h2(self):
        if not shutil.which("openssl"):
            self.skipTest("openssl is missing")
        cert, key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=grpc test",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)
        tls = GrpcReceiver(os.path.join(self.dir, "tls-calls.jsonl"), tls=(cert, key))
        try:
            self.assertTrue(tls.url.startswith("https://"))
            # not trusted: not delivered, kept
            records, err = self.replay(events=EVENTS, server=tls.url, session="s-untrusted")
            self.assertIn("uploaded 0 batch(es)", err)
            self.assertEqual(tls.calls(), [])
            records2, err = self.replay("--ca", cert, events=EVENTS, server=tls.url, session="s-trusted")
            self.assertRegex(err, r"uploaded [1-9] batch\(es\)")
            self.assertEqual(len(self.delivered(tls.calls())["traces"]), len(records) + len(records2))
            self.assertEqual(tls.calls()[0]["metadata"]["authorization"], "Bearer k-shop")
        finally:
            tls.close()

    def test_page_config_source(self):
        """Over gRPC the config comes from --config-server, else from no
        server: a cached server config is then not used either."""
        cache = os.path.join(self.dir, "config-shop.xml")
        with open(cache, "w") as f:
            f.write('<pacer><page id="ShopMerchantPage"/></pacer>')
        plain, _ = self.replay(events=EVENTS, session="s-cfg")
        without_cache = os.path.join(self.dir, "other")
        os.mkdir(without_cache)
        reference, _ = self.replay(events=EVENTS, session="s-cfg", spool=os.path.join(without_cache, "spool.db"))
        strip = lambda rs: [{k: v for k, v in r.items() if k not in ("ts", "pid")} for r in rs]  # noqa: E731
        self.assertEqual(strip(plain), strip(reference), "the cached server config was used without a config server")

        # a config server: GET /v1/config/shop there, with the key
        seen = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.path, self.headers.get("Authorization")))
                body = b'<pacer><page id="ShopHomeWindow"/></pacer>'
                self.send_response(200)
                self.send_header("ETag", '"c1"')
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            self.replay("--config-server", "http://127.0.0.1:%d" % srv.server_address[1], events=EVENTS,
                        session="s-cfg2")
        finally:
            srv.shutdown()
            srv.server_close()
        self.assertIn(("/v1/config/shop", "Bearer k-shop"), seen)
        with open(cache) as f:
            self.assertIn("ShopHomeWindow", f.read())  # cached for offline starts

    def test_bad_options_are_named(self):
        cases = [
            (["--server", "http://127.0.0.1:4317/v1/traces", "--otlp-protocol", "grpc"], "without a path"),
            (["--server", "http://127.0.0.1:4317", "--otlp-protocol", "grpc2"], "expected protobuf, json or grpc"),
            (["--server", "http://127.0.0.1:4317", "--otlp-protocol", "grpc", "--config-server", "ftp://x"],
             "expected http:// or https://"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                p = subprocess.run([PACER, "replay", "--spool", self.spool, *args, EVENTS], capture_output=True,
                                   text=True, timeout=30, env=base_env())
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(message, p.stderr)
                p = subprocess.run([PACER, "run", *args, "--", "true"], capture_output=True, text=True,
                                   timeout=30, env=base_env())
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(message.replace("expected http:// or https://", "wants an http:// or https://"),
                              p.stderr)
        # a trailing slash is no path
        records, err = self.replay(events=EVENTS, server=self.rx.url + "/")
        self.assertRegex(err, r"uploaded [1-9] batch\(es\)")
        self.assertEqual(len(self.delivered()["traces"]), len(records))
        # --help names the protocol, the endpoint and the config server
        h = subprocess.run([PACER, "run", "--help"], capture_output=True, text=True).stdout
        for word in ("--otlp-protocol", "grpc", "4317", "--config-server"):
            self.assertIn(word, h)


if __name__ == "__main__":
    if not grpc_receiver.available():
        print("skipped: node or the npm packages of tests/server/otel are missing")
        sys.exit(77)
    unittest.main()
