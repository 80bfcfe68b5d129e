"""Nothing pacerd is sent is dropped in silence: each kind of OTLP part is
either stored and read back through the APIs, or counted in partialSuccess
with a message that names it — in JSON and in protobuf (bodies encoded here
by hand, field numbers from opentelemetry-proto), plain and gzip. Also:
proto field names and the deprecated instrumentationLibrary lists in JSON,
NaN and infinities as values, a gzip bomb (413, memory held to
--max-body), protobuf errors as google.rpc.Status, and a protobuf upload
charged to its key's daily quota."""
import gzip
import json
import os
import struct
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import ADMIN, KEYS, Pacerd, attr, resource, span, traces  # noqa: E402

NOW = 1_700_000_000_000_000_000
TRACE = "5b8efff798038103d269b633813fc60c"


# ---- a protobuf writer (wire format only) ----
def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def fld(num, value):
    """A field: bytes/str/nested list of fields → LEN; int → VARINT; ('f64', x), ('d', x), ('f32', x)."""
    if isinstance(value, tuple):
        kind, x = value
        if kind == "f64":
            return varint(num << 3 | 1) + struct.pack("<Q", x)
        if kind == "d":
            return varint(num << 3 | 1) + struct.pack("<d", x)
        if kind == "f32":
            return varint(num << 3 | 5) + struct.pack("<I", x)
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, list):
        value = b"".join(value)
    return varint(num << 3 | 2) + varint(len(value)) + value


def kv(key, **v):
    (k, x), = v.items()
    value = {"s": lambda: fld(1, x), "b": lambda: fld(2, int(x)), "i": lambda: fld(3, x & (2**64 - 1)),
             "d": lambda: fld(4, ("d", x))}[k]()
    return fld(1, key) + fld(2, value)


def pb_request(items, field=2, resource_attrs=None):
    """ExportXServiceRequest with one resource (service.name shop) and one scope."""
    res = fld(1, [fld(1, kv("service.name", s="shop"))] + [fld(1, a) for a in (resource_attrs or [])])
    scope = fld(1, [fld(1, "handmade"), fld(2, "9")])
    return fld(1, [res, fld(2, [scope] + [fld(field, i) for i in items])])


def pb_span(name, tid=bytes.fromhex(TRACE), sid=b"\x01" * 8, start=NOW, end=NOW + 5_000_000, extra=()):
    return [fld(1, tid), fld(2, sid), fld(5, name), fld(6, 1), fld(7, ("f64", start)), fld(8, ("f64", end))] + list(extra)


