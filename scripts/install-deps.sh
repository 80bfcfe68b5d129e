#!/usr/bin/env bash
# Installs every Debian package pacer needs to build, test, benchmark and run
# its demo. Idempotent: packages already installed are left alone, and
# nothing is downloaded when nothing is missing.
set -euo pipefail

packages=(
  # build
  gcc make pkg-config meson ninja-build
  libexpat1-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev zlib1g-dev
  # pacerd's OTLP/gRPC front: HTTP/2 (libnghttp2), TLS (GnuTLS, as
  # libmicrohttpd's HTTPS); python3-h2 is the raw HTTP/2 client of its
  # hostile-client tests
  libnghttp2-dev libgnutls28-dev python3-h2
  # tests: unit tests, sanitizers, fuzzers, CLI tests; pacerd's TLS and
  # fault tests (a certificate, a tmpfs, an ext4 image on a loop device)
  libcmocka-dev clang libclang-rt-14-dev python3
  openssl e2fsprogs mount util-linux
  # agent, demo app and its tests; the headers of the display libraries the
  # agent hooks (it links none of them)
  libglib2.0-dev libgtk-4-dev libsoup-3.0-dev libmicrohttpd-dev
  libwayland-dev libx11-dev libxext-dev libxcb1-dev libxcb-shm0-dev libxcb-present-dev
  libxcb-randr0-dev libxrandr-dev
  libegl-dev libglx-dev libvulkan-dev libxdamage-dev
  xvfb xauth dbus-daemon gtk-4-examples xdotool
  # programs without a toolkit adapter: an SDL2 test program, a Wayland
  # client on libwayland alone (xdg-shell from wayland-protocols), and a Qt 5
  # program nobody here wrote, on X11 and on Wayland
  libsdl2-dev wayland-protocols libwayland-bin qterminal qtwayland5
  # a Wayland compositor the agent tests start headless (and kill)
  weston
  # the GTK 3 adapter: its demo (GTK 3, libsoup-2.4), Debian's GTK 3
  # examples, and PyGObject loading GTK 3 at run time
  libgtk-3-dev libsoup2.4-dev gtk-3-examples gir1.2-gtk-3.0
  # an app that loads GTK at run time (PyGObject)
  python3-gi gir1.2-gtk-4.0
  # the Qt demo apps (examples/qt) and their tests (tests/qt): Qt 6 and Qt 5
  # Widgets to build qt-shop against (C++), Qt 6's and Qt 5's Quick headers
  # (tests/qt/quick-phases-app); Qt 6's qml runtime with the QML modules
  # qml-shop imports (QtQuick, Controls' StackView, Window; Templates,
  # Layouts and WorkerScript, which Controls' styles import); Mesa's
  # software OpenGL that Qt Quick renders with; Qt's Wayland platform
  # plugins; PyQt6; kcalc, a Qt app nobody here wrote
  g++ qt6-base-dev qtbase5-dev qt6-declarative-dev qt6-declarative-dev-tools qtdeclarative5-dev
  qml-qt6 qml6-module-qtquick qml6-module-qtquick-controls qml6-module-qtquick-window
  qml6-module-qtquick-templates qml6-module-qtquick-layouts qml6-module-qtqml-workerscript
  libgl1-mesa-dri qt6-wayland qtwayland5 python3-pyqt6 kcalc
  # native leak tracking: the peer benchmarked against
  heaptrack
  # benchmarks that count instructions (callgrind: bench/upload)
  valgrind
  # function tracing: symbols, compression, the peer benchmarked against;
  # tcl generates SQLite's amalgamation for the trace benchmark's real
  # program (bench/trace/build-sqlite.sh)
  libelf-dev libdw-dev libzstd-dev uftrace tcl xz-utils
  # pacerd's ClickHouse store: its tests and benchmark start their own
  # servers (plain processes, loopback, free ports); haproxy fronts the
  # two-instance cluster of the cluster test and scripts/cluster-demo.sh
  clickhouse-server haproxy
  # the dashboard's tests: a real browser (driven by playwright-core, npm)
  chromium
  # the manual pages and their test (man renders them)
  man-db groff-base
  # the Debian packages (make deb, tests/packaging): debhelper, dpkg's
  # tools, lintian; systemd-analyze checks the unit
  debhelper dpkg-dev fakeroot lintian systemd adduser
)
# node + npm run the OpenTelemetry client test of pacerd. Debian's nodejs is
# installed only when no node is present (a node from elsewhere is kept).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

# npm packages, each folder pinned by its package-lock.json (npm registry),
# installed again when the lock is newer than what node_modules holds:
#   tests/server/otel  the OpenTelemetry JS SDK and exporters (otlp-http,
#                      otlp-proto and otlp-grpc, for traces, logs and
#                      metrics), protobufjs, the opentelemetry-proto .proto
#                      files pacer's tests use and googleapis'
#                      (google-proto-files: google.rpc.Status, RetryInfo),
#                      @grpc/grpc-js (the gRPC receiver of the uploader's
#                      tests)
#   web                the dashboard: uPlot, d3-flame-graph, esbuild (the
#                      build bundles them) and playwright-core (its tests)
npm_deps() {
  command -v npm >/dev/null || return 0
  local dir
  for dir in tests/server/otel web; do
    if [ ! -f $dir/node_modules/.package-lock.json ] || [ $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]; then
      echo "install-deps: npm ci --prefix $dir"
      npm ci --prefix $dir --no-audit --no-fund >/dev/null
    fi
  done
}
cd "$(dirname "$0")/.."

if [ ${#missing[@]} -eq 0 ]; then
  npm_deps
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_deps
echo "install-deps: done"
