"""A generated data set for the dashboard: a week of an app's history in
two versions, as OTLP JSON the way pacer's SDK sends it (docs/otlp-mapping.md):
page loads with their API lists, cold and warm starts with their phases,
requests of every class, jank records with stacks, frame statistics.

Deterministic for a seed and an end time. `batches(...)` yields
(endpoint, body) pairs to POST with the app's key; `python3 dashdata.py
URL KEY_FILE` sends them (what `make demo` does for its history)."""
import json
import random
import sys
import urllib.request

DAY = 86400

PAGES = {  # page: (APIs, base total ms per version)
    "ShopHomeWindow": (["/api/config", "/api/list"], {"1.0": 480.0, "1.1": 560.0}),
    "ShopMerchantPage": (["/api/test1"], {"1.0": 320.0, "1.1": 300.0}),
    "ShopCartWindow": (["/api/cart"], {"1.0": 260.0, "1.1": 270.0}),
}
VERSIONS = ("1.0", "1.1")

# two stuck places: one of the app's own (a fingerprint of in-app frames),
# one inside a library, called from the app
JANK_STACKS = {
    "7d1f0c2b9a4e5d31": [
        ("g_str_hash", "libglib-2.0.so.0", None, None, False),
        ("shop_index_products", "shop-app", "../examples/shop-app.c", 318, True),
        ("shop_list_refresh", "shop-app", "../examples/shop-app.c", 352, True),
        ("g_main_context_dispatch", "libglib-2.0.so.0", None, None, False),
        ("g_application_run", "libgio-2.0.so.0", None, None, False),
        ("main", "shop-app", "../examples/shop-app.c", 640, True),
    ],
    "0b93d4c8e2f7a615": [
        ("read", "libc.so.6", None, None, False),
        ("g_file_load_contents", "libgio-2.0.so.0", None, None, False),
        ("shop_load_catalog", "shop-app", "../examples/shop-app.c", 402, True),
        ("g_main_context_dispatch", "libglib-2.0.so.0", None, None, False),
        ("g_application_run", "libgio-2.0.so.0", None, None, False),
        ("main", "shop-app", "../examples/shop-app.c", 640, True),
    ],
}


# the widget types that took longest in each generated window's slow
# frames (pacer run --frames=detail): type, phase, share of the slow frames' time
SLOW_WIDGETS = {
    "ShopHomeWindow": [("GtkListView", "layout", 0.40), ("GtkFlowBox", "layout", 0.15), ("GtkPicture", "paint", 0.10),
                       ("GtkLabel", "paint", 0.05)],
    "ShopCartWindow": [("GtkColumnView", "paint", 0.45), ("GtkLabel", "paint", 0.15), ("GtkImage", "paint", 0.10),
                       ("GtkBox", "layout", 0.05)],
}


# the slow frames' time per phase of each generated window
PHASE_SHARES = {
    "ShopHomeWindow": {"events": 0.02, "update": 0.08, "layout": 0.70, "paint": 0.17, "present": 0.03},
    "ShopCartWindow": {"events": 0.03, "update": 0.05, "layout": 0.12, "paint": 0.77, "present": 0.03},
}


def attr(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, list):
        v = {"arrayValue": {"values": [{"stringValue": s} for s in value]}}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def resource(app, version, session):
    return {"attributes": [attr("service.name", app), attr("service.version", version),
                           attr("pacer.session", session), attr("process.pid", 4242),
                           attr("telemetry.sdk.name", "pacer")]}


