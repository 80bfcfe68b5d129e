"""Faults of the machine under a running pacerd: a full disk (a small
tmpfs, filled by a file or by the database under a client that keeps
posting), a read-only store (an ext4 image that the kernel remounts
read-only after an error, as errors=remount-ro does on a failing disk), a
corrupted table page, SIGTERM under load, and a key change with SIGHUP. In
each: nothing acknowledged is lost, and every failure shows in /healthz
(for as long as batches fail), in /metrics and once in the log.

The file-system faults need root (mount, loop devices); elsewhere they are
skipped, except in CI (CI=true), where `make test` runs as root."""
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import ADMIN, KEYS, Pacerd, Poster, healthz_probes, page_span, scrape, traces  # noqa: E402

DAY = 86400 * 10**9
T0 = 1_700_006_400 * 10**9  # a UTC midnight


def need_root(what):
    if os.geteuid() == 0:
        return
    if os.environ.get("CI"):
        raise AssertionError("%s needs root (CI runs make test as root)" % what)
    raise unittest.SkipTest("%s needs root" % what)


def unmount(path):
    """Unmounts path (lazily when something still holds it): a test never
    leaves a mount behind."""
    if subprocess.run(["umount", path], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", path], capture_output=True)


def batch(tag, n, day=0):
    return traces([page_span("FaultWindow", T0 + day * DAY + (i * 7919 % 86000) * 10**9, 10.0 + i % 90)
                   for i in range(n)]), "fault-%s" % tag


def post(d, body, batch_id):
    st, h, data = d.request("POST", "/v1/traces", body, token=KEYS["shop"],
                            headers={"X-Pacer-Batch-Id": batch_id})
    return st, h, json.loads(data) if data else None


def count(d, window="FaultWindow", query=""):
    for p in d.query("/api/v1/pages?app=shop" + query)["pages"]:
        if p["page"] == window:
            return p["count"]
    return 0


def healthz(d):
    st, _, data = d.request("GET", "/healthz")
    return st, json.loads(data)


def wait_for(pred, seconds=15, what="condition"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class FullDisk(unittest.TestCase):
    def test_full_disk_answers_503_everywhere_and_loses_nothing_acknowledged(self):
        need_root("a tmpfs")
        mnt = tempfile.mkdtemp(prefix="pacerd-full-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt], check=True)
        d = None
        try:
            d = Pacerd(db=os.path.join(mnt, "pacer.db"))
            acked = 0
            for i in range(3):
                body, bid = batch("a%d" % i, 300)
                self.assertEqual(post(d, body, bid)[0], 200)
                acked += 300
            self.assertEqual(healthz(d)[0], 200)
            # fill the disk
            fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(fd, b"\0" * 65536)  # unbuffered: nothing left to fail at close
            except OSError:
                pass
            finally:
                os.close(fd)
            failed = []
            for i in range(4):
                body, bid = batch("b%d" % i, 300)
                st, h, data = post(d, body, bid)
                self.assertEqual(st, 503, data)
                self.assertEqual(h.get("Retry-After"), "5")
                failed.append((body, bid))
            st, h = healthz(d)
            self.assertEqual(st, 503)
            self.assertEqual(h["status"], "disk_full")
            self.assertIn("the disk is full: database or disk is full", h["error"])
            m = scrape(d)
            self.assertEqual(m['pacerd_store_state{state="disk_full"}'], 1)
            self.assertEqual(m["pacerd_store_up"], 0)
            self.assertGreaterEqual(m['pacerd_store_failures_total{cause="disk_full"}'], 4)
            self.assertGreaterEqual(m['pacerd_rejects_total{reason="store_failed"}'], 4)
            # queries still answer, with what was acknowledged
            self.assertEqual(count(d), acked)
            # space again: the same batches go through, health comes back
            os.unlink(os.path.join(mnt, "filler"))
            for body, bid in failed:
                self.assertEqual(post(d, body, bid)[0], 200)
                acked += 300
            wait_for(lambda: healthz(d)[0] == 200, what="healthz 200 after the disk has room")
            self.assertEqual(count(d), acked)
            log = d.stderr_text()
            self.assertEqual(log.count("writes fail: the disk is full"), 1, log)
            self.assertEqual(log.count("writes succeed again"), 1, log)
            d.kill(signal.SIGTERM)
            self.assertEqual(d.proc.returncode, 0)
            d.start()
            self.assertEqual(count(d), acked)
        finally:
            try:
                if d:
                    d.close()
            finally:
                unmount(mnt)
                os.rmdir(mnt)


def poster(d, tag, spans=300, pause=0.2):
    """A client that keeps posting batches of `spans` page loads (Poster)."""
    def make(k):
        body, bid = batch("%s%d" % (tag, k), spans, day=k % 3)
        return body, bid, spans
    return Poster(d, make, pause)


class FullDiskUnderLoad(unittest.TestCase):
    """The database fills its file system while a client keeps posting. A
    small transaction still fits where the failed batch had grown the WAL
    (the probe's row, a rollup, the analysis), so a health made of the last
    commit flapped: /healthz must answer 503 at every probe for as long as
    the batches fail, with one line in the log, and come back once there is
    room again, without a batch or a restart."""

    def test_healthz_stays_503_while_batches_fail_and_comes_back_when_there_is_room(self):
        need_root("a tmpfs")
        mnt = tempfile.mkdtemp(prefix="pacerd-fill-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt], check=True)
        d = client = None
        try:
            ballast = os.path.join(mnt, "ballast")
            with open(ballast, "wb") as f:
                f.write(b"\1" * (8 << 20))  # what is freed later
            d = Pacerd(db=os.path.join(mnt, "pacer.db"))
            client = poster(d, "fill", pause=0.05)
            wait_for(lambda: 503 in client.statuses(), 120, "the database to fill its file system")
            client.pause = 0.2
            seen = len(client.outcomes)
            probes = healthz_probes(d)
            # every probe while batches fail: 503, the full disk and what the store needs
            self.assertEqual([st for st, _ in probes], [503] * len(probes), probes)
            self.assertEqual({h["status"] for _, h in probes}, {"disk_full"}, probes)
            self.assertRegex(probes[-1][1]["error"], r"^the disk is full: .*a batch needs \d+\.\d MiB")
            self.assertNotIn(200, client.statuses(seen))  # the client saw the same
            self.assertGreater(len(client.statuses(seen)), 8)
            m = scrape(d)
            self.assertEqual(m["pacerd_store_up"], 0)
            self.assertEqual(m['pacerd_store_state{state="disk_full"}'], 1)
            log = d.stderr_text()
            self.assertEqual(log.count("writes fail: the disk is full"), 1, log)
            self.assertNotIn("writes succeed again", log)

            # room again: the probe proves a batch could commit, before any does
            client.stop()
            os.unlink(ballast)
            wait_for(lambda: healthz(d)[0] == 200, 30, "healthz 200 once the disk has room")
            log = d.stderr_text()
            self.assertEqual(log.count("writes succeed again"), 1, log)
            self.assertIn("the probe committed", log)
            self.assertEqual(scrape(d)["pacerd_store_up"], 1)
            # and the batches do: the client again, until a few went through
            acked_before = client.acked
            client = poster(d, "room")
            wait_for(lambda: client.statuses().count(200) >= 5, 60, "batches stored after the disk has room")
            client.stop()
            self.assertEqual(client.statuses()[:5], [200] * 5)
            acked = acked_before + client.acked
            self.assertEqual(count(d), acked)  # nothing acknowledged lost, nothing refused stored
            log = d.stderr_text()
            self.assertEqual(log.count("writes fail"), 1, log)
            d.kill(signal.SIGTERM)
            self.assertEqual(d.proc.returncode, 0)
            d.start()
            self.assertEqual(count(d), acked)
        finally:
            try:
                if client:
                    client.stop()
                if d:
                    d.close()
            finally:
                unmount(mnt)
                os.rmdir(mnt)


class ReadOnlyStore(unittest.TestCase):
    def test_store_remounted_read_only_is_reported_and_reads_go_on(self):
        need_root("a loop-mounted ext4 image")
        tmp = tempfile.mkdtemp(prefix="pacerd-ro-")
        img, mnt = os.path.join(tmp, "ext4.img"), os.path.join(tmp, "mnt")
        os.mkdir(mnt)
        with open(img, "wb") as f:
            f.truncate(32 << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
        r = subprocess.run(["mount", "-o", "loop,errors=remount-ro", img, mnt], capture_output=True, text=True)
        if r.returncode != 0:
            os.unlink(img)
            os.rmdir(mnt)
            os.rmdir(tmp)
            if os.environ.get("CI"):
                self.fail("cannot loop-mount an ext4 image: " + r.stderr)
            self.skipTest("cannot loop-mount an ext4 image: " + r.stderr.strip())
        d = None
        try:
            d = Pacerd(["--sync", "full"], db=os.path.join(mnt, "pacer.db"))
            acked = 0
            for i in range(3):
                body, bid = batch("r%d" % i, 200)
                self.assertEqual(post(d, body, bid)[0], 200)
                acked += 200
            dev = os.path.basename(subprocess.run(["findmnt", "-n", "-o", "SOURCE", mnt], capture_output=True,
                                                  text=True, check=True).stdout.strip())
            with open("/sys/fs/ext4/%s/trigger_fs_error" % dev, "w") as f:
                f.write("pacer read-only store test\n")  # ext4_error: the kernel remounts it read-only
            for i in range(3):
                body, bid = batch("s%d" % i, 200)
                st, h, data = post(d, body, bid)
                self.assertEqual(st, 503, data)
            st, h = healthz(d)
            self.assertEqual(st, 503)
            self.assertEqual(h["status"], "read_only", h)
            self.assertRegex(h["error"], "Read-only file system|mounted read-only")
            m = scrape(d)
            self.assertEqual(m['pacerd_store_state{state="read_only"}'], 1)
            self.assertGreaterEqual(m['pacerd_store_failures_total{cause="read_only"}'], 3)
            self.assertEqual(count(d), acked)  # reads go on, and nothing acknowledged is lost
            # a client that keeps posting: every probe 503, one line in the log
            client = poster(d, "ro")
            try:
                probes = healthz_probes(d)
            finally:
                client.stop()
            self.assertEqual([(st, h["status"]) for st, h in probes], [(503, "read_only")] * len(probes), probes)
            self.assertEqual(set(client.statuses()), {503})
            self.assertEqual(client.acked, 0)
            log = d.stderr_text()
            self.assertEqual(log.count("writes fail: the database is read-only"), 1, log)
            self.assertNotIn("writes succeed again", log)
            # the kernel keeps an ext4 it remounted read-only after an error
            # so until it is unmounted (remount,rw leaves it read-only):
            # pacerd stops, the file system is checked and mounted again
            d.kill(signal.SIGTERM)
            unmount(mnt)
            subprocess.run(["e2fsck", "-f", "-y", img], capture_output=True)
            subprocess.run(["mount", "-o", "loop,errors=remount-ro", img, mnt], check=True)
            d.start()
            self.assertEqual(healthz(d), (200, {"status": "ok"}))
            self.assertEqual(count(d), acked)
            body, bid = batch("s0", 200)
            self.assertEqual(post(d, body, bid)[0], 200)
            self.assertEqual(count(d), acked + 200)
        finally:
            try:
                if d:
                    d.close()
            finally:
                unmount(mnt)
                shutil.rmtree(tmp, ignore_errors=True)


class CorruptPage(unittest.TestCase):
    def test_a_corrupted_table_page_is_503_logged_once_and_healthz_says_so(self):
        d = Pacerd(["--rollup-lag", "0"])
        try:
            body, bid = batch("c", 4000)
            self.assertEqual(post(d, body, bid)[0], 200)
            d.kill(signal.SIGTERM)
            # a leaf page of the table a range that cuts days reads (the rows
            # wait there to be sealed into blocks)
            db = sqlite3.connect(d.db)
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            leaves = [r[0] for r in db.execute(
                "SELECT pageno FROM dbstat WHERE name = 'page_loads' AND pagetype = 'leaf' ORDER BY pageno")]
            db.close()
            self.assertGreater(len(leaves), 3)
            with open(d.db, "r+b") as f:
                f.seek((leaves[len(leaves) // 2] - 1) * page_size)
                f.write(b"\xff" * 64)  # no b-tree page starts so
            d.start()
            cut = "&from=%d&to=%d" % (T0 // 10**9 + 60, T0 // 10**9 + 86000)
            for _ in range(3):
                st, _, data = d.request("GET", "/api/v1/pages?app=shop" + cut, token=ADMIN)
                self.assertEqual(st, 503, data)
            st, h = healthz(d)
            self.assertEqual((st, h["status"]), (503, "corrupt"), h)
            self.assertIn("malformed", h["error"])
            m = scrape(d)
            self.assertEqual(m['pacerd_store_state{state="corrupt"}'], 1)
            self.assertGreaterEqual(m['pacerd_store_failures_total{cause="corrupt"}'], 3)
            self.assertGreaterEqual(m["pacerd_store_read_failures_total"], 3)
            log = d.stderr_text()
            self.assertEqual(log.count("the database is corrupt"), 1, log)
            self.assertIn("seen by a query", log)
            # what does not touch the page still answers: whole days come from the rollups
            self.assertEqual(count(d), 4000)
        finally:
            d.close()


class SigtermUnderLoad(unittest.TestCase):
    CLIENTS = 6
    SPANS = 1500

    def test_sigterm_answers_every_request_in_flight_then_exits(self):
        d = Pacerd()
        try:
            bodies = [json.dumps(batch("t%d" % i, self.SPANS, day=i % 5)[0]).encode() for i in range(4)]
            outcomes = []  # (batch id, sent_at, answered_at, status or error)
            lock = threading.Lock()
            stop = threading.Event()

            def client(c):
                s = None
                k = 0
                while not stop.is_set():
                    bid = "term-%d-%d" % (c, k)
                    k += 1
                    body = bodies[k % len(bodies)]
                    try:
                        if s is None:
                            s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
                        s.sendall(("POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                   "Authorization: Bearer %s\r\nX-Pacer-Batch-Id: %s\r\nContent-Length: %d\r\n\r\n"
                                   % (KEYS["shop"], bid, len(body))).encode() + body)
                        sent = time.monotonic()
                        status, close = read_response(s)
                        with lock:
                            outcomes.append((bid, sent, time.monotonic(), status))
                        if close:
                            s.close()
                            s = None
                    except OSError as e:
                        with lock:
                            outcomes.append((bid, None, time.monotonic(), repr(e)))
                        if s:
                            s.close()
                        s = None
                        if isinstance(e, ConnectionRefusedError):
                            return
                        time.sleep(0.05)

            threads = [threading.Thread(target=client, args=(c,)) for c in range(self.CLIENTS)]
            for t in threads:
                t.start()
            wait_for(lambda: sum(1 for o in outcomes if o[3] == 200) >= 10, 30, "some acknowledged batches")
            t_sig = time.monotonic()
            d.proc.send_signal(signal.SIGTERM)
            d.proc.wait(timeout=60)
            stop.set()
            for t in threads:
                t.join(timeout=60)
            self.assertEqual(d.proc.returncode, 0)
            # a request fully sent before the signal was answered: stored (200)
            # or refused for the shutdown (503); none was dropped unanswered
            before = [o for o in outcomes if o[1] is not None and o[1] < t_sig]
            in_flight = [o for o in before if o[2] > t_sig]
            self.assertTrue(all(o[3] in (200, 503) for o in before), [o for o in before if o[3] not in (200, 503)])
            self.assertGreater(len(in_flight), 0, "no request was in flight at SIGTERM")
            after = [o[3] for o in outcomes if o[1] is not None and o[1] >= t_sig]
            self.assertTrue(all(s in (200, 503) for s in after), after)
            acked = {o[0] for o in outcomes if o[3] == 200}
            log = d.stderr_text()
            self.assertIn("SIGTERM: stopping", log)
            d.start()
            self.assertEqual(count(d), len(acked) * self.SPANS)  # nothing acknowledged lost, nothing twice
            print("SIGTERM with %d clients: %d requests in flight answered (%s), %d acknowledged in all"
                  % (self.CLIENTS, len(in_flight), sorted({o[3] for o in in_flight}), len(acked)))
        finally:
            d.close()


def read_response(s):
    """Status of one HTTP response on s, and whether the server closes."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        c = s.recv(65536)
        if not c:
            raise ConnectionAbortedError("closed before an answer")
        buf += c
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        c = s.recv(65536)
        if not c:
            raise ConnectionAbortedError("closed in an answer")
        rest += c
    return status, headers.get("connection", "").lower() == "close"


class Sighup(unittest.TestCase):
    def test_sighup_changes_keys_and_admin_token_and_a_bad_file_changes_nothing(self):
        d = Pacerd()
        try:
            body = traces([page_span("HupWindow", T0, 5.0)])
            self.assertEqual(d.request("POST", "/v1/traces", body, token=KEYS["shop"])[0], 200)
            new_key, new_admin = "shop-rotated-0123456789", "admin-rotated-0123456789"
            with open(d.keys_file, "w") as f:
                f.write("shop %s rate=1000/s daily=1000000\n" % new_key)
            with open(d.admin_file, "w") as f:
                f.write(new_admin + "\n")
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "reloaded the admin token and 1 keys" in d.stderr_text(), what="the reload")
            self.assertEqual(d.request("POST", "/v1/traces", body, token=KEYS["shop"])[0], 401)
            self.assertEqual(d.request("POST", "/v1/traces", body, token=KEYS["other"])[0], 401)
            self.assertEqual(d.request("POST", "/v1/traces", body, token=new_key)[0], 200)
            self.assertEqual(d.request("GET", "/api/v1/apps", token=ADMIN)[0], 401)
            self.assertEqual(d.request("GET", "/api/v1/apps", token=new_admin)[0], 200)
            # an error in the file: reported with its line, the credentials in use stay
            with open(d.keys_file, "w") as f:
                f.write("shop %s\nbroken-line-without-key\n" % new_key)
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "the credentials in use stay" in d.stderr_text(), what="the failed reload")
            self.assertIn("%s:2: expected \"APP KEY\"" % d.keys_file, d.stderr_text())
            self.assertEqual(d.request("POST", "/v1/traces", body, token=new_key)[0], 200)
            m = scrape(d, token=new_admin)
            self.assertEqual(m['pacerd_auth_reloads_total{result="ok"}'], 1)
            self.assertEqual(m['pacerd_auth_reloads_total{result="failed"}'], 1)
            self.assertEqual(m["pacerd_auth_keys"], 1)
            self.assertNotIn(new_key, d.stderr_text())
            self.assertNotIn(new_admin, d.stderr_text())
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
