# pacer — entry points. `make test` is what CI runs.
BUILD ?= build

.PHONY: all deps build test demo demo-replay demo-server bench install deb clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) >/dev/null
	@ninja -C $(BUILD)

test: deps
	@scripts/run-tests.sh

# The demo shop app, unmodified, under `pacer run` against the demo API
# server (on Xvfb when there is no display), then `pacer report`.
demo: build
	@scripts/demo-app.sh $(BUILD)

# The same report from a recorded session, without GTK or a display.
demo-replay: build
	@scripts/demo.sh $(BUILD)

# The demo app under `pacer run --server` against pacerd (three runs pressing
# its slow button), then the issues pacerd found: `pacer issues`.
demo-server: build
	@scripts/demo-server.sh $(BUILD)

bench: deps
	@scripts/bench.sh

install: build
	meson install -C $(BUILD)

# The Debian packages (debian/README.source) into dist/: built from a copy
# of the tree, their unit tests run, lintian clean.
deb: deps
	@scripts/build-deb.sh

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-bench build-deb dist
