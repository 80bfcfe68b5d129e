#!/usr/bin/env bash
# make demo: starts the demo API
# server with known delays, runs the unmodified GTK4 shop app under
# `pacer run` — on a virtual X display (Xvfb) when there is no display —
# lets it close itself, and prints `pacer report` of its records plus the
# requests it made. Every number can be checked against the delays below and
# the app's splash (400 ms) and lazy-page (1500 ms) delays; once all is
# loaded the app stalls its main loop for 900 ms (--jank-ms) in
# shop_compute_recommendations().
#
# The run also uploads to a pacerd started for the demo (a fresh database
# and a throwaway admin token, printed once), next to a generated week of
# history (versions 1.0 and 1.1, tests/web/dashdata.py), and the demo ends
# by printing the dashboard's URL. In a terminal pacerd stays up until
# Ctrl+C; otherwise (CI, a pipe) it stops and the demo exits.
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
pacerd_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  [ -n "$pacerd_pid" ] && kill "$pacerd_pid" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT

# pacerd for the demo: its own database, an app key and an admin token made
# now (files in $work, mode 600), the dashboard from the build tree
umask 077
head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$work/admin-token"
echo "shop $(head -c 18 /dev/urandom | base64 | tr '+/' '-_')" >"$work/keys"
cut -d' ' -f2 "$work/keys" >"$work/shop.key"
umask 022
"$build/src/server/pacerd" --listen 127.0.0.1:0 --db "$work/pacer.db" --admin-token-file "$work/admin-token" \
  --keys-file "$work/keys" --web-root "$build/web" >"$work/pacerd.out" 2>"$work/pacerd.err" &
pacerd_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/pacerd.out" 2>/dev/null && break; sleep 0.05; done
pacerd_base=$(sed -n 's/.*listening on //p' "$work/pacerd.out")
[ -n "$pacerd_base" ] || { echo "demo-app: pacerd did not start:" >&2; cat "$work/pacerd.err" >&2; exit 1; }
echo "== pacerd at $pacerd_base (database $work/pacer.db)"

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
echo "== pacer run --config examples/shop.xml --out $records --server $pacerd_base -- shop-app --auto-exit --jank-ms 900"
"${run[@]}" "$pacer" run --config examples/shop.xml --out "$records" --raw-events "$work/events.jsonl" \
  --server "$pacerd_base" --key-file "$work/shop.key" --spool "$work/spool.db" \
  --app shop --app-version demo -- "$build/examples/shop-app" --api "$base" --auto-exit --jank-ms 900 2>"$work/app.err" ||
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

echo
echo "== the dashboard"
if [ ! -f "$build/web/index.html" ]; then
  echo "   not built: it needs node and web/node_modules (scripts/install-deps.sh), then make build"
  exit 0
fi
curl -s -X PUT --data-binary @examples/shop.xml -H "Authorization: Bearer $(cat "$work/admin-token")" \
  "$pacerd_base/v1/config/shop" >/dev/null
python3 tests/web/dashdata.py "$pacerd_base" "$work/shop.key" shop | sed 's/^/   /'
now=$(date +%s)
echo
echo "   $pacerd_base/#/overview?app=shop&from=$((now - 8 * 86400))&to=$((now / 60 * 60 + 3600))"
echo "   the demo run: $pacerd_base/#/jank?app=shop&version=demo&from=$((now - 3600))&to=$((now / 60 * 60 + 3600))"
echo "   admin token for the login form (made for this demo only): $(cat "$work/admin-token")"
if [ -t 0 ] && [ -t 1 ] && [ -z "${CI:-}" ]; then
  echo "   pacerd runs until Ctrl+C"
  trap 'echo; echo "== stopping pacerd"; cleanup; rm -rf "$work"; exit 0' INT TERM
  wait "$pacerd_pid"
else
  echo "   (not a terminal: pacerd stops now; run make demo in a terminal to keep it up)"
fi
