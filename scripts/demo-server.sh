#!/usr/bin/env bash
# make demo-server: the demo end to end with pacerd. Starts the demo API
# server and pacerd on loopback (a fresh database in a temporary directory),
# runs the unmodified demo shop app three times under `pacer run --server`
# — on a virtual X display (Xvfb) when there is no display — each run
# pressing the app's "Recommendations" button, whose handler blocks the main
# loop 900 ms inside shop_compute_recommendations() (--jank-ms 900), and
# prints the issues pacerd found (`pacer issues`): the jank, with its
# fingerprint, stack and severity.
#
#   scripts/demo-server.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
pacer="$build/src/cli/pacer"
pacerd="$build/src/server/pacerd"
for f in "$pacer" "$pacerd" "$build/examples/shop-app" "$build/examples/shop-api-server" \
         "$build/src/agent/libpacer-agent.so"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "demo-server: $f is missing; build first (make build)" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

wait_line() { # file pattern
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

delays=(--delay /api/config=200 --delay /api/list=300 --delay /api/test1=300)
"$build/examples/shop-api-server" --port 0 --quiet "${delays[@]}" >"$work/api.out" &
pids+=($!)
wait_line "$work/api.out" "listening on" || { echo "demo-server: the API server did not start" >&2; exit 1; }
api=$(sed -n 's/.*listening on //p' "$work/api.out")

head -c 24 /dev/urandom | base64 >"$work/admin-token"
key=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
echo "shop $key" >"$work/keys"
echo "$key" >"$work/shop.key"
printf 'interval-ms = 500\n' >"$work/analysis.conf"
"$pacerd" --listen 127.0.0.1:0 --db "$work/pacer.db" --admin-token-file "$work/admin-token" \
  --keys-file "$work/keys" --analysis-config "$work/analysis.conf" >"$work/pacerd.out" 2>"$work/pacerd.err" &
pids+=($!)
wait_line "$work/pacerd.out" "listening on" || { echo "demo-server: pacerd did not start:" >&2; cat "$work/pacerd.err" >&2; exit 1; }
server=$(sed -n 's/.*listening on //p' "$work/pacerd.out")
echo "== API server at $api, pacerd at $server"

run=()
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  command -v xvfb-run >/dev/null || { echo "demo-server: no display and no xvfb-run (apt install xvfb xauth)" >&2; exit 2; }
  run+=(xvfb-run -a)
  echo "== no display: running on Xvfb"
fi
if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ] && command -v dbus-run-session >/dev/null; then
  run+=(dbus-run-session --)
fi
export GIO_USE_PROXY_RESOLVER=dummy

for i in 1 2 3; do
  echo "== run $i: pacer run --server $server -- shop-app --jank-ms 900 --auto-exit"
  "${run[@]}" "$pacer" run --config examples/shop.xml --app shop --app-version demo --server "$server" \
    --key-file "$work/shop.key" --spool "$work/spool.db" --out "$work/records-$i.jsonl" -- \
    "$build/examples/shop-app" --api "$api" --jank-ms 900 --auto-exit 2>"$work/app-$i.err" ||
    { echo "demo-server: the app failed:" >&2; cat "$work/app-$i.err" >&2; exit 1; }
done

export PACER_ADMIN_TOKEN
PACER_ADMIN_TOKEN=$(cat "$work/admin-token")
echo "== waiting for pacerd's analysis"
for _ in $(seq 100); do  # until it has read the three runs' janks
  out=$("$pacer" issues --server "$server" --app shop)
  awk '$4 == "jank" && $5 >= 3 {found = 1} END {exit !found}' <<<"$out" && break
  sleep 0.2
done
echo
echo "== pacer issues --server $server --app shop"
echo "$out"
grep -q "jank" <<<"$out" || { echo "demo-server: no jank issue" >&2; exit 1; }
id=$(awk '$4 == "jank" {print $1; exit}' <<<"$out")
echo
echo "== pacer issues --server $server $id"
"$pacer" issues --server "$server" "$id"
