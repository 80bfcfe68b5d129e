"""pacerd's OTLP/gRPC front (--grpc-listen) as a raw HTTP/2 client sees it
(grpc_client.py, on python3-h2): the key is checked on the call's headers
before any of its message is read (UNAUTHENTICATED, PERMISSION_DENIED) and
a refused call stores nothing; an Export's spans are stored and read back
through the read APIs, a rejected one named in partial_success; a batch id
sent twice is stored once; gzip; the limits (a message announced or
inflating over --grpc-max-message: RESOURCE_EXHAUSTED without RetryInfo,
not to be retried; a key's rate: RESOURCE_EXHAUSTED with a RetryInfo);
grpc-timeout (DEADLINE_EXCEEDED); what is not gRPC (415) or not an OTLP
method (UNIMPLEMENTED); /metrics counts the front's calls by status;
SIGTERM answers a call not yet complete UNAVAILABLE with a RetryInfo,
then GOAWAY. Over TLS (--tls-cert): ALPN h2, a client that offers only
http/1.1 is refused, and pacer's own uploader (pacer replay
--otlp-protocol grpc) verifies the certificate and delivers."""
import gzip
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import ADMIN, KEYS, Pacerd, scrape  # noqa: E402
import grpc_client as g  # noqa: E402
from test_tls import make_certificate  # noqa: E402

PACER = os.environ.get("PACER")
ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))

T0 = 1_700_006_400 * 10**9
MAX_MESSAGE = 65536


def tid(i):
    return bytes.fromhex("%032x" % (0xABC000 + i))


def sid(i):
    return bytes.fromhex("%016x" % (0xDEF000 + i))


