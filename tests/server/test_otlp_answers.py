"""Every answer of POST /v1/traces, /v1/logs and /v1/metrics as the OTLP/HTTP
specification asks ("OTLP/HTTP Response", "Failures", "Bad Data",
"Throttling"), for each signal, in protobuf and in JSON, read by an
independent decoder (otel/otlp-answers.js: protobufjs with the
OpenTelemetry JS SDK's opentelemetry-proto messages and googleapis'
google/rpc .proto files):

  - the Content-Type of every answer is the request's, and the body is the
    message of the answer in that encoding: protobuf that encodes again to
    the same bytes, JSON with only the message's fields;
  - 200: an Export…ServiceResponse, partial_success unset on full success
    (protobuf: zero bytes, still with its Content-Type; JSON: {}); with
    rejected_spans / rejected_log_records / rejected_data_points and an
    error_message when items were left out, or a count of 0 and a message
    when only unknown fields were skipped;
  - 4xx and 5xx: a google.rpc.Status with the gRPC code of the status and
    pacerd's reason as its message; 400 with a google.rpc.BadRequest in its
    details; 429 and 503 with Retry-After; 401 with WWW-Authenticate;
  - the answers the HTTP layer makes before the route runs (413 from
    Content-Length, 429 when too many bodies are in memory, 503 while
    draining, 405) too; a request whose encoding cannot be known (415 for
    its Content-Type) gets JSON (docs/server.md says why);
  - pacer's own uploader reads pacerd's partial_success in both encodings
    (`pacer replay --server`).

The full disk (503 from the store) needs root (a tmpfs): skipped elsewhere,
except in CI. Skipped (exit 77) when node or the npm packages are missing:
scripts/install-deps.sh installs them."""
import base64
import gzip
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import ADMIN, KEYS, Pacerd, scrape  # noqa: E402

OTEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otel")
ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PACER = os.environ.get("PACER", "build/src/cli/pacer")
EVENTS = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")
SHOP = os.path.join(ROOT, "tests", "data", "shop.xml")

SIGNALS = ["traces", "logs", "metrics"]
ENCODINGS = {"proto": "application/x-protobuf", "json": "application/json"}
REJECTED = {"traces": "rejectedSpans", "logs": "rejectedLogRecords", "metrics": "rejectedDataPoints"}
MAX_BODY = 40000
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
# the gRPC code of each status (docs/server.md)
GRPC = {400: 3, 401: 16, 403: 7, 405: 12, 413: 8, 415: 3, 429: 8, 503: 14}
NOW = time.time_ns() - 60 * 10**9
TRACE = "5b8efff798038103d269b633813fc60c"


def node(mode, items):
    p = subprocess.run(["node", os.path.join(OTEL_DIR, "otlp-answers.js"), mode], input=json.dumps(items),
                       capture_output=True, text=True, timeout=120, cwd=OTEL_DIR)
    if p.returncode != 0:
        raise AssertionError("otlp-answers.js %s: %s" % (mode, p.stderr[-3000:]))
    return json.loads(p.stdout)


# ---- requests (OTLP JSON; protobuf through the independent encoder) ----

def good_item(signal, n=0):
    if signal == "traces":
        return {"traceId": TRACE, "spanId": "%016x" % (n + 1), "name": "answer %d" % n, "kind": 1,
                "startTimeUnixNano": str(NOW + n), "endTimeUnixNano": str(NOW + n + 5_000_000)}
    if signal == "logs":
        return {"timeUnixNano": str(NOW + n), "severityNumber": 9, "severityText": "INFO",
                "body": {"stringValue": "answer %d" % n}}
    return {"name": "answers.gauge", "gauge": {"dataPoints": [{"timeUnixNano": str(NOW + n), "asDouble": 1.5}]}}


def bad_item(signal):
    """An item pacerd rejects (docs/server.md: a required field wrong)."""
    if signal == "traces":
        return dict(good_item(signal, 7), spanId="0102")  # two bytes, not eight
    if signal == "logs":
        return dict(good_item(signal, 7), traceId="0102")
    return {"name": "answers.gauge", "gauge": {"dataPoints": [{"asDouble": 2.5}]}}  # no time


def otlp_request(signal, items, app="shop"):
    res = {"attributes": [{"key": "service.name", "value": {"stringValue": app}}]}
    scope = {"name": "answers"}
    if signal == "traces":
        return {"resourceSpans": [{"resource": res, "scopeSpans": [{"scope": scope, "spans": items}]}]}
    if signal == "logs":
        return {"resourceLogs": [{"resource": res, "scopeLogs": [{"scope": scope, "logRecords": items}]}]}
    return {"resourceMetrics": [{"resource": res, "scopeMetrics": [{"scope": scope, "metrics": items}]}]}


