"""Bad input never crashes pacerd: every case answers 4xx with a reason
(or 200 with partialSuccess naming what was left out), and pacerd stays
healthy. Also: overload answers 429 with Retry-After, and SQL is bound."""
import json
import os
import socket
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import ADMIN, KEYS, Pacerd, attr, page_span, traces  # noqa: E402

T0 = 1_700_006_400 * 10**9
MAX_BODY = 65536


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Pacerd(["--max-body", str(MAX_BODY)])

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def tearDown(self):
        self.assertIsNone(self.d.proc.poll(), "pacerd exited")
        self.assertEqual(self.d.request("GET", "/healthz")[0], 200)

    def post(self, body, headers=None, content_type="application/json", path="/v1/traces"):
        st, _, data = self.d.request("POST", path, body, token=KEYS["shop"], headers=headers,
                                     content_type=content_type)
        return st, json.loads(data) if data else None

    def expect_error(self, status, body, reason, **kw):
        """The reason is the message of the google.rpc.Status OTLP/HTTP
        answers errors with (test_otlp_answers.py holds the rest of it)."""
        st, data = self.post(body, **kw)
        self.assertEqual(st, status, data)
        self.assertIn(reason, data["message"])

    def test_not_json(self):
        self.expect_error(400, b"this is not json", "invalid JSON")
        self.expect_error(400, b"", "invalid JSON")
        self.expect_error(400, b'{"resourceSpans": [', "invalid JSON")
        self.expect_error(400, b'{"a":1}{"b":2}', "invalid JSON")

    def test_invalid_utf8_and_nul(self):
        self.expect_error(400, b'{"resourceSpans":[],"x":"\xc3\x28"}', "invalid JSON")
        self.expect_error(400, b'{"resourceSpans":[],"x":"\xed\xa0\x80"}', "invalid JSON")  # a surrogate
        self.expect_error(400, b'{"resourceSpans":[],"x":"a\\u0000b"}', "invalid JSON")
        self.expect_error(400, b'{"resourceSpans":[]}\x00', "invalid JSON")

    def test_deep_nesting(self):
        self.expect_error(400, b"[" * 20000 + b"]" * 20000, "nested deeper")
        self.expect_error(400, b'{"resourceSpans":' + b'{"a":' * 5000 + b"1" + b"}" * 5001, "nested deeper")

    def test_wrong_shapes(self):
        self.expect_error(400, b"[]", "JSON object")
        self.expect_error(400, b'"str"', "expected")
        self.expect_error(400, b'{"resourceSpans":{}}', "must be an array")
        self.expect_error(400, b'{"resourceLogs":7}', "must be an array", path="/v1/logs")
        self.expect_error(400, b'{"resourceMetrics":"x"}', "must be an array", path="/v1/metrics")

    def test_wrong_types_are_rejected_items(self):
        good = page_span("TypesWindow", T0, 10.0)
        bad = [
            dict(good, traceId="xyz"),
            dict(good, spanId=12),
            dict(good, startTimeUnixNano="-1"),
            dict(good, endTimeUnixNano="99999999999999999999"),
            dict(good, name=None),
            dict(good, name="n" * 5000),
            dict(good, kind=99),
            dict(good, status="ok"),
            dict(good, attributes={"not": "a list"}),
            dict(good, attributes=[{"key": 1}]),
            dict(good, attributes=[{"key": "k", "value": {"intValue": "12a"}}]),
            dict(good, attributes=[{"key": "k", "value": {"stringValue": 5}}]),
            dict(good, attributes=[{"key": "k", "value": {"boolValue": "yes"}}]),
            dict(good, attributes=[{"key": "k", "value": {"stringValue": "a", "intValue": 1}}]),
            dict(good, attributes=[attr("pacer.type", "page"), attr("pacer.total_ms", "fast")]),
            dict(good, attributes=[attr("pacer.type", "page"), attr("pacer.total_ms", -5.0)]),
            dict(good, attributes=[attr("pacer.type", "startup"), attr("pacer.kind", "lukewarm")]),
            dict(good, attributes=[attr("pacer.type", "net")]),  # no URL
            "not a span",
            None,
        ]
        st, data = self.post(traces([good] + bad))
        self.assertEqual(st, 200, data)
        self.assertEqual(data["partialSuccess"]["rejectedSpans"], str(len(bad)))
        self.assertIn("spans[1].traceId", data["partialSuccess"]["errorMessage"])
        pages = self.d.query("/api/v1/pages?app=shop")["pages"]
        self.assertEqual([p["count"] for p in pages if p["page"] == "TypesWindow"], [1])

    def test_bad_resources(self):
        body = {"resourceSpans": [{"resource": {"attributes": "no"}, "scopeSpans": [{"spans": [1, 2, 3]}]},
                                  {"resource": [], "scopeSpans": []}, 5,
                                  {"resource": {}, "scopeSpans": {"x": 1}},
                                  {"resource": {}, "scopeSpans": [{"spans": "no"}]}]}
        st, data = self.post(body)
        self.assertEqual(st, 200, data)
        self.assertEqual(int(data["partialSuccess"]["rejectedSpans"]), 3 + 1 + 1 + 1 + 1)

    def test_body_size_limit(self):
        big = b'{"resourceSpans":[],"pad":"' + b"x" * (MAX_BODY + 10) + b'"}'
        self.expect_error(413, big, "larger than the limit")
        # chunked upload (no Content-Length) past the limit
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=30)
        s.sendall(("POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" % KEYS["shop"]).encode())
        chunk = b"x" * 8192
        try:
            for _ in range(MAX_BODY // len(chunk) + 4):
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may stop reading once it has answered
        reply = s.recv(65536).decode(errors="replace")
        s.close()
        self.assertTrue(reply.startswith("HTTP/1.1 413"), reply[:200])

    def test_content_type_and_encoding(self):
        self.expect_error(415, b"<spans/>", "application/x-protobuf", content_type="application/xml")
        self.expect_error(415, b"{}", "application/json", content_type=None)
        self.expect_error(415, b"\x1f\x8b", "Content-Encoding", headers={"Content-Encoding": "br"})
        self.expect_error(400, b"{}", "not gzip data", headers={"Content-Encoding": "gzip"})
        self.expect_error(400, b"\x1f\x8b\x08\x00\x00\x00", "truncated", headers={"Content-Encoding": "gzip"})

    def test_methods_paths_and_queries(self):
        self.assertEqual(self.d.request("GET", "/v1/traces", token=KEYS["shop"])[0], 405)
        self.assertEqual(self.d.request("GET", "/nope")[0], 404)
        self.assertEqual(self.d.request("DELETE", "/v1/config/shop", token=ADMIN)[0], 405)
        self.assertEqual(self.d.request("GET", "/api/v1/pages", token=ADMIN)[0], 400)
        self.assertEqual(self.d.request("GET", "/api/v1/pages?app=shop&from=yesterday", token=ADMIN)[0], 400)
        self.assertEqual(self.d.request("GET", "/api/v1/pages?app=shop&to=-5", token=ADMIN)[0], 400)
        self.assertEqual(self.d.request("GET", "/api/v1/nothing?app=shop", token=ADMIN)[0], 404)

    def test_sql_is_bound(self):
        for app in ("shop' OR '1'='1", "shop\"; DROP TABLE page_loads; --", "%", "shop%"):
            st, _, data = self.d.request("GET", "/api/v1/pages?app=" + __import__("urllib.parse").parse.quote(app),
                                         token=ADMIN)
            self.assertEqual(st, 200)
            self.assertEqual(json.loads(data)["pages"], [])
        self.assertEqual(self.d.request("GET", "/healthz")[0], 200)

    def test_config_limits(self):
        st, _, data = self.d.request("PUT", "/v1/config/shop", b"<pacer>" + b" " * (MAX_BODY - 100) + b"\xff</pacer>",
                                     token=ADMIN)
        self.assertEqual(st, 400)
        self.assertIn("error", json.loads(data))
        self.assertEqual(self.d.request("PUT", "/v1/config/shop", b"", token=ADMIN)[0], 400)
        self.assertEqual(self.d.request("PUT", "/v1/config/" + "a" * 300, b"<pacer/>", token=ADMIN)[0], 404)

    def test_raw_http_garbage(self):
        for junk in (b"\x00\x01\x02\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST /v1/traces HTTP/1.1\r\n" + b"X: y\r\n" * 5000,
                     b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n"):
            # pacerd answers, or closes, or waits for the rest: the client gives up after 2 s
            s = socket.create_connection(("127.0.0.1", self.d.port), timeout=2)
            try:
                s.sendall(junk)
                s.shutdown(socket.SHUT_WR)
                s.recv(4096)
            except OSError:
                pass
            s.close()

    def test_overload_answers_429(self):
        d = Pacerd(["--max-queue", "1"])
        try:
            body = json.dumps(traces([page_span("BusyWindow", T0 + i, 5.0) for i in range(2000)])).encode()
            results = []

            def send(n):
                for k in range(6):
                    while True:
                        st, h, _ = d.request("POST", "/v1/traces", body, token=KEYS["shop"],
                                             headers={"X-Pacer-Batch-Id": "busy-%d-%d" % (n, k)})
                        results.append((st, h.get("Retry-After")))
                        if st != 429:
                            break
            threads = [threading.Thread(target=send, args=(n,)) for n in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            statuses = [s for s, _ in results]
            self.assertTrue(set(statuses) <= {200, 429}, statuses)
            self.assertIn(429, statuses)
            self.assertTrue(all(r == "1" for s, r in results if s == 429))
            pages = d.query("/api/v1/pages?app=shop")["pages"]
            self.assertEqual(pages[0]["count"], 6 * 6 * 2000)  # every batch stored once after its retries
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