def pb_fields(data):
    """Parses a protobuf message into [(num, value)] (VARINT → int, LEN → bytes)."""
    out, i = [], 0
    while i < len(data):
        key, i = read_varint(data, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(data, i)
        elif wt == 2:
            n, i = read_varint(data, i)
            v, i = data[i:i + n], i + n
        elif wt == 1:
            v, i = data[i:i + 8], i + 8
        else:
            v, i = data[i:i + 4], i + 4
        out.append((num, v))
    return out


def read_varint(data, i):
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def partial(data):
    """(rejected, message) of an Export…ServiceResponse."""
    fields = dict(pb_fields(data))
    if 1 not in fields:
        return 0, ""
    ps = dict(pb_fields(fields[1]))
    return ps.get(1, 0), ps.get(2, b"").decode()


class NothingDropped(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Pacerd(extra_args=["--max-body", "65536"])

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def post(self, endpoint, body, proto=False, gz=False):
        data = body if proto else json.dumps(body).encode()
        headers = {"Content-Encoding": "gzip"} if gz else {}
        st, hdrs, resp = self.d.request("POST", endpoint, gzip.compress(data) if gz else data, token=KEYS["shop"],
                                        headers=headers,
                                        content_type="application/x-protobuf" if proto else "application/json")
        return st, hdrs, resp

    def json_partial(self, endpoint, body, field):
        st, _, resp = self.post(endpoint, body)
        self.assertEqual(st, 200, resp)
        ps = json.loads(resp).get("partialSuccess", {})
        return int(ps.get(field, 0)), ps.get("errorMessage", "")

    def get(self, path, **params):
        return self.d.query(path + "?" + urllib.parse.urlencode(params))

    def test_rejected_parts_are_named_json(self):
        def one_span(**change):
            s = span("s", NOW, 1_000_000, trace=TRACE, span_id="00f067aa0ba902b7")
            s.update(change)
            return traces([s])
        cases = [
            ("/v1/traces", one_span(traceId="xyz"), "rejectedSpans", "traceId"),
            ("/v1/traces", one_span(events=[{"timeUnixNano": "soon", "name": "e"}]), "rejectedSpans", "events[0].timeUnixNano"),
            ("/v1/traces", one_span(links=[{"traceId": "ab", "spanId": "00f067aa0ba902b7"}]), "rejectedSpans", "links[0].traceId"),
            ("/v1/traces", one_span(droppedEventsCount=-1), "rejectedSpans", "Count"),
            ("/v1/logs", {"resourceLogs": [{"resource": resource(), "scopeLogs": [{"logRecords": [
                {"timeUnixNano": str(NOW), "traceId": "12", "body": {"stringValue": "x"}}]}]}]},
             "rejectedLogRecords", "traceId"),
            ("/v1/metrics", {"resourceMetrics": [{"resource": resource(), "scopeMetrics": [{"metrics": [
                {"name": "h", "histogram": {"aggregationTemporality": 1, "dataPoints": [
                    {"timeUnixNano": str(NOW), "count": "3", "bucketCounts": ["1", "2"], "explicitBounds": [1, 2]}]}}]}]}]},
             "rejectedDataPoints", "bucketCounts"),
            ("/v1/metrics", {"resourceMetrics": [{"resource": resource(), "scopeMetrics": [{"metrics": [
                {"name": "q", "summary": {"dataPoints": [
                    {"timeUnixNano": str(NOW), "count": "1", "sum": 1, "quantileValues": [{"quantile": 2, "value": 1}]}]}}]}]}]},
             "rejectedDataPoints", "quantileValues"),
            ("/v1/metrics", {"resourceMetrics": [{"resource": resource(), "scopeMetrics": [{"metrics": [
                {"name": "t", "sum": {"aggregationTemporality": 7, "dataPoints": [{"timeUnixNano": str(NOW), "asInt": "1"}]}}]}]}]},
             "rejectedDataPoints", "aggregationTemporality"),
            ("/v1/metrics", {"resourceMetrics": [{"resource": resource(), "scopeMetrics": [{"metrics": [
                {"name": "two", "gauge": {"dataPoints": [{"timeUnixNano": str(NOW), "asInt": "1"}]},
                 "sum": {"aggregationTemporality": 1, "dataPoints": [{"timeUnixNano": str(NOW), "asInt": "2"}]}}]}]}]},
             "rejectedDataPoints", "expected only one of gauge, sum"),
        ]
        for endpoint, body, field, what in cases:
            with self.subTest(what=what):
                n, msg = self.json_partial(endpoint, body, field)
                self.assertEqual(n, 1, msg)
                self.assertIn(what, msg)

    def test_unknown_fields_are_reported(self):
        s = span("u", NOW, 1_000_000, trace=TRACE, span_id="00f067aa0ba90201")
        s["futureField"] = {"x": 1}
        n, msg = self.json_partial("/v1/traces", traces([s]), "rejectedSpans")
        self.assertEqual(n, 0)
        self.assertIn('unknown field "futureField" of a span', msg)
        # stored all the same
        self.assertEqual(self.get("/api/v1/traces/" + TRACE)["spans"][0]["traceId"], TRACE)
        st, _, resp = self.post("/v1/traces", pb_request([pb_span("pu", sid=b"\x07" * 8, extra=[fld(99, 5)])]), proto=True)
        self.assertEqual(st, 200)
        rejected, msg = partial(resp)
        self.assertEqual(rejected, 0)
        self.assertIn("unknown field 99 of a span", msg)

    def test_proto_field_names_and_instrumentation_library(self):
        tid = "0af7651916cd43dd8448eb211c80319c"
        body = {"resource_spans": [{"resource": resource(version="snake"), "instrumentation_library_spans": [{
            "instrumentation_library": {"name": "old-lib", "version": "0.1"},
            "spans": [{"trace_id": tid, "span_id": "b7ad6b7169203331", "name": "snake span", "kind": 2,
                       "start_time_unix_nano": str(NOW), "end_time_unix_nano": str(NOW + 2_000_000),
                       "attributes": [{"key": "k", "value": {"int_value": "7"}}],
                       "events": [{"time_unix_nano": str(NOW), "name": "ev"}]}]}]}]}
        n, msg = self.json_partial("/v1/traces", body, "rejectedSpans")
        self.assertEqual((n, msg), (0, ""))
        got = self.get("/api/v1/traces/" + tid)["spans"][0]
        self.assertEqual(got["name"], "snake span")
        self.assertEqual(got["scope"]["name"], "old-lib")
        self.assertEqual(got["attributes"], [{"key": "k", "value": {"int_value": "7"}}])
        self.assertEqual(got["events"][0]["name"], "ev")
        logs = {"resource_logs": [{"resource": resource(), "scope_logs": [{"log_records": [
            {"time_unix_nano": str(NOW), "severity_number": 9, "body": {"string_value": "snake log"}}]}]}]}
        self.assertEqual(self.json_partial("/v1/logs", logs, "rejectedLogRecords"), (0, ""))
        self.assertEqual(len(self.get("/api/v1/logs", app="shop", text="snake log")["logs"]), 1)

    def test_nan_and_infinity_are_values(self):
        tid = "11111111111111111111111111111111"
        s = span("nan", NOW, 1_000_000, trace=tid, span_id="2222222222222222",
                 attrs=[{"key": "x", "value": {"doubleValue": "NaN"}}, {"key": "y", "value": {"doubleValue": "-Infinity"}}])
        self.assertEqual(self.json_partial("/v1/traces", traces([s]), "rejectedSpans"), (0, ""))
        got = self.get("/api/v1/traces/" + tid)["spans"][0]["attributes"]
        self.assertEqual(got, [{"key": "x", "value": {"doubleValue": "NaN"}},
                               {"key": "y", "value": {"doubleValue": "-Infinity"}}])
        metrics = {"resourceMetrics": [{"resource": resource(), "scopeMetrics": [{"metrics": [
            {"name": "nan.gauge", "gauge": {"dataPoints": [
                {"timeUnixNano": str(NOW), "asDouble": "NaN"}, {"timeUnixNano": str(NOW + 1), "asDouble": "Infinity"}]}},
            {"name": "nan.hist", "histogram": {"aggregationTemporality": 2, "dataPoints": [
                {"timeUnixNano": str(NOW), "count": "1", "sum": "NaN", "min": "-Infinity", "max": 3,
                 "bucketCounts": ["1"], "explicitBounds": []}]}}]}]}]}
        self.assertEqual(self.json_partial("/v1/metrics", metrics, "rejectedDataPoints"), (0, ""))
        pts = self.get("/api/v1/metrics", app="shop", name="nan.gauge")["points"]
        self.assertEqual([p["value"] for p in pts], ["Infinity", "NaN"])
        h = self.get("/api/v1/metrics", app="shop", name="nan.hist")["points"][0]
        self.assertEqual((h["sum"], h["min"], h["max"]), ("NaN", "-Infinity", 3))
        # the same in protobuf: doubles are NaN bits
        body = pb_request([[fld(1, "pnan"), fld(5, [fld(1, [fld(3, ("f64", NOW)), fld(4, ("d", float("nan")))])])]])
        st, _, resp = self.post("/v1/metrics", body, proto=True)
        self.assertEqual((st, partial(resp)), (200, (0, "")))
        self.assertEqual(self.get("/api/v1/metrics", app="shop", name="pnan")["points"][0]["value"], "NaN")

    def test_protobuf_parts(self):
        tid = bytes.fromhex("aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb")
        ok = pb_span("pb ok", tid=tid, sid=b"\x03" * 8, extra=[
            fld(9, kv("a", s="x")), fld(9, kv("n", i=-5)), fld(9, kv("d", d=2.5)), fld(9, kv("b", b=True)),
            fld(11, [fld(1, ("f64", NOW + 1)), fld(2, "api"), fld(3, kv("pacer.url", s="/api/list"))]),
            fld(13, [fld(1, bytes.fromhex(TRACE)), fld(2, b"\x09" * 8), fld(3, "k=v"), fld(4, kv("why", s="follows"))]),
            fld(15, [fld(2, "bad"), fld(3, 2)]), fld(3, "vendor=1"), fld(16, ("f32", 1))])
        bad_event = pb_span("pb bad", tid=tid, sid=b"\x04" * 8, extra=[fld(11, [fld(2, b"\xff\xfe")])])
        st, hdrs, resp = self.post("/v1/traces", pb_request([ok, bad_event], resource_attrs=[kv("host.name", s="h1")]),
                                   proto=True, gz=True)
        self.assertEqual(st, 200)
        self.assertEqual(hdrs.get("Content-Type"), "application/x-protobuf")
        rejected, msg = partial(resp)
        self.assertEqual(rejected, 1)
        self.assertIn("spans[1].events[0].name", msg)
        got = self.get("/api/v1/traces/" + tid.hex())["spans"]
        self.assertEqual(len(got), 1)
        g = got[0]
        self.assertEqual(g["attributes"], [{"key": "a", "value": {"stringValue": "x"}},
                                           {"key": "n", "value": {"intValue": "-5"}},
                                           {"key": "d", "value": {"doubleValue": 2.5}},
                                           {"key": "b", "value": {"boolValue": True}}])
        self.assertEqual(g["events"], [{"timeUnixNano": str(NOW + 1), "name": "api", "attributes": [
            {"key": "pacer.url", "value": {"stringValue": "/api/list"}}]}])
        self.assertEqual(g["links"], [{"traceId": TRACE, "spanId": "09" * 8, "traceState": "k=v",
                                       "attributes": [{"key": "why", "value": {"stringValue": "follows"}}]}])
        self.assertEqual(g["status"], {"code": 2, "message": "bad"})
        self.assertEqual((g["traceState"], g["flags"]), ("vendor=1", 1))
        self.assertEqual(g["scope"], {"name": "handmade", "version": "9", "attributes": []})
        self.assertIn({"key": "host.name", "value": {"stringValue": "h1"}}, g["resource"]["attributes"])
        # logs: trace and span ids, a structured body
        rec = [fld(1, ("f64", NOW)), fld(2, 17), fld(3, "ERROR"),
               fld(5, fld(6, [fld(1, kv("code", i=42))])), fld(9, tid), fld(10, b"\x03" * 8), fld(8, ("f32", 1))]
        st, _, resp = self.post("/v1/logs", pb_request([rec]), proto=True)
        self.assertEqual((st, partial(resp)), (200, (0, "")))
        log = [l for l in self.get("/api/v1/logs", app="shop", severity="ERROR")["logs"] if l.get("traceId") == tid.hex()][0]
        self.assertEqual((log["spanId"], log["severityText"], log["flags"]), ("03" * 8, "ERROR", 1))
        self.assertEqual(log["body"], {"kvlistValue": {"values": [{"key": "code", "value": {"intValue": "42"}}]}})
        # metrics: a summary's quantiles, exemplars
        pt = [fld(7, kv("q", s="1")), fld(3, ("f64", NOW)), fld(4, ("f64", 10)), fld(5, ("d", 55.5)),
              fld(6, [fld(1, ("d", 0.5)), fld(2, ("d", 4.0))]), fld(6, [fld(1, ("d", 0.99)), fld(2, ("d", 9.5))])]
        num = [fld(3, ("f64", NOW)), fld(6, ("f64", 7)), fld(5, [fld(2, ("f64", NOW)), fld(3, ("d", 1.5)), fld(5, tid)])]
        body = pb_request([fld(1, "pb.summary") + fld(11, fld(1, pt)),
                           fld(1, "pb.sum") + fld(7, [fld(1, num), fld(2, 1), fld(3, 1)])])
        st, _, resp = self.post("/v1/metrics", body, proto=True)
        self.assertEqual((st, partial(resp)), (200, (0, "")))
        s = self.get("/api/v1/metrics", app="shop", name="pb.summary")["points"][0]
        self.assertEqual(s["quantileValues"], [{"quantile": 0.5, "value": 4.0}, {"quantile": 0.99, "value": 9.5}])
        self.assertEqual((s["count"], s["sum"]), ("10", 55.5))
        p = self.get("/api/v1/metrics", app="shop", name="pb.sum")["points"][0]
        self.assertEqual((p["asInt"], p["aggregationTemporality"], p["isMonotonic"]), ("7", 1, True))
        self.assertEqual(p["exemplars"][0]["traceId"], tid.hex())

    def test_protobuf_errors_answer_status(self):
        st, hdrs, resp = self.post("/v1/traces", b"\x0a\x05\x01", proto=True)
        self.assertEqual(st, 400)
        self.assertEqual(hdrs.get("Content-Type"), "application/x-protobuf")
        status = dict(pb_fields(resp))
        self.assertEqual(status[1], 3)  # INVALID_ARGUMENT
        self.assertIn(b"invalid protobuf", status[2])
        st, hdrs, resp = self.d.request("POST", "/v1/traces", b"", token="nope", content_type="application/x-protobuf")
        self.assertEqual(st, 401)
        self.assertEqual(dict(pb_fields(resp))[1], 16)  # UNAUTHENTICATED

    def test_gzip_bomb(self):
        def peak_kib():
            status = open("/proc/%d/status" % self.d.proc.pid).read()
            return int([l for l in status.splitlines() if l.startswith("VmHWM")][0].split()[1])
        before = peak_kib()
        bomb = gzip.compress(b'{"resourceSpans":[' + b" " * (60 << 20) + b"]}", 9)  # 60 MiB inflated
        self.assertLess(len(bomb), 65536)
        for ct in ("application/json", "application/x-protobuf"):
            st, _, resp = self.d.request("POST", "/v1/traces", bomb, token=KEYS["shop"],
                                         headers={"Content-Encoding": "gzip"}, content_type=ct)
            self.assertEqual(st, 413)
        st, _, resp = self.d.request("POST", "/v1/traces", bomb, token=KEYS["shop"],
                                     headers={"Content-Encoding": "gzip"})
        self.assertIn(b"inflates to more than the limit of 65536 bytes", resp)
        # what pacerd held stayed near the limit: its peak resident set grew by far less than the bomb
        self.assertLess(peak_kib() - before, 8 * 1024, "pacerd's peak resident set grew from %d KiB" % before)
        # just under the limit inflates and is stored
        small = gzip.compress(json.dumps(traces([span("g", NOW, 1, trace="33333333333333333333333333333333",
                                                       span_id="4444444444444444")])).encode())
        st, _, _ = self.d.request("POST", "/v1/traces", small, token=KEYS["shop"], headers={"Content-Encoding": "gzip"})
        self.assertEqual(st, 200)
        self.assertEqual(len(self.get("/api/v1/traces/33333333333333333333333333333333")["spans"]), 1)

    def test_read_api_parameters_are_strict(self):
        bad = [
            ("/api/v1/spans/search?app=shop&limit=0", "limit"),
            ("/api/v1/spans/search?app=shop&limit=5x", "limit"),
            ("/api/v1/spans/search?app=shop&min_ms=-1", "min_ms"),
            ("/api/v1/spans/search?app=shop&from=99999999999999", "from"),
            ("/api/v1/spans/search?app=shop&cursor=abc", "cursor"),
            ("/api/v1/spans/search?app=shop&colour=red", "colour"),
            ("/api/v1/spans/search?app=shop&name=a&name=b", "name"),
            ("/api/v1/spans/search?app=shop&attr=novalue", "attr"),
            ("/api/v1/spans/search?app=sh%00op", "app"),
            ("/api/v1/spans/search?app=%ff", "app"),
            ("/api/v1/spans/search", "app"),
            ("/api/v1/logs?app=shop&severity=LOUD", "severity"),
            ("/api/v1/metrics?app=shop", "name"),
            ("/api/v1/traces/xyz", "trace id"),
            ("/api/v1/traces/" + TRACE + "?x=1", "no parameters"),
        ]
        for path, what in bad:
            with self.subTest(path=path):
                st, _, resp = self.d.request("GET", path, token=ADMIN)
                self.assertEqual(st, 400, resp)
                self.assertIn(what, json.loads(resp)["error"])
        st, _, _ = self.d.request("GET", "/api/v1/traces/" + "0" * 31 + "1", token=ADMIN)
        self.assertEqual(st, 404)
        st, _, _ = self.d.request("GET", "/api/v1/logs?app=shop", token=KEYS["shop"])
        self.assertEqual(st, 403)


class ProtobufCharged(unittest.TestCase):
    """What a protobuf upload stores is charged to its key, as a JSON one."""

    def test_daily_quota_counts_protobuf_records(self):
        d = Pacerd(keys_text="shop %s daily=30\n" % KEYS["shop"])
        try:
            def send(n, first):
                body = pb_request([pb_span("charged", sid=struct.pack(">Q", first + i)) for i in range(n)])
                return d.request("POST", "/v1/traces", body, token=KEYS["shop"],
                                 content_type="application/x-protobuf")
            self.assertEqual(send(20, 1)[0], 200)
            self.assertEqual(send(20, 100)[0], 200)  # 20 used when it came: stored whole, 40 used
            st, _, data = send(1, 200)
            self.assertEqual(st, 429, data)
            self.assertIn(b"daily quota of 30 records is used up (40 stored today)", data)
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