def bodies(cases):
    """{(signal, encoding, name): bytes} of [(signal, name, OTLP JSON)] in both encodings."""
    pb = node("encode", [{"signal": s, "request": r} for s, _, r in cases])
    out = {}
    for (s, name, r), b in zip(cases, pb):
        out[(s, "proto", name)] = base64.b64decode(b)
        out[(s, "json", name)] = json.dumps(r).encode()
    return out


# ---- HTTP ----

class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        return self.headers.get(name)


def send(port, method, path, body=b"", headers=None, conn=None, send_body=True):
    """One request on conn (or a new connection): its Answer. With
    send_body False only the headers go (Content-Length as given)."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.putrequest(method, path, skip_accept_encoding=True)
    hdrs = {"Content-Length": str(len(body))} if method == "POST" else {}
    hdrs.update(headers or {})
    for k, v in hdrs.items():
        c.putheader(k, v)
    c.endheaders(body if send_body and body else None)
    r = c.getresponse()
    data = r.read()
    a = Answer(r.status, {k: v for k, v in r.getheaders()}, data)
    if not conn:
        c.close()
    return a


def post(d, path, body, ctype, token=None, headers=None, **kw):
    h = {"Authorization": "Bearer " + token} if token else {}
    if ctype:
        h["Content-Type"] = ctype
    h.update(headers or {})
    return send(d.port, "POST", path, body, h, **kw)


class Base(unittest.TestCase):
    def check(self, cases):
        """cases: [(what, signal, encoding, answer, status, check)], where
        encoding is the one the answer must be in ("proto" or "json") and
        check is text the Status message holds, or check(message, label)
        asserts on the decoded message. Every answer is decoded in one run
        of the decoder."""
        todo = [{"signal": s, "kind": "response" if st == 200 else "status", "encoding": enc,
                 "body": base64.b64encode(a.body).decode()} for _, s, enc, a, st, _ in cases]
        decoded = node("decode", todo)
        for (what, s, enc, a, st, fn), got in zip(cases, decoded):
            label = "%s %s %s" % (what, s, enc)
            with self.subTest(label):
                self.assertEqual(a.status, st, "%s: %r" % (label, a.body[:300]))
                ctype = a.header("Content-Type")
                self.assertEqual(ctype, ENCODINGS[enc], "%s: Content-Type" % label)
                self.assertNotIn("error", got, "%s: %s: %r" % (label, got.get("error"), a.body[:300]))
                msg = got["message"]
                if enc == "json":
                    self.json_types(json.loads(a.body), st, label)
                if st == 200:
                    self.assertEqual(a.header("Retry-After"), None)
                else:
                    self.assertEqual(msg.get("code"), GRPC[st], label)
                    self.assertTrue(msg.get("message"), label)
                    if st == 400:
                        self.assertEqual([x["@type"] for x in msg.get("details", [])], [BAD_REQUEST], label)
                        v = msg["details"][0]["fieldViolations"]
                        self.assertEqual(len(v), 1, label)
                        self.assertTrue(v[0]["description"], label)
                    else:
                        self.assertNotIn("details", msg, label)
                    if st in (429, 503):
                        self.assertGreaterEqual(int(a.header("Retry-After") or "0"), 1, label + ": Retry-After")
                    if st == 401:
                        self.assertTrue((a.header("WWW-Authenticate") or "").startswith("Bearer"), label)
                if isinstance(fn, str):
                    self.assertIn(fn, msg["message"], label)
                elif fn:
                    fn(msg, label)

    def json_types(self, doc, status, label):
        """proto3 JSON of the answer: a 64-bit count as a string, an int32
        code as a number."""
        if status == 200:
            ps = doc.get("partialSuccess")
            if ps is not None:
                for k, v in ps.items():
                    self.assertIsInstance(v, str, "%s: %s" % (label, k))
        else:
            self.assertIsInstance(doc["code"], int, label)
            self.assertIsInstance(doc["message"], str, label)


class Answers(Base):
    @classmethod
    def setUpClass(cls):
        keys = "shop %s\nother %s rate=1/h burst=1\n" % (KEYS["shop"], KEYS["other"])
        cls.d = Pacerd(extra_args=["--max-body", str(MAX_BODY), "--max-inflight-bytes", "65536"], keys_text=keys)
        cases = []
        for s in SIGNALS:
            cases.append((s, "good", otlp_request(s, [good_item(s)])))
            cases.append((s, "partial", otlp_request(s, [good_item(s, 1), bad_item(s)])))
            cases.append((s, "other", otlp_request(s, [good_item(s, 2), good_item(s, 3)], app="other")))
        cls.bodies = bodies(cases)

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def each(self):
        for s in SIGNALS:
            for enc, ctype in ENCODINGS.items():
                yield s, enc, ctype, "/v1/" + s

    def test_success_and_partial_success(self):
        cases = []
        for s, enc, ctype, path in self.each():
            a = post(self.d, path, self.bodies[(s, enc, "good")], ctype, KEYS["shop"])
            cases.append(("full success", s, enc, a, 200, lambda m, label: self.assertEqual(m, {}, label)))
            if enc == "proto":
                self.assertEqual(a.body, b"", "an empty Export…ServiceResponse is zero bytes")
            else:
                self.assertEqual(json.loads(a.body), {})

            def partial(m, label, s=s):
                self.assertEqual(set(m), {"partialSuccess"}, label)
                ps = m["partialSuccess"]
                self.assertEqual(ps.get(REJECTED[s]), "1", label)
                where = {"traces": "spans[1].spanId", "logs": "logRecords[1].traceId", "metrics": "dataPoints[0]"}[s]
                self.assertIn(where, ps.get("errorMessage", ""), label)
            a = post(self.d, path, self.bodies[(s, enc, "partial")], ctype, KEYS["shop"])
            cases.append(("partial success", s, enc, a, 200, partial))
        # application/protobuf (the registered name) is answered as it was asked
        a = post(self.d, "/v1/traces", self.bodies[("traces", "proto", "good")], "application/protobuf", KEYS["shop"])
        self.assertEqual((a.status, a.header("Content-Type"), a.body), (200, "application/protobuf", b""))
        # parameters of the media type do not change the answer's
        a = post(self.d, "/v1/logs", self.bodies[("logs", "json", "good")], "application/json; charset=utf-8",
                 KEYS["shop"])
        cases.append(("charset", "logs", "json", a, 200, lambda m, label: self.assertEqual(m, {}, label)))
        # only warnings: fields pacerd does not know, rejected 0 and a message
        for s in SIGNALS:
            doc = json.loads(self.bodies[(s, "json", "good")])
            doc["futureField"] = 1
            a = post(self.d, "/v1/" + s, json.dumps(doc).encode(), "application/json", KEYS["shop"])

            def warning(m, label):
                self.assertEqual(set(m["partialSuccess"]), {"errorMessage"}, label)  # the count is 0
                self.assertIn("unknown field", m["partialSuccess"]["errorMessage"], label)
            cases.append(("warning", s, "json", a, 200, warning))
            self.assertEqual(json.loads(a.body)["partialSuccess"][REJECTED[s]], "0")
        self.check(cases)

    def test_bad_data_400(self):
        cases = []
        for s, enc, ctype, path in self.each():
            bad = b"\x0a\x05\x01" if enc == "proto" else b'{"resource'
            a = post(self.d, path, bad, ctype, KEYS["shop"])
            cases.append(("undecodable", s, enc, a, 400,
                          ("invalid protobuf" if enc == "proto" else "invalid JSON")))
            a = post(self.d, path, self.bodies[(s, enc, "good")], ctype, KEYS["shop"],
                     headers={"X-Pacer-Batch-Id": "no spaces"})

            def batch_id(m, label):
                self.assertEqual(m["details"][0]["fieldViolations"][0].get("field"), "X-Pacer-Batch-Id", label)
            cases.append(("batch id", s, enc, a, 400, batch_id))
            a = post(self.d, path, b"\x1f\x8b\x08\x00garbage", ctype, KEYS["shop"], headers={"Content-Encoding": "gzip"})
            cases.append(("corrupt gzip", s, enc, a, 400, None))
            a = post(self.d, path + "?x=1", self.bodies[(s, enc, "good")], ctype, KEYS["shop"])

            def param(m, label):
                self.assertEqual(m["details"][0]["fieldViolations"][0].get("field"), "x", label)
            cases.append(("query parameter", s, enc, a, 400, param))
        self.check(cases)

    def test_credentials_401_403(self):
        cases = []
        for s, enc, ctype, path in self.each():
            body = self.bodies[(s, enc, "good")]
            cases.append(("no key", s, enc, post(self.d, path, body, ctype), 401, "key"))
            cases.append(("unknown key", s, enc, post(self.d, path, body, ctype, "nope"), 401,
                          ("unknown key")))
            cases.append(("admin token", s, enc, post(self.d, path, body, ctype, ADMIN), 403,
                          ("app key")))
        self.check(cases)

    def test_too_large_413(self):
        bomb = gzip.compress(b" " * (4 << 20), 9)
        self.assertLess(len(bomb), MAX_BODY)
        cases = []
        for s, enc, ctype, path in self.each():
            # inflated past --max-body (ingest)
            a = post(self.d, path, bomb, ctype, KEYS["shop"], headers={"Content-Encoding": "gzip"})
            cases.append(("gzip bomb", s, enc, a, 413, "inflates to more than"))
            # Content-Length past --max-body (the HTTP layer, before a byte is read)
            a = post(self.d, path, b"x" * (MAX_BODY + 1), ctype, KEYS["shop"], headers={"Expect": "100-continue"},
                     send_body=False)
            cases.append(("Content-Length", s, enc, a, 413, "larger than the limit"))
        self.check(cases)

    def test_unsupported_415(self):
        cases = []
        for s in SIGNALS:
            # the encoding is not known: JSON
            a = post(self.d, "/v1/" + s, self.bodies[(s, "json", "good")], "text/plain", KEYS["shop"])
            cases.append(("Content-Type", s, "json", a, 415, "Content-Type"))
            a = post(self.d, "/v1/" + s, self.bodies[(s, "json", "good")], None, KEYS["shop"])
            cases.append(("no Content-Type", s, "json", a, 415, None))
            for enc, ctype in ENCODINGS.items():
                a = post(self.d, "/v1/" + s, self.bodies[(s, enc, "good")], ctype, KEYS["shop"],
                         headers={"Content-Encoding": "br"})
                cases.append(("Content-Encoding", s, enc, a, 415, "Content-Encoding"))
        self.check(cases)

    def test_method_405(self):
        cases = []
        for s in SIGNALS:
            a = send(self.d.port, "GET", "/v1/" + s, headers={"Authorization": "Bearer " + KEYS["shop"]})
            self.assertEqual(a.header("Allow"), "POST, OPTIONS")
            cases.append(("GET", s, "json", a, 405, None))
            a = send(self.d.port, "PUT", "/v1/" + s, b"\x0a\x00",
                     headers={"Content-Type": "application/x-protobuf", "Content-Length": "2"})
            cases.append(("PUT", s, "proto", a, 405, None))
        self.check(cases)
        # OPTIONS: 204, no body, no Content-Type
        a = send(self.d.port, "OPTIONS", "/v1/traces")
        self.assertEqual((a.status, a.body, a.header("Content-Type")), (204, b"", None))

    def test_throttled_429(self):
        cases = []
        # the key's rate: a record a hour, a burst of one; the first request
        # stores two, which leaves the bucket owing one
        first = post(self.d, "/v1/traces", self.bodies[("traces", "json", "other")], "application/json", KEYS["other"])
        self.assertEqual(first.status, 200, first.body)
        for s, enc, ctype, path in self.each():
            a = post(self.d, path, self.bodies[(s, enc, "other")], ctype, KEYS["other"])
            cases.append(("rate", s, enc, a, 429, "rate limit"))
        # too many bodies in memory (the HTTP layer): one held half-sent
        held = socket.create_connection(("127.0.0.1", self.d.port), timeout=30)
        try:
            held.sendall(("POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                          "Content-Type: application/json\r\nContent-Length: 38000\r\n\r\n" % KEYS["shop"]).encode()
                         + b" " * 37000)
            deadline = time.monotonic() + 20
            while scrape(self.d).get("pacerd_http_body_bytes_in_flight", 0) < 37000:
                self.assertLess(time.monotonic(), deadline, "the held body never reached pacerd")
                time.sleep(0.05)
            for s, enc, ctype, path in self.each():
                a = post(self.d, path, b"x" * 30000, ctype, KEYS["shop"], headers={"Expect": "100-continue"},
                         send_body=False)
                cases.append(("bodies in memory", s, enc, a, 429, "request bodies in flight"))
        finally:
            held.close()
        self.check(cases)


class Draining(Base):
    def test_draining_503(self):
        d = Pacerd(extra_args=["--drain-timeout", "30"])
        try:
            port = d.port
            good = bodies([(s, "good", otlp_request(s, [good_item(s, 20)])) for s in SIGNALS])
            # an idle keep-alive connection for each answer to come
            idle = {}
            for s in SIGNALS:
                for enc, ctype in ENCODINGS.items():
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    a = post(d, "/v1/" + s, good[(s, enc, "good")], ctype, KEYS["shop"], conn=c)
                    self.assertEqual(a.status, 200)
                    idle[(s, enc)] = c
            # a request whose body is still coming keeps the drain waiting
            held = socket.create_connection(("127.0.0.1", port), timeout=30)
            held.sendall(("POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                          "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{" % KEYS["shop"]).encode())
            deadline = time.monotonic() + 20
            while scrape(d).get("pacerd_http_requests_admitted", 0) < 1:
                self.assertLess(time.monotonic(), deadline, "the held request was never admitted")
                time.sleep(0.05)
            d.proc.send_signal(signal.SIGTERM)
            # draining once the listening socket is closed
            deadline = time.monotonic() + 20
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                except OSError:
                    break
                self.assertLess(time.monotonic(), deadline, "pacerd never stopped listening")
                time.sleep(0.05)
            cases = []
            for (s, enc), c in idle.items():
                a = post(d, "/v1/" + s, good[(s, enc, "good")], ENCODINGS[enc], KEYS["shop"], conn=c)
                self.assertEqual(a.header("Connection"), "close")
                cases.append(("draining", s, enc, a, 503, "shutting down"))
                c.close()
            held.close()
            self.assertEqual(d.proc.wait(timeout=60), 0)
            d.stderr.close()
            self.check(cases)
        finally:
            d.close()


class FullDisk(Base):
    def test_store_failure_503(self):
        if os.geteuid() != 0:
            if os.environ.get("CI"):
                raise AssertionError("a tmpfs needs root (CI runs make test as root)")
            raise unittest.SkipTest("a tmpfs needs root")
        mnt = tempfile.mkdtemp(prefix="pacerd-answers-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt], check=True)
        d = None
        try:
            d = Pacerd(db=os.path.join(mnt, "pacer.db"))
            good = bodies([(s, "good", otlp_request(s, [good_item(s, 30)])) for s in SIGNALS])
            self.assertEqual(post(d, "/v1/traces", good[("traces", "json", "good")], "application/json",
                                  KEYS["shop"]).status, 200)
            fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(fd, b"\0" * 65536)
            except OSError:
                pass
            finally:
                os.close(fd)
            cases = []
            for s in SIGNALS:
                for enc, ctype in ENCODINGS.items():
                    a = post(d, "/v1/" + s, good[(s, enc, "good")], ctype, KEYS["shop"])
                    cases.append(("store", s, enc, a, 503, "could not commit"))
            self.check(cases)
        finally:
            if d:
                d.close()
            if subprocess.run(["umount", mnt], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", mnt], capture_output=True)
            shutil.rmtree(mnt, ignore_errors=True)


class Uploader(unittest.TestCase):
    """pacer's uploader reads pacerd's answers: the records of an app the key
    is not for are rejected in a partial_success, which `pacer replay`
    reports and does not send again — in protobuf and in JSON."""

    def test_partial_success_read_in_both_encodings(self):
        d = Pacerd()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                for proto in ("protobuf", "json"):
                    with self.subTest(proto):
                        spool = os.path.join(tmp, proto + ".db")
                        env = dict(os.environ, PACER_KEY=KEYS["shop"], PACER_OTLP_PROTOCOL=proto)

                        def replay(app):
                            p = subprocess.run([PACER, "replay", "--config", SHOP, "--app", app, "--app-version", "1",
                                                "--server", d.base, "--spool", spool, "--out", os.devnull, EVENTS],
                                               capture_output=True, text=True, timeout=60, env=env)
                            self.assertEqual(p.returncode, 0, p.stderr)
                            return p.stderr
                        err = replay("not-shop")
                        self.assertRegex(err, r"uploaded [1-9]\d* batch\(es\)")
                        self.assertRegex(err, r"the server rejected [1-9]\d* record\(s\): \w+\[0\]: "
                                              r"service.name \"not-shop\" is not the app of this key")
                        # accepted as a whole, nothing rejected: the rejected ones were not sent again
                        err = replay("shop")
                        self.assertRegex(err, r"uploaded [1-9]\d* batch\(es\)")
                        self.assertNotIn("rejected", err)
        finally:
            d.close()


if __name__ == "__main__":
    if not shutil.which("node") or not os.path.isdir(os.path.join(OTEL_DIR, "node_modules", "google-proto-files")):
        print("skipped: node or tests/server/otel/node_modules missing (run scripts/install-deps.sh)")
        sys.exit(1 if os.environ.get("CI") else 77)
    unittest.main()
