# The README's entry points. Every target installs what is missing first.
#   make demo   build, then train the default model on a local cluster
#   make test   build, then run the whole test suite with ctest
#   make bench  build (release), run every benchmark, write build/bench/results.json
#               (training across hosts against link delay and bandwidth included)
#   make chaos  the long fault-injection suite (short versions run in make test)
#   make format apply .clang-format to every C++ file (make test checks it)
BUILD_DIR ?= build
JOBS      ?= $(shell nproc)
CTEST_ARGS ?=

export CCACHE_DIR ?= $(HOME)/.cache/psflow-ccache
# Relative paths in the cache key: clones and build dirs at other paths share hits.
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all deps configure build test demo bench chaos format clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache ; \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600 -LE chaos $(CTEST_ARGS)

chaos: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j 1 --timeout 3600 -L chaos $(CTEST_ARGS)

demo: build
	$(BUILD_DIR)/psflow train

bench: build
	python3 bench/run_benchmarks.py --build-dir $(BUILD_DIR)
	python3 bench/multihost_bench.py --build-dir $(BUILD_DIR)

format: deps
	bash scripts/check-format.sh --fix

clean:
	rm -rf $(BUILD_DIR)
