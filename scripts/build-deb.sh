#!/usr/bin/env bash
# Builds pacer's Debian packages (debian/) — what `make deb` runs:
#
#   scripts/build-deb.sh [--nocheck] [--no-lintian] [--out DIR] [--work DIR]
#
#  1. copies the tree's files (those git tracks and those it does not
#     ignore: no build directory, no node_modules) into WORK/pacer-VERSION;
#  2. bundles the dashboard there, into web/bundle, with node and the npm
#     packages of web/node_modules (pinned by web/package-lock.json and
#     installed by scripts/install-deps.sh): the package build itself runs
#     neither node nor npm and reaches no network (debian/README.source);
#  3. builds the binary packages with dpkg-buildpackage, unsigned, on every
#     CPU; the build runs the unit suite unless --nocheck;
#  4. runs lintian on them: an error or a warning fails (a warning that
#     stays is overridden in debian/*.lintian-overrides with its reason);
#  5. copies the .deb files, the .changes and the .buildinfo to OUT
#     (default dist/) and lists them.
#
# WORK defaults to build-deb/. Needs the packages of scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

out=dist
work=build-deb
check=1
lintian=1
while [ $# -gt 0 ]; do
  case "$1" in
    --nocheck) check=0 ;;
    --no-lintian) lintian=0 ;;
    --out) out=$2; shift ;;
    --work) work=$2; shift ;;
    -h|--help) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "build-deb: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

die() { echo "build-deb: $*" >&2; exit 1; }

for tool in dpkg-buildpackage dh lintian fakeroot node git; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/install-deps.sh"
done
[ -f web/node_modules/esbuild/package.json ] ||
  die "web/node_modules is missing (the dashboard's npm packages): run scripts/install-deps.sh"

version=$(dpkg-parsechangelog -S Version)
meson_version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" meson.build)
[ "$version" = "$meson_version" ] ||
  die "debian/changelog is at $version but meson.build at $meson_version: add a changelog entry (dch -v $meson_version)"

case "$work" in /*) ;; *) work=$root/$work ;; esac
case "$out" in /*) ;; *) out=$root/$out ;; esac
src=$work/pacer-$version
rm -rf "$work"
mkdir -p "$src" "$out"

echo "build-deb: staging the tree in $src"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar -c --null -T - -f - | tar -x -C "$src" -f -

echo "build-deb: bundling the dashboard into web/bundle"
node web/build.mjs "$src/web/bundle" >/dev/null

echo "build-deb: dpkg-buildpackage$([ $check = 1 ] || echo ' (nocheck)')"
opts="parallel=$(nproc)"
profiles=()
if [ $check = 0 ]; then
  opts="$opts nocheck"
  profiles=(--build-profiles=nocheck)
fi
log=$work/build.log
if ! (cd "$src" && DEB_BUILD_OPTIONS="$opts" dpkg-buildpackage -b -us -uc "${profiles[@]}") >"$log" 2>&1; then
  tail -n 60 "$log"
  die "dpkg-buildpackage failed (the whole log: $log)"
fi
if [ $check = 1 ]; then
  grep -E '^(Ok|Fail|Skipped|Timeout):' "$log" | sed 's/^/build-deb: unit suite: /' || true
fi

changes=$(ls "$work"/pacer_"$version"_*.changes)
if [ $lintian = 1 ]; then
  echo "build-deb: lintian"
  lint=$work/lintian.log
  # Its tags are counted from what it prints (with --show-overrides, an
  # overridden tag makes its exit status 2).
  status=0
  lintian --display-info --show-overrides "$changes" >"$lint.all" 2>&1 || status=$?
  grep -v '^running with root privileges' "$lint.all" >"$lint" || true
  if [ -s "$lint" ]; then sed 's/^/  /' "$lint"; fi
  case $status in 0|2) ;; *) die "lintian failed (exit status $status)" ;; esac
  errors=$(grep -c '^E: ' "$lint" || true)
  warnings=$(grep -c '^W: ' "$lint" || true)
  infos=$(grep -c '^I: ' "$lint" || true)
  overridden=$(grep -c '^O: ' "$lint" || true)
  echo "build-deb: lintian: $errors errors, $warnings warnings, $infos informational, $overridden overridden"
  [ "$errors" = 0 ] && [ "$warnings" = 0 ] || die "lintian found errors or warnings (above)"
fi

files=$(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]* [0-9]* [^ ]* [^ ]* //p' "$changes")
for f in $files "$(basename "$changes")"; do
  cp "$work/$f" "$out/"
done
echo "build-deb: in $out:"
for f in $files "$(basename "$changes")"; do echo "  $f"; done
