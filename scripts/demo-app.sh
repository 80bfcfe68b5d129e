#!/usr/bin/env bash
# make demo: starts the demo API
# server with known delays, runs the unmodified GTK4 shop app under
# `pacer run` — on a virtual X display (Xvfb) when there is no display —
# lets it close itself, and prints `pacer report` of its records plus the
# requests it made. Every number can be checked against the delays below and
# the app's splash (400 ms) and lazy-page (1500 ms) delays.
#
#   scripts/demo-app.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
pacer="$build/src/cli/pacer"
for f in "$pacer" "$build/examples/shop-app" "$build/examples/shop-api-server" "$build/src/agent/libpacer-agent.so"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "demo-app: $f is missing; build first (make build)" >&2; exit 2; }
done

work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

delays=(--delay /api/config=200 --delay /api/list=300 --delay /api/test1=300)
"$build/examples/shop-api-server" --port 0 --quiet "${delays[@]}" >"$work/server.out" &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/server.out" 2>/dev/null && break; sleep 0.05; done
base=$(sed -n 's/.*listening on //p' "$work/server.out")
[ -n "$base" ] || { echo "demo-app: the API server did not start" >&2; exit 1; }
echo "== API server at $base: ${delays[*]}"

run=()
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  command -v xvfb-run >/dev/null || { echo "demo-app: no display and no xvfb-run (apt install xvfb xauth)" >&2; exit 2; }
  run+=(xvfb-run -a)
  echo "== no display: running on Xvfb"
fi
if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ] && command -v dbus-run-session >/dev/null; then
  run+=(dbus-run-session --)
fi
# No session proxy configuration to look up over D-Bus: the demo talks to
# loopback, and the lookup's first-call latency would blur the delays above.
export GIO_USE_PROXY_RESOLVER=dummy

records="$work/records.jsonl"
echo "== pacer run --config examples/shop.xml --out $records -- shop-app --auto-exit"
"${run[@]}" "$pacer" run --config examples/shop.xml --out "$records" --raw-events "$work/events.jsonl" \
  --app shop --app-version demo -- "$build/examples/shop-app" --api "$base" --auto-exit 2>"$work/app.err" ||
  { echo "demo-app: the app failed:" >&2; cat "$work/app.err" >&2; exit 1; }
echo "   records: $records"
echo "   events:  $work/events.jsonl (pacer replay can read them)"
echo
echo "== pacer report $records"
"$pacer" report "$records"
echo
echo "== requests (net records)"
python3 - "$records" <<'PY'
import json, sys
print("%-4s %-5s %-28s %6s %9s %9s %9s %9s" % ("lib", "meth", "path", "status", "dns_ms", "conn_ms", "1st_byte", "total_ms"))
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "net":
        continue
    path = "/" + r["url"].split("/", 3)[3] if r["url"].count("/") >= 3 else r["url"]
    f = lambda v: "-" if v is None else "%.3f" % v
    print("%-4s %-5s %-28s %6d %9s %9s %9s %9s" % (r["lib"], r["method"], path, r["status"], f(r["dns_ms"]),
          f(r["connect_ms"]), f(r["first_byte_ms"]), f(r["total_ms"])))
PY
