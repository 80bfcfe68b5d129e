"""A file made by an earlier pacerd, opened by this one: a field the record
schema gave a store column since is added to its table (old rows hold NULL,
new rows the value), and a file of store schema 2 (before day partitions)
is converted and answers as it did."""
import gzip
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import Pacerd, attr, page_span, span, traces  # noqa: E402

T0 = 1_700_006_400 * 10**9  # a day boundary
DAY = 86400 * 10**9
DATA = os.path.join(os.path.dirname(__file__), "data")


def net_span(ts, ms, page=None):
    attrs = [attr("pacer.type", "net"), attr("pacer.method", "GET"),
             attr("pacer.url", "http://api.example/api/items/1"), attr("pacer.status", 200),
             attr("pacer.total_ms", float(ms))]
    if page:
        attrs.append(attr("pacer.page", page))
    return span("GET", ts, int(ms * 1e6), attrs)


class StoreUpgrade(unittest.TestCase):
    def test_missing_column_is_added(self):
        d = Pacerd()
        try:
            d.ingest("/v1/traces", traces([net_span(T0 + 1, 10.0)]))
            d.kill(15)
            db = sqlite3.connect(d.db)
            db.execute("ALTER TABLE requests DROP COLUMN page")  # as a file from before the field
            db.commit()
            db.close()
            d.start()
            d.ingest("/v1/traces", traces([net_span(T0 + 2, 20.0, page="HomeWindow")]))
            d.kill(15)
            db = sqlite3.connect(d.db)
            rows = db.execute("SELECT total_ms, page FROM requests ORDER BY ts").fetchall()
            db.close()
            self.assertEqual(rows, [(10.0, None), (20.0, "HomeWindow")])
        finally:
            d.close()

    def test_a_file_of_schema_2_answers_as_before(self):
        """tests/server/data/store-v2.sql.gz: every kind of record over four
        days, some of them not yet in the rollups, written by the pacerd of
        store schema 2 (rows in commit order, *_keys tables); its answers then
        are store-v2.json.gz (tests/server/data/make_store_v2.py made both).
        Opened by this pacerd, the file is converted to day partitions and
        answers the same: percentiles over whole and cut days, traces, span
        search, logs, metric points, samples."""
        for args in ([], ["--seal-rows", "7"]):  # the records left in their table, or sealed into blocks at once
            with self.subTest(args=args):
                self.check_v2(args)

    def check_v2(self, args):
        with gzip.open(os.path.join(DATA, "store-v2.json.gz"), "rt") as f:
            want = json.load(f)
        d = Pacerd(args, db=self.load_v2())
        try:
            for path, answer in sorted(want["answers"].items()):
                with self.subTest(path=path):
                    self.assertEqual(strip(d.query(path)), strip(answer))
            db = sqlite3.connect(d.db)
            self.assertEqual(db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0], "3")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_schema")}
            for gone in ("page_loads_keys", "trace_keys", "span_attr_keys", "rollup_marks"):
                self.assertNotIn(gone, tables)
            # plain spans, logs and points moved into the ranges of their days
            for t in ("spans", "logs", "metric_points"):
                self.assertEqual(db.execute("SELECT COUNT(*) FROM %s WHERE rowid < 1 << 40" % t).fetchone()[0], 0)
                self.assertEqual(db.execute("SELECT COUNT(*) FROM %s" % t).fetchone()[0], want["counts"][t])
            db.close()
            # and it takes more, and answers for both
            d.ingest("/v1/traces", traces([page_span("ShopHomeWindow", T0 + 3 * DAY + 5, 777.0)], version="1.0"))
            pages = {p["page"]: p for p in d.query("/api/v1/pages?app=shop")["pages"]}
            before = {p["page"]: p for p in want["answers"]["/api/v1/pages?app=shop"]["pages"]}
            self.assertEqual(pages["ShopHomeWindow"]["count"], before["ShopHomeWindow"]["count"] + 1)
            # a restart keeps it so (the rows that waited for the rollups are rolled up now)
            d.restart()
            for path in ("/api/v1/pages?app=shop&version=1.1", "/api/v1/spans/search?app=shop&limit=1000",
                         "/api/v1/logs?app=shop&limit=1000"):
                self.assertEqual(strip(d.query(path)), strip(want["answers"][path]))
        finally:
            d.close()

    def load_v2(self):
        path = os.path.join(tempfile.mkdtemp(prefix="pacerd-v2-"), "old.db")
        self.addCleanup(shutil.rmtree, os.path.dirname(path), True)
        with gzip.open(os.path.join(DATA, "store-v2.sql.gz"), "rt") as f:
            db = sqlite3.connect(path)
            db.executescript(f.read())
            db.close()
        return path


def strip(answer):
    """An answer without its cursors (they name rowids, which the conversion
    changes)."""
    if isinstance(answer, dict):
        return {k: strip(v) for k, v in answer.items() if k != "next"}
    if isinstance(answer, list):
        return [strip(x) for x in answer]
    return answer


if __name__ == "__main__":
    unittest.main()
