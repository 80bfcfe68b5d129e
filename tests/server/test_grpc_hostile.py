"""Hostile HTTP/2 clients against pacerd's OTLP/gRPC front (raw frames from
python3-h2, loopback, each attack bounded in count and time): streams
opened and never sent on, connections that never send the preface, a
SETTINGS and a PING flood, a header block whose HPACK references expand
past the header limit, a client that holds its window at zero, thousands of
RST_STREAM (rapid reset), more connections from one address than allowed,
streams held open with large headers past --max-inflight-bytes.
Through every attack /healthz keeps answering, an honest call keeps being
served, and pacerd's resident memory (VmRSS, /proc/PID/status) stays
bounded."""
import collections
import os
import socket
import sys
import time
import unittest

import h2.settings
import hyperframe.frame

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import KEYS, Pacerd, scrape  # noqa: E402
import grpc_client as g  # noqa: E402

T0 = 1_700_006_400 * 10**9
PER_ADDRESS = 24
STREAMS = 50
ENHANCE_YOUR_CALM = 11


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class Hostile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Pacerd(grpc=True, extra_args=[
            "--header-timeout", "2", "--body-timeout", "3", "--idle-timeout", "3",
            "--max-per-address", str(PER_ADDRESS), "--grpc-max-streams", str(STREAMS)])
        cls.port = cls.d.grpc_port
        cls.rss0 = rss_kib(cls.d.proc.pid)
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def assert_still_serving(self):
        status, _, body = self.d.request("GET", "/healthz")
        self.assertEqual(status, 200, body)
        Hostile.n += 1
        msg = g.traces_request([g.span(bytes.fromhex("%032x" % (0x5000 + Hostile.n)),
                                       bytes.fromhex("%016x" % (0x6000 + Hostile.n)), "honest", T0, 10**6)])
        a = g.call(self.port, "traces", msg, KEYS["shop"])
        self.assertEqual(a.status, "OK", a.message)
        rss = rss_kib(self.d.proc.pid)
        self.assertLess(rss - self.rss0, 96 * 1024, "VmRSS grew from %d to %d KiB" % (self.rss0, rss))

    def test_streams_opened_and_never_sent_on(self):
        conns = [g.Conn(self.port) for _ in range(PER_ADDRESS - 4)]
        try:
            ids = []
            for c in conns:
                for _ in range(STREAMS):
                    ids.append((c, c.start("traces", KEYS["shop"])))  # headers, no message
                c.pump(0.05)
            # pacerd said SETTINGS_MAX_CONCURRENT_STREAMS; a client that disregards it
            # (one stream more on a connection of its own) loses the connection
            # (GOAWAY PROTOCOL_ERROR) or the stream (REFUSED_STREAM)
            self.assertEqual(conns[0].h2.remote_settings.max_concurrent_streams, STREAMS)
            over = g.Conn(self.port)
            try:
                over.pump(0.2)
                over.h2.remote_settings._settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = \
                    collections.deque([STREAMS * 10])
                last = [over.start("traces", KEYS["shop"]) for _ in range(STREAMS + 1)][-1]
                a = over.wait(last, 5)
                self.assertTrue(over.goaway == 1 or a.reset == 7, (over.goaway, a.reset))
            finally:
                over.close()
            self.assert_still_serving()
            # past --body-timeout each is answered DEADLINE_EXCEEDED
            for c, s in ids:
                a = c.wait(s, 15)
                self.assertEqual(a.status, "DEADLINE_EXCEEDED")
        finally:
            for c in conns:
                c.close()
        # connections that never send the preface are closed after --header-timeout
        socks = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(10)]
        try:
            for s in socks:
                s.settimeout(10)
                data = s.recv(65536)  # pacerd's SETTINGS
                while data:
                    data = s.recv(65536)
                self.assertEqual(data, b"")  # closed
        finally:
            for s in socks:
                s.close()
        # a header block left open (HEADERS without END_HEADERS, no CONTINUATION): the connection
        # can do nothing else, and is closed after --header-timeout
        c = g.Conn(self.port)
        try:
            block = c.h2.encoder.encode([(":method", "POST"), (":scheme", "http"), (":path", g.METHODS["traces"]),
                                         (":authority", "127.0.0.1"), ("content-type", "application/grpc")])
            c.sock.sendall(hyperframe.frame.HeadersFrame(1, data=block).serialize())
            deadline = time.monotonic() + 15
            while not c.closed and time.monotonic() < deadline:
                c.pump(0.5)
            self.assertTrue(c.closed)
        finally:
            c.close()
        self.assertGreaterEqual(scrape(self.d)['pacerd_grpc_rejects_total{reason="timeout"}'], 11)
        self.assert_still_serving()

    def flood(self, frame):
        c = g.Conn(self.port)
        try:
            for i in range(5000):
                try:
                    frame(c, i)
                except OSError:
                    break
                if i % 500 == 0:
                    try:
                        c.flush()
                    except OSError:
                        break
            try:
                c.flush()
            except OSError:
                pass
            deadline = time.monotonic() + 10
            while not c.closed and time.monotonic() < deadline:
                c.pump(0.5)
            return c
        finally:
            c.close()

    def test_settings_and_ping_flood(self):
        before = scrape(self.d)['pacerd_grpc_rejects_total{reason="flood"}']
        c = self.flood(lambda c, i: c.h2.ping(i.to_bytes(8, "big")))
        self.assertTrue(c.closed)
        self.assertEqual(c.goaway, ENHANCE_YOUR_CALM)  # read: the close does not reset what was sent
        c = self.flood(lambda c, i: c.h2.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: i % 100 + 1}))
        self.assertTrue(c.closed)
        self.assertEqual(c.goaway, ENHANCE_YOUR_CALM)
        self.assertEqual(scrape(self.d)['pacerd_grpc_rejects_total{reason="flood"}'] - before, 2)
        self.assert_still_serving()

    def test_rapid_reset(self):
        def reset(c, i):
            s = c.h2.get_next_available_stream_id()
            c.h2.send_headers(s, [(":method", "POST"), (":scheme", "http"), (":path", g.METHODS["traces"]),
                                  (":authority", "127.0.0.1"), ("content-type", "application/grpc"),
                                  ("authorization", "Bearer " + KEYS["shop"])])
            c.h2.reset_stream(s)
        c = self.flood(reset)
        self.assertTrue(c.closed)
        self.assertEqual(c.goaway, ENHANCE_YOUR_CALM)
        self.assert_still_serving()

    def test_hpack_block_expanding_past_the_limit(self):
        before = scrape(self.d)['pacerd_grpc_rejects_total{reason="headers"}']
        c = g.Conn(self.port)
        try:
            big = "a" * 3000  # indexed once, then referenced: a few bytes each on the wire
            s = c.start("traces", KEYS["shop"], extra=[("x-big", big)] * 60)
            sent = c.h2.data_to_send()
            a = c.wait(s, 10)
            self.assertTrue(a.ended)
            self.assertIsNotNone(a.reset)  # the stream is reset, never handled
            self.assertIsNone(a.status)
        finally:
            c.close()
        self.assertEqual(scrape(self.d)['pacerd_grpc_rejects_total{reason="headers"}'] - before, 1)
        del sent
        self.assert_still_serving()

    def test_window_held_at_zero(self):
        c = g.Conn(self.port, settings={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        try:
            msg = g.traces_request([])
            ids = []
            for _ in range(STREAMS):
                s = c.start("traces", KEYS["shop"])
                c.send(s, g.lpm(msg))
                ids.append(s)
            # the answers cannot go out; past --body-timeout their streams are reset
            for s in ids:
                a = c.wait(s, 15)
                self.assertTrue(a.ended)
                self.assertEqual(a.reset, 8)  # CANCEL
            self.assert_still_serving()
        finally:
            c.close()

    def test_connections_from_one_address(self):
        before = scrape(self.d)['pacerd_grpc_rejects_total{reason="per_address"}']
        conns = [g.Conn(self.port) for _ in range(PER_ADDRESS + 6)]
        try:
            for c in conns:
                c.pump(0.05)
            time.sleep(0.5)
            for c in conns:
                c.pump(0.05)
            closed = sum(1 for c in conns if c.closed)
            self.assertGreaterEqual(closed, 6)
        finally:
            for c in conns:
                c.close()
        self.assertGreaterEqual(scrape(self.d)['pacerd_grpc_rejects_total{reason="per_address"}'] - before, 6)
        time.sleep(0.5)  # the closes reach pacerd
        self.assert_still_serving()


class HeldInMemory(unittest.TestCase):
    """Streams held open with large header values on every connection a client
    may have: their bytes count among --max-inflight-bytes, so in all they
    stay under it; the streams past it are reset."""
    LIMIT = 1 << 20

    def test_streams_and_headers_count_in_flight(self):
        d = Pacerd(grpc=True, extra_args=[
            "--max-inflight-bytes", str(self.LIMIT), "--grpc-max-message", "262144", "--max-body", "262144",
            "--header-timeout", "5", "--body-timeout", "5"])
        conns = []
        try:
            # a content type the front accepts (application/grpc+…), 12 kB long: kept until the call ends
            ctype = "application/grpc+" + "x" * 12000
            for _ in range(3):
                c = g.Conn(d.grpc_port)
                conns.append(c)
                ids = [c.start("traces", KEYS["shop"], content_type=ctype) for _ in range(40)]
                c.pump(0.2)
            for c in conns:
                c.pump(0.2)
            m = scrape(d)
            held = m["pacerd_grpc_message_bytes_in_flight"]
            self.assertLessEqual(held, self.LIMIT)
            self.assertGreater(held, self.LIMIT // 2)  # the streams that fit are held, counted
            self.assertGreaterEqual(m['pacerd_grpc_rejects_total{reason="overload"}'], 120 - self.LIMIT // 12000)
            reset = sum(1 for c in conns for a in c.answers.values() if a.reset is not None)
            self.assertGreaterEqual(reset, 120 - self.LIMIT // 12000)
            del ids
        finally:
            for c in conns:
                c.close()
        try:
            # the connections gone, their bytes are given back and calls are served
            deadline = time.monotonic() + 10
            while scrape(d)["pacerd_grpc_message_bytes_in_flight"] and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(scrape(d)["pacerd_grpc_message_bytes_in_flight"], 0)
            a = g.call(d.grpc_port, "traces", g.traces_request([g.span(bytes.fromhex("%032x" % 0x7001),
                       bytes.fromhex("%016x" % 0x7002), "honest", T0, 10**6)]), KEYS["shop"])
            self.assertEqual(a.status, "OK", a.message)
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
