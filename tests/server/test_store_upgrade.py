"""A file made by an earlier pacerd, opened by this one: a field the record
schema gave a store column since is added to its table (old rows hold NULL,
new rows the value), and keys tables written for other metric lists are
filled again, so that answers stay exact."""
import os
import sqlite3
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import Pacerd, attr, page_span, span, traces  # noqa: E402

T0 = 1_700_006_400 * 10**9  # a day boundary
DAY = 86400 * 10**9


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

    def test_keys_of_other_metric_lists_are_filled_again(self):
        d = Pacerd(["--rollup-lag", "0"])
        try:
            # a range that cuts a day is answered from the keys tables
            spans = [page_span("UpWindow", T0 + DAY // 2 + i, 100.0 + i) for i in range(20)]
            d.ingest("/v1/traces", traces(spans))
            query = "/api/v1/pages?app=shop&from=%d&to=%d" % ((T0 + DAY // 4) // 10**9, (T0 + DAY) // 10**9)
            before = d.query(query)
            d.kill(15)
            db = sqlite3.connect(d.db)
            # keys written under another metric list: m0 no longer initial_draw_ms
            db.execute("UPDATE page_loads_keys SET m0 = 999999, m3 = NULL")
            db.execute("UPDATE meta SET value = 'page:other' WHERE key = 'kinds'")
            db.commit()
            db.close()
            d.start()
            self.assertEqual(d.query(query), before)
            self.assertEqual(before["pages"][0]["count"], 20)
            self.assertEqual(before["pages"][0]["metrics"]["total_ms"]["max"], 119.0)
        finally:
            d.close()

    def test_keys_tables_of_fewer_metric_columns_are_made_again(self):
        """A file whose keys tables have fewer metric columns than this
        pacerd's (a kind gained a metric since) gets them made again."""
        d = Pacerd(["--rollup-lag", "0"])
        try:
            spans = [page_span("UpWindow", T0 + DAY // 2 + i, 100.0 + i) for i in range(20)]
            d.ingest("/v1/traces", traces(spans))
            query = "/api/v1/pages?app=shop&from=%d&to=%d" % ((T0 + DAY // 4) // 10**9, (T0 + DAY) // 10**9)
            before = d.query(query)
            d.kill(15)
            db = sqlite3.connect(d.db)
            cols = [r[1] for r in db.execute("PRAGMA table_info(page_loads_keys)")]
            last = max(c for c in cols if c.startswith("m") and c[1:].isdigit())
            db.execute("ALTER TABLE page_loads_keys DROP COLUMN %s" % last)
            db.execute("UPDATE meta SET value = 'page:fewer' WHERE key = 'kinds'")
            db.commit()
            db.close()
            d.start()
            d.ingest("/v1/traces", traces([page_span("UpWindow", T0 + DAY // 2 + 100, 500.0)]))
            after = d.query(query)
            self.assertEqual(after["pages"][0]["count"], 21)
            self.assertEqual(after["pages"][0]["metrics"]["total_ms"]["max"], 500.0)
            self.assertEqual(before["pages"][0]["count"], 20)
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main()
