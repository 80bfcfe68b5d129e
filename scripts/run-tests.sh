#!/usr/bin/env bash
# Builds and runs every test: the normal build (all suites), the sanitizer
# build (ASan + UBSan, unit suite) and the fuzzers (bounded time each).
# Prints one summary line at the end: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-30}
passed=0
failed=0
skipped=0

count_meson() { # build dir → adds its testlog to the totals
  local log="$1/meson-logs/testlog.json"
  [ -f "$log" ] || { failed=$((failed + 1)); return; }
  read -r p f s < <(python3 - "$log" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
)
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

stage() { echo; echo "== $*"; }

setup() { # dir, meson args...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
  fi
  ninja -C "$dir" >"$dir.build.log" 2>&1 || { cat "$dir.build.log"; return 1; }
}

stage "build and test (build/)"
if setup build; then
  meson test -C build --print-errorlogs --num-processes 2
  count_meson build
else
  echo "build failed"; failed=$((failed + 1))
fi

stage "sanitizer build: ASan + UBSan, unit tests (build-asan/)"
if setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug; then
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --suite unit --print-errorlogs --num-processes 2
  count_meson build-asan
else
  echo "sanitizer build failed"; failed=$((failed + 1))
fi

stage "fuzzers, ${FUZZ_SECONDS}s each (build-fuzz/)"
if CC=clang setup build-fuzz -Dfuzz=true -Dtests=false -Dbuildtype=debugoptimized -Db_lundef=false; then
  for f in build-fuzz/tests/fuzz/fuzz-*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus_seed="tests/fuzz/corpus/${name#fuzz-}"
    work="build-fuzz/corpus-${name#fuzz-}"
    mkdir -p "$work"
    if "$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
         -print_final_stats=0 "$work" "$corpus_seed" >"build-fuzz/$name.log" 2>&1; then
      echo "ok   $name (${FUZZ_SECONDS}s)"
      passed=$((passed + 1))
    else
      echo "FAIL $name"; tail -n 40 "build-fuzz/$name.log"
      failed=$((failed + 1))
    fi
  done
else
  echo "fuzz build failed"; failed=$((failed + 1))
fi

echo
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