class Gen:
    def __init__(self, app="shop", end_s=None, days=7, seed=7, sessions_per_day=12):
        self.app, self.rng, self.days, self.spd = app, random.Random(seed), days, sessions_per_day
        self.end_s = end_s
        self.n = 0

    def ids(self):
        self.n += 1
        return "%032x" % (self.rng.getrandbits(120) | 1 << 124), "%016x" % (self.rng.getrandbits(60) | 1 << 62)

    def span(self, name, ts, dur_ms, attrs, events=(), kind=1):
        t, s = self.ids()
        return {"traceId": t, "spanId": s, "name": name, "kind": kind, "startTimeUnixNano": str(ts),
                "endTimeUnixNano": str(ts + int(dur_ms * 1e6)), "attributes": attrs, "events": list(events),
                "status": {"code": 0}}

    def session(self, version, ts):
        """One run of the app: its cold start, page loads, requests, maybe
        a jank, and frame records: (spans, logs, metrics)."""
        rng = self.rng
        sid = "%016x" % rng.getrandbits(64)
        slow = 1.15 if version == "1.1" else 1.0
        spans, logs, points = [], [], []
        launch = 10_000_000_000
        agent = launch + int(rng.uniform(3, 6) * 1e6)
        main = agent + int(rng.uniform(6, 10) * 1e6)
        created = main + int(rng.uniform(50, 80) * slow * 1e6)
        first = created + int(rng.uniform(60, 110) * 1e6)
        mainf = first + int(rng.uniform(380, 460) * slow * 1e6)
        full = mainf + int(rng.uniform(400, 600) * slow * 1e6)
        ms = lambda a: round((a - launch) / 1e6, 3)
        phases = {"launch": launch, "agent_init": agent, "main": main, "app_created": created,
                  "first_frame": first, "main_frame": mainf, "full_display": full}
        st = [attr("pacer.type", "startup"), attr("pacer.kind", "cold"), attr("pacer.cold_ms", ms(mainf)),
              attr("pacer.first_screen_ms", ms(first)), attr("pacer.app_cost_ms", ms(created)),
              attr("pacer.full_display_ms", ms(full)), attr("pacer.outlier", False),
              attr("pacer.main_page", "ShopHomeWindow")] + [attr("pacer.phases." + k, v) for k, v in phases.items()]
        spans.append(self.span("startup cold", ts, ms(mainf), st))
        if rng.random() < 0.3:
            w = round(rng.uniform(80, 140), 3)
            spans.append(self.span("startup warm", ts + 60 * 10**9, w, [
                attr("pacer.type", "startup"), attr("pacer.kind", "warm"), attr("pacer.warm_ms", w),
                attr("pacer.outlier", False), attr("pacer.page", "ShopHomeWindow")]))
        t = ts + int(ms(mainf) * 1e6)
        for page, (apis, base) in PAGES.items():
            for _ in range(rng.randint(1, 3)):
                total = round(base[version] * rng.lognormvariate(0, 0.25), 3)
                initial = round(total * rng.uniform(0.08, 0.2), 3)
                final = round(rng.uniform(3, 20), 3)
                api_load = round(max(1.0, total - initial - final), 3)
                status = "complete" if rng.random() > 0.04 else "abandoned"
                events = []
                share = api_load / len(apis)
                for a in apis:
                    events.append({"timeUnixNano": str(t), "name": "api", "attributes": [
                        attr("pacer.url", a), attr("pacer.ms", round(share * rng.uniform(0.9, 1.0), 3)),
                        attr("pacer.status", 200)]})
                attrs = [attr("pacer.type", "page"), attr("pacer.page", page), attr("pacer.status", status),
                         attr("pacer.kind", "window" if page != "ShopMerchantPage" else "page"),
                         attr("pacer.instance", rng.randint(1, 40)), attr("pacer.main", page == "ShopHomeWindow"),
                         attr("pacer.initial_draw_ms", initial)]
                if status == "complete":
                    attrs += [attr("pacer.api_load_ms", api_load), attr("pacer.final_draw_ms", final),
                              attr("pacer.total_ms", total)]
                spans.append(self.span("page " + page, t, total, attrs, events))
                t += int(total * 1e6) + 10**9
        reqs = [("GET", "http://api.shop.example/api/config", 200, 180, 2100, "application/json"),
                ("GET", "http://api.shop.example/api/list", 200, 290, 14800, "application/json"),
                ("GET", "http://api.shop.example/api/items/%d" % rng.randint(1, 999), 200, 90, 3300, "application/json"),
                ("POST", "http://api.shop.example/api/cart", 200, 140, 900, "application/json"),
                ("GET", "http://cdn.shop.example/img/banner.png", 200, 240, 310_000, "image/png")]
        if rng.random() < 0.25:
            reqs.append(("GET", "http://api.shop.example/api/items/%d" % rng.randint(1, 999), 500, 60, 200, "text/plain"))
        if rng.random() < 0.15:
            reqs.append(("GET", "http://api.shop.example/api/list", 200, 1500, 15000, "application/json"))
        for method, url, status, base_ms, size, ctype in reqs:
            total = round(base_ms * rng.lognormvariate(0, 0.2), 3)
            classes = (["error"] if status >= 400 else []) + (["large_image"] if ctype.startswith("image/") and size > 102400 else []) \
                + (["slow"] if total >= 1000 else [])
            a = [attr("pacer.type", "net"), attr("pacer.lib", "soup"), attr("pacer.method", method), attr("pacer.url", url),
                 attr("pacer.status", status), attr("pacer.total_ms", total), attr("pacer.first_byte_ms", round(total * 0.8, 3)),
                 attr("pacer.dns_ms", 0.0), attr("pacer.connect_ms", round(rng.uniform(0.2, 2), 3)), attr("pacer.tls_ms", 0.0),
                 attr("pacer.bytes_sent", 300), attr("pacer.bytes_received", size), attr("pacer.content_type", ctype),
                 attr("pacer.page", "ShopHomeWindow")]
            if classes:
                a.append(attr("pacer.classes", classes))
            spans.append(self.span(method + " " + url.split("example", 1)[1], t, total, a, kind=3))
            t += int(total * 1e6) + 200_000_000
        if rng.random() < 0.35:
            fp = "7d1f0c2b9a4e5d31" if rng.random() < 0.7 else "0b93d4c8e2f7a615"
            dur = round(rng.uniform(720, 2400) if rng.random() < 0.9 else rng.uniform(5100, 6400), 3)
            kind = "hang" if dur >= 5000 else "jank"
            stack = [{"address": "0x%x" % (0x55e1d4c00000 + i * 64), "module": m, "offset": "0x%x" % (i * 64),
                      "function": f, **({"file": fl, "line": ln} if fl else {}), "in_app": ia}
                     for i, (f, m, fl, ln, ia) in enumerate(JANK_STACKS[fp])]
            rec = {"type": "jank", "ts": t, "app": self.app, "version": version, "session": sid, "pid": 4242,
                   "kind": kind, "duration_ms": dur, "page": "ShopHomeWindow", "stack_status": "captured",
                   "stack_method": "perf", "fingerprint": fp, "fingerprint_version": 2, "stack": stack}
            if fp == "0b93d4c8e2f7a615":
                # sampled every 10 ms from 100 ms on: most of it in the read,
                # a third parsing (a function no stack shows)
                n = int((dur - 100) / 10)
                base = "main;g_application_run;g_main_context_dispatch;shop_load_catalog"
                rec.update({"profile_samples": n, "profile_interval_ms": 10.0,
                            "profile": "%s;g_file_load_contents;read %d\n%s;shop_parse_catalog %d"
                                       % (base, n - n // 3, base, n // 3)})
            logs.append({"timeUnixNano": str(t), "observedTimeUnixNano": str(t), "severityNumber": 13,
                         "severityText": "WARN", "body": {"stringValue": json.dumps(rec, separators=(",", ":"))},
                         "attributes": [attr("pacer.type", "jank"), attr("pacer.kind", kind), attr("pacer.duration_ms", dur),
                                        attr("pacer.page", "ShopHomeWindow"), attr("pacer.stack_status", "captured"),
                                        attr("pacer.fingerprint", fp), attr("pacer.fingerprint_version", 2)]})
        for window in ("ShopHomeWindow", "ShopCartWindow"):
            frames = rng.randint(200, 900)
            slow_n = int(frames * rng.uniform(0.02, 0.12) * slow)
            frozen = rng.randint(0, 2)
            lv = {"best": frames - slow_n, "normal": int(slow_n * 0.6), "middle": int(slow_n * 0.25), "high": 0, "frozen": frozen}
            lv["high"] = max(0, slow_n - lv["normal"] - lv["middle"] - frozen)
            vals = {"frames": frames, "slow": slow_n, "frozen": frozen, "dropped_frames": slow_n * 3 + frozen * 50}
            dims = [attr("pacer.window", window), attr("pacer.instance", 1), attr("pacer.final", True),
                    attr("pacer.refresh_ms", 16.667)]
            for k, v in list(vals.items()) + [("levels." + k, v) for k, v in lv.items()]:
                points.append((k, {"timeUnixNano": str(t), "asInt": str(v), "attributes": dims}))
            # where the slow frames' time went: the home window's in layout
            # (a list measured again and again), the cart's in paint
            share = PHASE_SHARES[window]
            slow_ms = slow_n * rng.uniform(30.0, 60.0)
            for ph, sh in share.items():
                points.append(("slow_phases_ms." + ph, {"timeUnixNano": str(t), "asDouble": round(slow_ms * sh, 3),
                                                        "attributes": dims}))
                points.append(("phases_ms." + ph, {"timeUnixNano": str(t), "asDouble": round(slow_ms * sh + frames * 2.0 * sh, 3),
                                                   "attributes": dims}))
            # and the widget types that took longest in them, a gauge per
            # number of each element (docs/otlp-mapping.md)
            for i, (wtype, ph, sh) in enumerate(SLOW_WIDGETS[window] if slow_n else []):
                el = dims + [attr("pacer.slow_widgets.index", i), attr("pacer.slow_widgets.type", wtype),
                             attr("pacer.slow_widgets.phase", ph)]
                points.append(("slow_widgets.ms", {"timeUnixNano": str(t), "asDouble": round(slow_ms * sh, 3),
                                                   "attributes": el}))
                points.append(("slow_widgets.calls", {"timeUnixNano": str(t), "asInt": str(slow_n * (i + 3)),
                                                      "attributes": el}))
        return sid, spans, logs, points

    def batches(self):
        """(endpoint, body) for every session of the data set."""
        start = self.end_s - self.days * DAY
        step = DAY // self.spd
        k = 0
        for s in range(start + step // 2, self.end_s - 600, step):
            version = VERSIONS[0] if s < start + self.days * DAY * 0.55 else VERSIONS[k % 2]
            k += 1
            ts = (s + self.rng.randint(-step // 3, step // 3)) * 10**9
            sid, spans, logs, points = self.session(version, ts)
            res = resource(self.app, version, sid)
            yield "/v1/traces", {"resourceSpans": [{"resource": res, "scopeSpans": [{"scope": {"name": "pacer"}, "spans": spans}]}]}
            if logs:
                yield "/v1/logs", {"resourceLogs": [{"resource": res, "scopeLogs": [{"scope": {"name": "pacer"}, "logRecords": logs}]}]}
            metrics = {}
            for k2, p in points:
                metrics.setdefault("pacer.frames." + k2, []).append(p)
            yield "/v1/metrics", {"resourceMetrics": [{"resource": res, "scopeMetrics": [{"scope": {"name": "pacer"}, "metrics": [
                {"name": n, "unit": "1", "gauge": {"dataPoints": ps}} for n, ps in metrics.items()]}]}]}


def send(base, key, gen):
    n = 0
    for endpoint, body in gen.batches():
        req = urllib.request.Request(base + endpoint, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.loads(r.read() or b"{}")
            if answer.get("partialSuccess", {}).get("errorMessage"):
                raise RuntimeError("%s: %s" % (endpoint, answer["partialSuccess"]))
        n += 1
    return n


if __name__ == "__main__":
    import time
    base, key_file = sys.argv[1], sys.argv[2]
    key = open(key_file).read().split()[0]
    app = sys.argv[3] if len(sys.argv) > 3 else "shop"
    n = send(base, key, Gen(app=app, end_s=int(time.time()) // 60 * 60))
    print("dashdata: %d requests of a generated week sent to %s" % (n, base))