class Grpc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        keys = "shop %s\nother %s\nlimited limited-key-1 rate=1/s burst=1\n" % (KEYS["shop"], KEYS["other"])
        cls.d = Pacerd(grpc=True, keys_text=keys, extra_args=["--grpc-max-message", str(MAX_MESSAGE)])
        cls.port = cls.d.grpc_port

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def spans_named(self, app, prefix):
        got = self.d.query("/api/v1/spans/search?app=%s&limit=1000" % app)["spans"]
        return sorted((s for s in got if s["name"].startswith(prefix)), key=lambda s: s["name"])

    def test_refused_on_the_headers_before_any_message(self):
        for key, want in ((None, "UNAUTHENTICATED"), ("wrong-key", "UNAUTHENTICATED"), (ADMIN, "PERMISSION_DENIED")):
            with self.subTest(key=key):
                c = g.Conn(self.port)
                try:
                    s = c.start("traces", key)  # headers only: no message, the stream stays open
                    a = c.wait(s, 10)
                    self.assertTrue(a.ended, "no answer on the headers alone")
                    self.assertEqual(a.headers.get(":status"), "200")
                    self.assertEqual(a.status, want)
                    self.assertIn("key" if key != ADMIN else "admin token", a.message)
                    self.assertIsNone(a.details())  # not to be retried: no RetryInfo
                finally:
                    c.close()
        # a whole call with a wrong key: nothing stored
        before = scrape(self.d).get('pacerd_grpc_records_total{signal="traces"}', 0)
        msg = g.traces_request([g.span(tid(1), sid(1), "unauth-1", T0, 10**6)])
        a = g.call(self.port, "traces", msg, "wrong-key")
        self.assertEqual(a.status, "UNAUTHENTICATED")
        self.assertEqual(self.spans_named("shop", "unauth-"), [])
        self.assertEqual(scrape(self.d).get('pacerd_grpc_records_total{signal="traces"}', 0), before)
        self.assertEqual(scrape(self.d)['pacerd_grpc_calls_total{code="UNAUTHENTICATED"}'], 3)
        self.assertEqual(scrape(self.d)['pacerd_grpc_calls_total{code="PERMISSION_DENIED"}'], 1)

    def test_export_stored_read_back_and_partial_success(self):
        spans = [g.span(tid(10 + i), sid(10 + i), "export-%d" % i, T0 + i * 10**9, (i + 1) * 7 * 10**6,
                        [("route", "/r%d" % i)]) for i in range(5)]
        spans.append(g.span(b"\x01\x02\x03", sid(99), "export-bad", T0, 10**6))  # a trace id of 3 bytes
        before = scrape(self.d).get('pacerd_grpc_records_total{signal="traces"}', 0)
        a = g.call(self.port, "traces", g.traces_request(spans), KEYS["shop"])
        self.assertEqual(a.status, "OK", a.message)
        self.assertEqual(a.headers.get("content-type"), "application/grpc")
        rejected, why = a.rejected()
        self.assertEqual(rejected, 1)
        self.assertIn("trace", why.lower())
        got = self.spans_named("shop", "export-")
        self.assertEqual([s["name"] for s in got], ["export-%d" % i for i in range(5)])
        for i, s in enumerate(got):
            self.assertAlmostEqual(s["durationMs"], (i + 1) * 7.0)
            self.assertEqual(s["traceId"], tid(10 + i).hex())
            self.assertEqual(s["attributes"], [{"key": "route", "value": {"stringValue": "/r%d" % i}}])
        self.assertEqual(scrape(self.d)['pacerd_grpc_records_total{signal="traces"}'] - before, 5)

    def test_a_batch_id_twice_is_stored_once_and_gzip(self):
        msg = g.traces_request([g.span(tid(200 + i), sid(200 + i), "twice-%d" % i, T0, 10**6) for i in range(3)])
        for compressed in (False, True):
            a = g.call(self.port, "traces", msg, KEYS["shop"], extra=[("x-pacer-batch-id", "grpc-twice-1")],
                       compressed=compressed)
            self.assertEqual(a.status, "OK", a.message)
        self.assertEqual(len(self.spans_named("shop", "twice-")), 3)
        a = g.call(self.port, "traces", msg, KEYS["shop"], extra=[("x-pacer-batch-id", "bad id!")])
        self.assertEqual(a.status, "INVALID_ARGUMENT")
        self.assertIn("x-pacer-batch-id", a.message)
        gz = g.traces_request([g.span(tid(300), sid(300), "gzip-1", T0, 3 * 10**6)])
        a = g.call(self.port, "traces", gz, KEYS["shop"], compressed=True)
        self.assertEqual(a.status, "OK", a.message)
        self.assertEqual([s["durationMs"] for s in self.spans_named("shop", "gzip-")], [3.0])

    def test_messages_over_the_limit(self):
        # announced over the limit: refused on its prefix, before the rest is sent
        c = g.Conn(self.port)
        try:
            s = c.start("traces", KEYS["shop"])
            c.send(s, b"\x00" + (MAX_MESSAGE + 1).to_bytes(4, "big") + b"\x0a", end=False)
            a = c.wait(s)
            self.assertEqual(a.status, "RESOURCE_EXHAUSTED")
            self.assertIsNone(a.details())  # without RetryInfo: the client must not retry it
        finally:
            c.close()
        # a gzip bomb: small as sent, over the limit inflated
        bomb = gzip.compress(b"\x0a\x00" * (4 * MAX_MESSAGE))
        self.assertLess(len(bomb), MAX_MESSAGE)
        c = g.Conn(self.port)
        try:
            s = c.start("traces", KEYS["shop"], encoding="gzip")
            c.send(s, b"\x01" + len(bomb).to_bytes(4, "big") + bomb)
            a = c.wait(s)
            self.assertEqual(a.status, "RESOURCE_EXHAUSTED")
            self.assertIn("inflates", a.message)
        finally:
            c.close()
        self.assertGreaterEqual(scrape(self.d)['pacerd_grpc_rejects_total{reason="too_large"}'], 2)

    def test_bad_calls(self):
        a = g.call(self.port, "traces", b"\xff\xff\xff", KEYS["shop"])
        self.assertEqual(a.status, "INVALID_ARGUMENT")
        c = g.Conn(self.port)
        try:
            s = c.start(path="/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
                        key=KEYS["shop"], end=True)
            self.assertEqual(c.wait(s).status, "UNIMPLEMENTED")
            s = c.start("traces", KEYS["shop"], content_type="application/json", end=True)
            a = c.wait(s)
            self.assertEqual(a.headers.get(":status"), "415")
            s = c.start("traces", KEYS["shop"])  # flagged compressed without grpc-encoding
            c.send(s, g.lpm(g.traces_request([]), compressed=True))
            self.assertEqual(c.wait(s).status, "INTERNAL")
            s = c.start("traces", KEYS["shop"], encoding="zstd", end=True)
            self.assertEqual(c.wait(s).status, "UNIMPLEMENTED")
            s = c.start("traces", KEYS["shop"])  # two messages in a unary call
            c.send(s, g.lpm(g.traces_request([])) * 2)
            self.assertEqual(c.wait(s).status, "INTERNAL")
        finally:
            c.close()

    def test_the_keys_rate_is_resource_exhausted_with_retryinfo(self):
        # 5 records against a burst of 1 at 1/s: some 4 s in debt
        msg = g.traces_request([g.span(tid(400 + i), sid(400 + i), "limited-%d" % i, T0, 10**6) for i in range(5)],
                               service="limited")
        first = g.call(self.port, "traces", msg, "limited-key-1")
        self.assertEqual(first.status, "OK", first.message)
        second = g.call(self.port, "traces", msg, "limited-key-1")
        self.assertEqual(second.status, "RESOURCE_EXHAUSTED")
        code, _, retry = second.details()
        self.assertEqual(code, 8)  # the Status's code is grpc-status's
        self.assertGreaterEqual(retry, 1)

    def test_grpc_timeout_is_deadline_exceeded(self):
        c = g.Conn(self.port)
        try:
            s = c.start("traces", KEYS["shop"], extra=[("grpc-timeout", "300m")])
            c.send(s, b"\x00\x00\x00\x01", end=False)  # part of a prefix, then nothing
            a = c.wait(s, 10)
            self.assertEqual(a.status, "DEADLINE_EXCEEDED")
            s = c.start("traces", KEYS["shop"], extra=[("grpc-timeout", "soon")], end=True)
            self.assertEqual(c.wait(s).status, "INTERNAL")
        finally:
            c.close()

    def test_zz_sigterm_refuses_new_calls(self):
        c = g.Conn(self.port)
        try:
            c.call("traces", g.traces_request([]), KEYS["shop"])  # the connection is up
            s = c.start("traces", KEYS["shop"])  # a call that is not complete when the drain starts
            time.sleep(0.2)
            self.d.proc.send_signal(15)
            a = c.wait(s, 10)
            self.assertTrue(a.ended)
            self.assertIsNone(a.reset)
            self.assertEqual(a.status, "UNAVAILABLE")
            self.assertGreaterEqual(a.details()[2], 1)  # RetryInfo: come back
            deadline = time.monotonic() + 10
            while c.goaway is None and time.monotonic() < deadline and c.pump(0.5):
                pass
            self.assertEqual(c.goaway, 0)  # then GOAWAY, NO_ERROR
            self.d.proc.wait(timeout=30)
            self.assertEqual(self.d.proc.returncode, 0)
        finally:
            c.close()


