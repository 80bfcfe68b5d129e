#!/usr/bin/env bash
# make demo: replays the bundled events of one session of the demo shop app
# through the model and prints the report.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=$(mktemp -d)/shop-records.jsonl
echo "== pacer replay --config tests/data/shop.xml examples/events/shop-events.jsonl"
"$build/src/cli/pacer" replay --app shop --app-version demo \
  --config tests/data/shop.xml --out "$out" examples/events/shop-events.jsonl
echo "   records written to $out"
echo
echo "== pacer report $out"
"$build/src/cli/pacer" report "$out"
