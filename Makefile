# pacer — entry points. `make test` is what CI runs.
BUILD ?= build

.PHONY: all deps build test demo bench install clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) >/dev/null
	@ninja -C $(BUILD)

test: deps
	@scripts/run-tests.sh

demo: build
	@scripts/demo.sh $(BUILD)

bench: deps
	@scripts/bench.sh

install: build
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-bench
