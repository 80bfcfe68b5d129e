"""A raw OTLP/gRPC client for pacerd's tests, on python3-h2 (Debian's): a
unary call's frames as the test wants them, and the answer read back —
headers, message, trailers, grpc-status, grpc-message and the
google.rpc.Status of grpc-status-details-bin with its RetryInfo decoded.
Loopback only; every read has a timeout."""
import base64
import gzip
import socket
import struct
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

METHODS = {
    "traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    "logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
    "metrics": "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
}
CODES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 7: "PERMISSION_DENIED",
         8: "RESOURCE_EXHAUSTED", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE", 16: "UNAUTHENTICATED"}


# ---- a little protobuf ----

def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, value):
    """A length-delimited field (bytes or str), or a varint (int)."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value


def fixed64(num, v):
    return varint(num << 3 | 1) + struct.pack("<Q", v)


def parse(buf):
    """Fields of a message: [(number, value)], value int or bytes."""
    out, i = [], 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 2:
            n, i = read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, v))
    return out


def read_varint(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def span(trace_id, span_id, name, start_ns, dur_ns, attrs=()):
    """An OTLP Span (protobuf)."""
    body = field(1, trace_id) + field(2, span_id) + field(5, name) + field(6, 2) + fixed64(7, start_ns) + \
        fixed64(8, start_ns + dur_ns)
    for k, v in attrs:
        body += field(9, field(1, k) + field(2, field(1, v)))
    return body


def traces_request(spans, service="shop", version="1.0"):
    """An ExportTraceServiceRequest of spans (encoded Span messages)."""
    res = field(1, field(1, "service.name") + field(2, field(1, service))) + \
        field(1, field(1, "service.version") + field(2, field(1, version)))
    scope_spans = field(1, field(1, "grpc-test")) + b"".join(field(2, s) for s in spans)
    return field(1, field(1, res) + field(2, scope_spans))


def lpm(message, compressed=False):
    """A Length-Prefixed-Message."""
    if compressed:
        message = gzip.compress(message)
    return bytes([1 if compressed else 0]) + struct.pack(">I", len(message)) + message


class Answer:
    def __init__(self):
        self.headers = {}
        self.trailers = {}
        self.data = b""
        self.reset = None  # the RST_STREAM error code, when reset
        self.ended = False

    @property
    def status(self):
        s = self.trailers.get("grpc-status", self.headers.get("grpc-status"))
        return CODES.get(int(s), s) if s is not None else None

    @property
    def message(self):
        m = self.trailers.get("grpc-message", self.headers.get("grpc-message", ""))
        return urllib.parse.unquote(m)

    def details(self):
        """(code, message, retry_delay_seconds or None) of grpc-status-details-bin, or None."""
        b = self.trailers.get("grpc-status-details-bin", self.headers.get("grpc-status-details-bin"))
        if b is None:
            return None
        raw = base64.b64decode(b + "=" * (-len(b) % 4))
        code, msg, retry = 0, "", None
        for num, v in parse(raw):
            if num == 1:
                code = v
            elif num == 2:
                msg = v.decode()
            elif num == 3:
                any_ = dict(parse(v))
                if any_.get(1) == b"type.googleapis.com/google.rpc.RetryInfo":
                    dur = dict(parse(dict(parse(any_[2]))[1]))
                    retry = dur.get(1, 0) + dur.get(2, 0) / 1e9
        return code, msg, retry

    def response(self):
        """The fields of the response message (after its 5-byte prefix)."""
        assert len(self.data) >= 5, self.data
        n = struct.unpack(">I", self.data[1:5])[0]
        assert len(self.data) == 5 + n
        return parse(self.data[5:])

    def rejected(self):
        """partial_success's rejected count and error message, or (0, "")."""
        for num, v in self.response():
            if num == 1:
                ps = dict(parse(v))
                return ps.get(1, 0), ps.get(2, b"").decode()
        return 0, ""


class Conn:
    """One HTTP/2 connection by prior knowledge."""

    def __init__(self, port, settings=None, timeout=10, tls=None):
        """tls: an ssl.SSLContext (its ALPN set by the caller) for TLS."""
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if tls:
            self.sock = tls.wrap_socket(self.sock, server_hostname="127.0.0.1")
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.h2.initiate_connection()
        if settings:
            self.h2.update_settings(settings)
        self.flush()
        self.answers = {}
        self.goaway = None
        self.closed = False

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def start(self, method="traces", key=None, extra=(), end=False, path=None, content_type="application/grpc",
              encoding=None):
        sid = self.h2.get_next_available_stream_id()
        hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path or METHODS[method]),
                (":authority", "127.0.0.1"), ("content-type", content_type), ("te", "trailers")]
        if encoding:
            hdrs.append(("grpc-encoding", encoding))
        if key:
            hdrs.append(("authorization", "Bearer " + key))
        hdrs += list(extra)
        self.h2.send_headers(sid, hdrs, end_stream=end)
        self.answers[sid] = Answer()
        self.flush()
        return sid

    def send(self, sid, data, end=True):
        # as much as the flow-control window lets through, then waits for more room
        while data:
            room = self.h2.local_flow_control_window(sid)
            room = min(room, self.h2.max_outbound_frame_size)
            if room <= 0:
                self.pump(0.5)
                continue
            self.h2.send_data(sid, data[:room])
            data = data[room:]
            self.flush()
        if end:
            self.h2.end_stream(sid)
        self.flush()

    def pump(self, timeout):
        """Reads what arrives within timeout; False once the connection closed."""
        if self.closed:
            return False
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return True
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return False
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.closed = True  # frames after our view of the connection's end
            return False
        for ev in events:
            a = self.answers.get(getattr(ev, "stream_id", None))
            if isinstance(ev, h2.events.ResponseReceived) and a:
                a.headers = dict(ev.headers)
            elif isinstance(ev, h2.events.TrailersReceived) and a:
                a.trailers = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived) and a:
                a.data += ev.data
                self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded) and a:
                a.ended = True
            elif isinstance(ev, h2.events.StreamReset) and a:
                a.reset = ev.error_code
                a.ended = True
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.goaway = ev.error_code
        try:
            self.flush()
        except OSError:
            self.closed = True
        return True

    def wait(self, sid, timeout=10):
        deadline = time.monotonic() + timeout
        a = self.answers[sid]
        while not a.ended and time.monotonic() < deadline:
            if not self.pump(max(0.01, deadline - time.monotonic())):
                break
        return a

    def call(self, method, message, key=None, extra=(), compressed=False, timeout=10):
        sid = self.start(method, key, extra, encoding="gzip" if compressed else None)
        self.send(sid, lpm(message, compressed))
        return self.wait(sid, timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def call(port, method, message, key=None, tls=None, **kw):
    """One call on a connection of its own."""
    c = Conn(port, tls=tls)
    try:
        return c.call(method, message, key, **kw)
    finally:
        c.close()
