#!/usr/bin/env bash
# Builds the real program of the trace benchmark: SQLite's shell (sqlite3.c
# + shell.c, about 270,000 lines of C nobody here wrote) from Debian's
# source package `sqlite3`, twice: plain, and with -finstrument-functions
# (not linked with the runtime: `pacer trace record` preloads it, uftrace
# and the floor and counting hooks preload theirs).
#
# The source comes through apt-get with a private configuration (a deb-src
# line for this release, its own lists and cache under CACHE), so the
# machine's apt sources are left as they are. Generating the amalgamation
# needs tclsh (package tcl, in scripts/install-deps.sh).
#
# usage: bench/trace/build-sqlite.sh CACHE     prints the build directory
set -euo pipefail
cache=$(mkdir -p "$1" && cd "$1" && pwd)
out=$cache/bin
if [ -x "$out/sqlite3-traced" ] && [ -x "$out/sqlite3-plain" ]; then
  echo "$out"
  exit 0
fi
. /etc/os-release
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$cache/src" "$out"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb-src [signed-by=$keyring] http://deb.debian.org/debian ${VERSION_CODENAME:-bookworm} main" >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
echo "build-sqlite: fetching Debian's source package sqlite3" >&2
apt-get -qq "${apt_opts[@]}" update >&2
(cd "$cache/src" && apt-get -qq "${apt_opts[@]}" source --download-only sqlite3 >&2)
orig=$(ls "$cache"/src/sqlite3_*.orig.tar.* | grep -v -- -www | head -1)
rm -rf "$cache/tree" && mkdir "$cache/tree"
tar -xf "$orig" -C "$cache/tree"
tree=$(ls -d "$cache"/tree/*/ | head -1)
echo "build-sqlite: generating the amalgamation from $(basename "$orig")" >&2
(cd "$tree" && ./configure --disable-tcl >/dev/null && make sqlite3.c shell.c >/dev/null)
flags=(-O2 -g -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION)
echo "build-sqlite: compiling (plain and -finstrument-functions)" >&2
cc "${flags[@]}" -o "$out/sqlite3-plain" "$tree/sqlite3.c" "$tree/shell.c" -lm &
plain=$!
cc "${flags[@]}" -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include \
  -o "$out/sqlite3-traced" "$tree/sqlite3.c" "$tree/shell.c" -lm
wait $plain
basename "$orig" >"$out/source"
echo "$out"
