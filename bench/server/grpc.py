#!/usr/bin/python3
"""pacerd: the same spans over OTLP/gRPC (--grpc-listen) and over OTLP/HTTP
protobuf (make bench).

  bench/server/grpc.py BUILD_DIR

RUNS (default 5) pairs of fresh databases, alternating: 200,000 spans in
requests of 1,000 (the same Export…ServiceRequest bytes on both fronts,
without compression), 4 connections each with one call or request at a
time, on loopback. Prints every run, then the medians of spans/s and of
pacerd's CPU time per span (utime + stime of /proc/PID/stat over the run),
and gRPC's ratio to OTLP/HTTP protobuf (target: CPU per span within 10 %).
The clients are Python (python3-h2 for HTTP/2, http.client for HTTP/1.1);
spans/s says as much about them as about pacerd, which is why CPU per span
is the figure the target is on. Debian's python3 (python3-h2 lives there).
"""
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import grpc_client as g  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build-bench"
PACERD = os.path.join(BUILD, "src", "server", "pacerd")
RUNS = int(os.environ.get("RUNS", "5"))
REQUESTS = int(os.environ.get("REQUESTS", "200"))
BATCH = 1000
CONNS = 4
HZ = os.sysconf("SC_CLK_TCK")
T0 = 1_700_006_400 * 10**9


def requests():
    """REQUESTS distinct Export requests of BATCH spans each."""
    out = []
    for r in range(REQUESTS):
        spans = []
        for i in range(BATCH):
            n = r * BATCH + i + 1
            spans.append(g.span(n.to_bytes(16, "big"), n.to_bytes(8, "big"), "GET /item/%d" % (n % 50),
                                T0 + n * 10**6, (n % 900 + 1) * 10**6, [("http.route", "/item/{id}"),
                                                                        ("http.status_code", "200")]))
        out.append(g.traces_request(spans, service="bench", version="1.%d" % (r % 2)))
    return out


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ  # utime, stime (fields 14, 15)


def send_grpc(port, key, bodies):
    c = g.Conn(port, timeout=60)
    try:
        for b in bodies:
            a = c.call("traces", b, key, timeout=60)
            if a.status != "OK":
                raise SystemExit("gRPC: %s %s" % (a.status, a.message))
    finally:
        c.close()


def send_http(port, key, bodies):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        for b in bodies:
            c.request("POST", "/v1/traces", b, {"Content-Type": "application/x-protobuf",
                                                 "Authorization": "Bearer " + key})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                raise SystemExit("HTTP: %d" % r.status)
    finally:
        c.close()


def run(front, bodies, work, key):
    db = os.path.join(work, "bench-%s.db" % front)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    p = subprocess.Popen([PACERD, "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--db", db,
                          "--admin-token-file", os.path.join(work, "admin"), "--keys-file", os.path.join(work, "keys")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        http_port = int(p.stdout.readline().rsplit(":", 1)[1])
        grpc_port = int(p.stdout.readline().rsplit(":", 1)[1])
        send = send_grpc if front == "grpc" else send_http
        port = grpc_port if front == "grpc" else http_port
        c0, t0 = cpu_s(p.pid), time.monotonic()
        threads = [threading.Thread(target=send, args=(port, key, bodies[i::CONNS])) for i in range(CONNS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        secs, cpu = time.monotonic() - t0, cpu_s(p.pid) - c0
    finally:
        p.terminate()
        p.wait()
        p.stdout.close()
    spans = REQUESTS * BATCH
    return spans / secs, cpu * 1e6 / spans


def main():
    if not os.path.exists(PACERD):
        raise SystemExit("%s: not built" % PACERD)
    bodies = requests()
    key = "benchkey-%d" % os.getpid()
    with tempfile.TemporaryDirectory(prefix="pacerd-grpc-bench-") as work:
        with open(os.path.join(work, "admin"), "w") as f:
            f.write("admin-%d\n" % os.getpid())
        with open(os.path.join(work, "keys"), "w") as f:
            f.write("bench %s\n" % key)
        print("ingest: %d runs each of %d spans, %d per request, %d connections, no compression;"
              % (RUNS, REQUESTS * BATCH, BATCH, CONNS))
        print("  OTLP/gRPC and OTLP/HTTP protobuf (the same message bytes), alternating")
        got = {"grpc": [], "http": []}
        for i in range(RUNS):
            for front in ("grpc", "http"):
                rate, us = run(front, bodies, work, key)
                got[front].append((rate, us))
                print("  run %d %s: spans_per_s=%d pacerd_cpu_us_per_span=%.2f" % (i + 1, front, rate, us))
        med = {f: (statistics.median(r for r, _ in v), statistics.median(u for _, u in v)) for f, v in got.items()}
        print("  OTLP/gRPC: median %d spans/s, %.2f us of pacerd CPU a span" % med["grpc"])
        print("  OTLP/HTTP protobuf: median %d spans/s, %.2f us of pacerd CPU a span" % med["http"])
        ratio = med["grpc"][1] / med["http"][1]
        print("  gRPC / HTTP: CPU per span %.3f x (target <= 1.10: %s), spans/s %.3f x"
              % (ratio, "met" if ratio <= 1.10 else "NOT met", med["grpc"][0] / med["http"][0]))


if __name__ == "__main__":
    main()
