"""pacer's own uploader over OTLP/gRPC (PACER_OTLP_PROTOCOL=grpc: libcurl
HTTP/2 to pacerd --grpc-listen) delivers a run exactly once across SIGKILLs
of pacerd: a probe app makes 600 page records while pacerd is killed and
restarted on the same ports twice; the uploader retries what was not
answered under its batch id, and the next run of the app sends what the
first left in its spool. Every page is stored once: in the raw rows, by
span id, and in the query API's count."""
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import BACKEND, KEYS, Pacerd  # noqa: E402

PROBE = os.environ["UPLOAD_PROBE"]
PAGES = 600


class GrpcKill(unittest.TestCase):
    def test_a_run_is_stored_once_across_sigkills(self):
        d = Pacerd(grpc=True)
        spool = os.path.join(d.dir, "spool.db")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PACER_OTLP_", "PACER_CONFIG_SERVER"))}
        env.update(PACER_OTLP_PROTOCOL="grpc", PACER_KEY=KEYS["shop"])
        try:
            p = subprocess.Popen([PROBE, d.grpc_base, spool, "shop", "pages", str(PAGES), "5"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(2):
                time.sleep(1.0)
                d.kill(9)  # SIGKILL: no shutdown code runs
                time.sleep(0.3)
                d.start(d.port, d.grpc_port)
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
            for _ in range(5):  # what the run could not deliver waits in its spool
                if d.sql("SELECT COUNT(DISTINCT span_id) FROM page_loads")[0][0] >= PAGES:
                    break
                q = subprocess.run([PROBE, d.grpc_base, spool, "shop", "pages", "0", "0"], capture_output=True,
                                   text=True, timeout=60, env=env)
                self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
            self.assertEqual(d.sql("SELECT COUNT(DISTINCT span_id) FROM page_loads")[0][0], PAGES)
            if BACKEND == "sqlite":
                self.assertEqual(d.sql("SELECT COUNT(*) FROM page_loads")[0][0], PAGES)
            pages = d.query("/api/v1/pages?app=shop")["pages"]
            self.assertEqual(pages[0]["count"], PAGES)
            # the run was cut: more than one batch, and the uploader had to try again
            self.assertGreater(d.sql("SELECT COUNT(*) FROM batches")[0][0], 1)
            retries = int(dict(kv.split("=") for kv in out.split())["retries"])
            self.assertGreater(retries, 0, out)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            d.close()


if __name__ == "__main__":
    unittest.main()
