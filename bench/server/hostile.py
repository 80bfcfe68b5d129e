#!/usr/bin/env python3
"""pacerd under hostile load, measured side by side (make bench).

    bench/server/hostile.py BUILD_DIR

1. /healthz with 1000 slowloris connections open (20 from each of 50
   loopback addresses, each trickling a header line every 0.5 s, under the
   header deadline): 200 probes, each on a new connection, against 200
   probes with no attack in the same run. Prints the medians and p99s, the
   ratio to the quiet floor and to the target (100 ms).
2. Open-loop overload: 1000-span ingest requests sent at a fixed rate for
   8 s whatever the answers, at about 2x what pacerd commits on this
   machine (measured first, closed loop, in the same run). Prints how many
   were accepted and refused 429, and the latency of the accepted ones
   (p50, p99), to set against --max-wait (1000 ms).
"""
import asyncio
import json
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build-bench")
PACERD = os.path.join(build, "src", "server", "pacerd")
KEY = "bench-%016x" % random.getrandbits(64)
ADMIN = "admin-%016x" % random.getrandbits(64)
T0 = 1_700_006_400 * 10**9


def start(work, *args):
    with open(os.path.join(work, "admin"), "w") as f:
        f.write(ADMIN + "\n")
    with open(os.path.join(work, "keys"), "w") as f:
        f.write("bench %s\n" % KEY)
    db = os.path.join(work, "hostile.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    p = subprocess.Popen([PACERD, "--listen", "127.0.0.1:0", "--db", db, "--admin-token-file",
                          os.path.join(work, "admin"), "--keys-file", os.path.join(work, "keys")] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    return p, int(line.rsplit(":", 1)[1])


def healthz_ms(port):
    t = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
    got = b""
    while True:
        c = s.recv(4096)
        if not c:
            break
        got += c
    s.close()
    assert got.startswith(b"HTTP/1.1 200"), got[:100]
    return (time.perf_counter() - t) * 1000


def pct(values, q):
    v = sorted(values)
    return v[int(q * (len(v) - 1))]


def healthz_under_slowloris(work):
    n, per = 1000, 20
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    p, port = start(work, "--max-per-address", str(per), "--header-timeout", "60")
    try:
        quiet = [healthz_ms(port) for _ in range(200)]
        socks = []
        for i in range(n):
            s = socket.socket()
            s.bind(("127.0.0.%d" % (2 + i // per), 0))
            s.connect(("127.0.0.1", port))
            s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: slow\r\n")
            socks.append(s)
        attacked = []
        line = 0
        last = time.monotonic()
        while len(attacked) < 200:
            attacked.append(healthz_ms(port))
            if time.monotonic() - last > 0.5:
                for s in socks:
                    s.sendall(b"X-Slow-%d: y\r\n" % line)
                line += 1
                last = time.monotonic()
        for s in socks:
            s.close()
        q50, a50, a99 = pct(quiet, 0.5), pct(attacked, 0.5), pct(attacked, 0.99)
        print("  /healthz, 200 probes each: quiet median %.2f ms (p99 %.2f); with %d slow connections median "
              "%.2f ms (p99 %.2f)" % (q50, pct(quiet, 0.99), n, a50, a99))
        print("  with the attack: %.2f x the quiet median; p99 = %.3f x the target of 100 ms"
              % (a50 / q50, a99 / 100))
    finally:
        p.terminate()
        p.wait()


def overload(work):
    spans = [{"traceId": "%032x" % (i + 1), "spanId": "%016x" % (i + 1), "name": "LoadWindow", "kind": 1,
              "startTimeUnixNano": str(T0 + i * 10**6), "endTimeUnixNano": str(T0 + i * 10**6 + 10**7),
              "attributes": [{"key": "pacer.type", "value": {"stringValue": "page"}},
                             {"key": "pacer.page", "value": {"stringValue": "LoadWindow"}},
                             {"key": "pacer.status", "value": {"stringValue": "complete"}},
                             {"key": "pacer.total_ms", "value": {"doubleValue": 10.0 + i % 50}}]}
             for i in range(1000)]
    body = json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "bench"}}]},
        "scopeSpans": [{"spans": spans}]}]}).encode()

    def request(i):
        return ("POST /v1/traces HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
                "Authorization: Bearer %s\r\nX-Pacer-Batch-Id: o-%d\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % (KEY, i, len(body))).encode() + body

    async def one(port, i, at, out):
        await asyncio.sleep(max(0, at - time.monotonic()))
        t = time.monotonic()
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(request(i))
        await w.drain()
        got = await r.read()
        w.close()
        out.append((int(got[9:12]), (time.monotonic() - t) * 1000))

    async def closed_loop(port, seconds):
        done = 0
        end = time.monotonic() + seconds

        async def worker(k):
            nonlocal done
            i = k * 100000
            while time.monotonic() < end:
                out = []
                await one(port, i, 0, out)
                i += 1
                done += out[0][0] == 200
        await asyncio.gather(*(worker(k) for k in range(4)))
        return done / seconds

    async def open_loop(port, rate, seconds, out):
        start = time.monotonic() + 0.2
        await asyncio.gather(*(one(port, 10**7 + i, start + i / rate, out) for i in range(int(rate * seconds))))

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    p, port = start(work, "--max-per-address", "4000", "--max-connections", "8000")
    try:
        capacity = asyncio.run(closed_loop(port, 4))
        rate = max(20, 2 * capacity)
        out = []
        asyncio.run(open_loop(port, rate, 8, out))
        ok = [ms for st, ms in out if st == 200]
        refused = sum(1 for st, _ in out if st == 429)
        other = len(out) - len(ok) - refused
        print("  capacity (closed loop, 4 connections): %.0f requests/s of 1000 spans" % capacity)
        print("  open loop at %.0f requests/s for 8 s: %d accepted, %d refused 429, %d other" %
              (rate, len(ok), refused, other))
        if ok:
            print("  accepted latency: p50 %.0f ms, p99 %.0f ms (--max-wait 1000 ms bounds the queue wait)"
                  % (pct(ok, 0.5), pct(ok, 0.99)))
    finally:
        p.terminate()
        p.wait()


def main():
    work = tempfile.mkdtemp(prefix="pacerd-hostile-")
    try:
        print("slowloris: /healthz with 1000 slow connections open")
        healthz_under_slowloris(work)
        print("overload: open loop at 2x capacity")
        overload(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