class GrpcConnections(unittest.TestCase):
    def test_connections_in_all_are_bounded(self):
        d = Pacerd(["--max-connections", "16"], grpc=True)
        conns = []
        try:
            conns = [g.Conn(d.grpc_port) for _ in range(20)]
            deadline = time.monotonic() + 5
            while sum(c.closed for c in conns) < 4 and time.monotonic() < deadline:
                for c in conns:
                    c.pump(0.02)
            self.assertEqual(sum(c.closed for c in conns), 4)  # closed at accept
            self.assertEqual(scrape(d)['pacerd_grpc_rejects_total{reason="connections"}'], 4)
            self.assertEqual(scrape(d)["pacerd_grpc_connections"], 16)
            for c in conns[:4]:
                c.close()
            time.sleep(0.5)
            a = g.call(d.grpc_port, "traces", g.traces_request([]), KEYS["shop"])  # room again
            self.assertEqual(a.status, "OK", a.message)
        finally:
            for c in conns:
                c.close()
            d.close()


class GrpcFullDisk(unittest.TestCase):
    """The store's file system fills: an Export is UNAVAILABLE with a
    RetryInfo (retried by OTLP clients), /healthz says so; with room again
    the same calls store, and nothing acknowledged is lost. Needs root (a
    tmpfs), as test_faults."""

    def test_full_disk_is_unavailable_with_retryinfo(self):
        if os.geteuid() != 0:
            if os.environ.get("CI"):
                raise AssertionError("a tmpfs needs root (CI runs make test as root)")
            self.skipTest("a tmpfs needs root")
        mnt = tempfile.mkdtemp(prefix="pacerd-grpc-full-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt], check=True)
        d = None
        try:
            d = Pacerd(db=os.path.join(mnt, "pacer.db"), grpc=True)

            def export(k):
                msg = g.traces_request([g.span(tid(1000 * k + i), sid(1000 * k + i), "full-%d-%d" % (k, i), T0,
                                               (i + 1) * 10**6) for i in range(200)])
                return g.call(d.grpc_port, "traces", msg, KEYS["shop"], extra=[("x-pacer-batch-id", "full-%d" % k)])

            for k in range(2):
                self.assertEqual(export(k).status, "OK")
            fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(fd, b"\0" * 65536)
            except OSError:
                pass
            finally:
                os.close(fd)
            for k in range(2, 5):
                a = export(k)
                self.assertEqual(a.status, "UNAVAILABLE", a.message)
                code, _, retry = a.details()
                self.assertEqual((code, retry), (14, 5))
            status, _, body = d.request("GET", "/healthz")
            self.assertEqual(status, 503)
            self.assertEqual(json.loads(body)["status"], "disk_full")
            self.assertGreaterEqual(scrape(d)['pacerd_grpc_calls_total{code="UNAVAILABLE"}'], 3)
            os.unlink(os.path.join(mnt, "filler"))
            for k in range(2, 5):
                self.assertEqual(export(k).status, "OK")
            got = d.query("/api/v1/spans/search?app=shop&limit=1000")["spans"]
            self.assertEqual(len([s for s in got if s["name"].startswith("full-")]), 5 * 200)
        finally:
            try:
                if d:
                    d.close()
            finally:
                subprocess.run(["umount", "-l", mnt], capture_output=True)
                os.rmdir(mnt)


class GrpcTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pacerd-grpc-tls-")
        cls.cert, cls.key = make_certificate(cls.tmp)
        cls.d = Pacerd(["--tls-cert", cls.cert, "--tls-key", cls.key], scheme="https", grpc=True)
        cls.d.ssl_context = ssl.create_default_context(cafile=cls.cert)

    @classmethod
    def tearDownClass(cls):
        cls.d.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def context(self, alpn):
        ctx = ssl.create_default_context(cafile=self.cert)
        ctx.set_alpn_protocols(alpn)
        return ctx

    def test_alpn_h2(self):
        self.assertTrue(self.d.grpc_base.startswith("https://"))
        msg = g.traces_request([g.span(tid(500), sid(500), "tls-1", T0, 4 * 10**6)])
        a = g.call(self.d.grpc_port, "traces", msg, KEYS["shop"], tls=self.context(["h2"]))
        self.assertEqual(a.status, "OK", a.message)
        self.assertEqual(a.rejected(), (0, ""))
        got = [s for s in self.d.query("/api/v1/spans/search?app=shop")["spans"] if s["name"] == "tls-1"]
        self.assertEqual([s["durationMs"] for s in got], [4.0])
        before = scrape(self.d)['pacerd_grpc_rejects_total{reason="protocol"}']
        with self.assertRaises((ssl.SSLError, OSError)):
            c = g.Conn(self.d.grpc_port, tls=self.context(["http/1.1"]))  # no h2: refused in the handshake
            try:
                c.call("traces", msg, KEYS["shop"])
                raise OSError("answered without h2") if c.closed else AssertionError("served without ALPN h2")
            finally:
                c.close()
        self.assertEqual(scrape(self.d)['pacerd_grpc_rejects_total{reason="protocol"}'] - before, 1)

    def test_the_uploader_verifies_and_delivers(self):
        if not PACER:
            self.skipTest("PACER is not set")
        spool = os.path.join(self.tmp, "spool.db")
        events = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")
        config = os.path.join(ROOT, "tests", "data", "shop.xml")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PACER_OTLP_", "PACER_CONFIG_SERVER"))}
        env["PACER_KEY"] = KEYS["shop"]

        def replay(*extra):
            return subprocess.run([PACER, "replay", "--config", config, "--app", "shop", "--app-version", "grpc-tls",
                                   "--server", self.d.grpc_base, "--otlp-protocol", "grpc", "--spool", spool] +
                                  list(extra) + [events], capture_output=True, text=True, timeout=60, env=env)

        def stored():
            return sum(p["count"] for p in self.d.query("/api/v1/pages?app=shop&version=grpc-tls")["pages"])

        p = replay()  # the system's CAs do not know this certificate
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(stored(), 0)
        p = replay("--ca", self.cert)
        self.assertEqual(p.returncode, 0, p.stderr)
        pages = [r for r in map(json.loads, p.stdout.splitlines()) if r["type"] == "page"]
        self.assertTrue(pages)
        self.assertEqual(stored(), 2 * len(pages))  # this run's and the previous run's, from the spool


if __name__ == "__main__":
    unittest.main()
