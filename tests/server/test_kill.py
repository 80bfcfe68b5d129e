"""pacerd killed with SIGKILL in the middle of ingest and restarted: every
batch a client sent (retrying whatever was not acknowledged, and re-sending
some that were, as an uploader does after a lost answer) is stored exactly
once — checked in the raw rows, the batch table and the query API. On
ClickHouse a batch cut by the kill may have its raw rows twice (readers keep
one per span): there every span must be there, each batch committed, and
the query API count each span once."""
import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import BACKEND, KEYS, Pacerd, page_span, traces  # noqa: E402

T0 = 1_700_006_400 * 10**9
BATCHES = 120
SPANS = 250
KILLS = 4


class KillDuringIngest(unittest.TestCase):
    def test_sigkill_loses_nothing_acknowledged_and_stores_nothing_twice(self):
        d = Pacerd()
        try:
            rnd = random.Random(7)
            bodies = []
            for b in range(BATCHES):
                spans = [page_span("KillWindow", T0 + rnd.randrange(86400 * 10**9), rnd.uniform(10, 900))
                         for _ in range(SPANS)]
                for i, s in enumerate(spans):
                    s["spanId"] = "%08x%08x" % (b + 1, i + 1)
                bodies.append(traces(spans))
            acked = set()
            lock = threading.Lock()
            stop = threading.Event()
            errors = []

            def send(batch):
                # retries until acknowledged; connection errors and 5xx mean "not known to be stored"
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        st, _, _ = d.request("POST", "/v1/traces", bodies[batch], token=KEYS["shop"],
                                             headers={"X-Pacer-Batch-Id": "kill-%d" % batch})
                    except OSError:
                        st = None
                    if st == 200:
                        with lock:
                            acked.add(batch)
                        return
                    if st not in (None, 429, 503):
                        errors.append("batch %d: HTTP %s" % (batch, st))
                        return
                    time.sleep(0.05)
                errors.append("batch %d: never acknowledged" % batch)

            def client(first):
                r = random.Random(first)
                for batch in range(first, BATCHES, 2):
                    send(batch)
                    if r.random() < 0.2:  # an answer the client "lost": sent again
                        send(r.randrange(0, batch + 1))

            threads = [threading.Thread(target=client, args=(n,)) for n in range(2)]
            for t in threads:
                t.start()
            kills = 0
            while kills < KILLS and any(t.is_alive() for t in threads):
                time.sleep(0.15 + random.random() * 0.2)
                d.kill(9)  # SIGKILL: no shutdown code runs
                kills += 1
                d.start()
            for t in threads:
                t.join()
            stop.set()
            self.assertEqual(errors, [])
            self.assertEqual(len(acked), BATCHES)
            self.assertGreaterEqual(kills, 2, "the run ended before pacerd could be killed twice")

            if BACKEND == "sqlite":
                self.assertEqual(d.sql("SELECT COUNT(*) FROM page_loads")[0][0], BATCHES * SPANS)
                self.assertEqual(d.sql("SELECT COUNT(*) FROM batches WHERE id LIKE 'kill-%'")[0][0], BATCHES)
            else:
                self.assertEqual(d.sql("SELECT uniqExact(batch) FROM pending WHERE kind = -1 AND batch LIKE 'kill-%'")
                                 [0][0], BATCHES)
            self.assertEqual(d.sql("SELECT COUNT(DISTINCT span_id) FROM page_loads")[0][0], BATCHES * SPANS)
            pages = d.query("/api/v1/pages?app=shop")["pages"]
            self.assertEqual(pages[0]["count"], BATCHES * SPANS)
            self.assertEqual(pages[0]["metrics"]["total_ms"]["count"], BATCHES * SPANS)
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
