#!/usr/bin/env python3
"""Writes shop-events.jsonl: the event stream of one session of the demo shop
app (a splash window, the home window loading /api/config and /api/list, and
a stack of merchant pages, some shown only after a delay), with fixed
pseudo-random timings. `make demo` replays it through the model.

Usage: make-shop-events.py > shop-events.jsonl
"""
import json
import random

rng = random.Random(7)
t0 = 1_000_000_000  # monotonic ns at launch
events = []


def at(ms, name, **fields):
    d = {"t": t0 + int(ms * 1_000_000), "ev": name}
    d.update(fields)
    events.append(d)


def api(ms, url, req, dur, status=200):
    at(ms, "api_start", url=url, req=req)
    at(ms + dur, "api_end", url=url, req=req, status=status)
    return ms + dur


at(0, "launch")
at(4.2, "agent_init")
at(11.8, "main")
at(63.5, "app_created")
at(64.0, "page_create", page=1, **{"class": "ShopSplashWindow"}, kind="window")
at(66.1, "page_view_created", page=1)
at(118.4, "page_draw", page=1)
at(820.0, "page_create", page=2, **{"class": "ShopHomeWindow"}, kind="window")
at(841.7, "page_view_created", page=2)
end_cfg = api(845.0, "http://127.0.0.1:8080/api/config", 1, 120.3)
at(846.0, "page_destroy", page=1)
at(872.9, "page_draw", page=2)
end_list = api(end_cfg + 1.0, "http://127.0.0.1:8080/api/list?page=1", 2, 300.6)
at(end_list + 18.2, "page_draw", page=2)

req = 10
t = end_list + 400
for i in range(24):
    pid = 100 + i
    lazy = i % 4 == 3
    at(t, "page_create", page=pid, **{"class": "ShopMerchantPage"}, kind="page")
    at(t + rng.uniform(2, 6), "page_view_created", page=pid)
    shown = t + (rng.uniform(800, 1500) if lazy else rng.uniform(6, 9))
    at(shown, "page_select", page=pid)
    at(shown, "page_scroll", page=pid)
    first = shown + rng.uniform(14, 30)
    req += 1
    start = shown + 1.0
    status = 200 if i != 9 else 503
    done = api(start, "http://127.0.0.1:8080/api/test1?merchant=%d" % i, req,
               rng.uniform(180, 260), status)
    at(first, "page_draw", page=pid)
    at(done + rng.uniform(8, 20), "page_draw", page=pid)
    t = done + rng.uniform(300, 900)
    at(t - 50, "page_destroy", page=pid)

events.sort(key=lambda e: e["t"])
for e in events:
    print(json.dumps(e, separators=(",", ":")))
