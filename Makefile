# The README's entry points. Every target installs what is missing first.
#   make demo   build, then train the default model on a local cluster
#   make test   build, then run the whole test suite with ctest
#   make bench  build (release), run every benchmark, write build/bench/results.json
#               (training across hosts against link delay and bandwidth included)
#   make chaos  the long fault-injection suite (short versions run in make test)
#   make format apply .clang-format to every C++ file (make test checks it)
#   make fuzz   every libFuzzer harness (fuzz/) for FUZZ_SECONDS each (600)
#   make sanitize  ASan+UBSan build: unit, fuzz-corpus and multi-process tests
#   make tsan   TSan build: unit and multi-process tests
BUILD_DIR ?= build
JOBS      ?= $(shell nproc)
CTEST_ARGS ?=
# The clang builds (docs/security.md, "Fuzzing and sanitizers"): ASan+UBSan
# with the fuzz harnesses, and TSan. Same sources, build directories of
# their own, the same ccache.
SAN_DIR   ?= $(BUILD_DIR)/clang-sanitize
TSAN_DIR  ?= $(BUILD_DIR)/clang-tsan
# Not run under TSan: all_thread_stacks() interrupts every thread with a
# signal, and TSan delays signals to a thread blocked outside the calls it
# intercepts (here in abseil's futex wait) past the 500 ms the test allows
# (the watchdog's stack dump likewise); and a bound on a task's resident
# memory (256 MiB over its start) that TSan's own allocator and shadow
# memory exceed.
TSAN_EXCLUDE ?= ^(ThreadStacksTest\.NamesEveryThreadAndWhereItWaits|TaskStatesTest\.AStalledWatchdogWritesEveryThreadStackToTheRunDirectory|HostileInputMemoryTest\.ConcurrentOversizedMessagesStayWithinTheBufferBound)$$
FUZZ_SECONDS ?= 600
# make test: each harness for this long, and the multi-process suites
# (ctest -R) that run under ASan+UBSan there; make sanitize runs them all.
TEST_FUZZ_SECONDS ?= 20
TEST_SANITIZE_INTEGRATION ?= ^(RemoteExecutorTest|VariableServiceTest|CoordinatorIntegrationTest|StrategyIntegrationTest|CheckpointIntegrationTest)\.
CLANG_CMAKE = CC=clang-14 CXX=clang++-14 cmake -S . -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DPSFLOW_PYTHON=OFF
# Every report fails its test; stacks symbolized (llvm-symbolizer-14).
export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0
export LSAN_OPTIONS ?= suppressions=$(CURDIR)/fuzz/lsan.supp
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
# TSan: what Debian's libraries (not built with TSan) do through intercepted
# calls is not checked, their locks still order (ignore_noninstrumented_modules;
# docs/security.md, "TSan and the multi-process tests").
export TSAN_OPTIONS ?= halt_on_error=0:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$(CURDIR)/fuzz/tsan.supp
export ASAN_SYMBOLIZER_PATH ?= /usr/lib/llvm-14/bin/llvm-symbolizer
export TSAN_SYMBOLIZER_PATH ?= /usr/lib/llvm-14/bin/llvm-symbolizer

export CCACHE_DIR ?= $(HOME)/.cache/psflow-ccache
# Relative paths in the cache key: clones and build dirs at other paths share hits.
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all deps configure build test demo demo-dlrm bench chaos format clean \
  configure-sanitize build-sanitize sanitize fuzz configure-tsan tsan

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

# The clang build compiles every translation unit with -Wthread-safety as
# an error: it is also the thread-safety check. Under ASan+UBSan: every
# harness for TEST_FUZZ_SECONDS, the unit tests, and the multi-process
# suites TEST_SANITIZE_INTEGRATION names (the rest in make sanitize).
# The sanitized multi-process tests may run twice: LeakSanitizer sometimes
# reports OpenSSL objects of a TLS connection that gRPC's still-running
# threads hold when the process exits (stacks ending in Debian's
# unsymbolized libcrypto, no psflow frame; 1 of 41 tests in 1 of 2 clean
# runs). A real leak or failure fails both runs and stays red.
test: build build-sanitize
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600 -LE chaos $(CTEST_ARGS)
	cd $(SAN_DIR) && PSFLOW_FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) ctest --output-on-failure \
	  -j $(JOBS) --timeout 900 -L 'unit|fuzz' $(CTEST_ARGS)
	cd $(SAN_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 900 -L integration \
	  -LE 'chaos|multihost' -R '$(TEST_SANITIZE_INTEGRATION)' --repeat until-pass:2 $(CTEST_ARGS)

configure-sanitize: deps
	@if [ ! -f $(SAN_DIR)/build.ninja ]; then \
	  $(CLANG_CMAKE) -B $(SAN_DIR) -DPSFLOW_SANITIZE=address,undefined -DPSFLOW_FUZZ=ON ; \
	fi

build-sanitize: configure-sanitize
	cmake --build $(SAN_DIR) -j $(JOBS)

# Every test but the long fault suites and the multi-host ones (network
# namespaces, which need root and time) under ASan+UBSan, the harnesses
# over their corpora for TEST_FUZZ_SECONDS.
sanitize: build-sanitize
	cd $(SAN_DIR) && PSFLOW_FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) ctest --output-on-failure \
	  -j $(JOBS) --timeout 1800 -L 'unit|fuzz|integration' -LE 'chaos|multihost' $(CTEST_ARGS)

fuzz: build-sanitize
	cd $(SAN_DIR) && PSFLOW_FUZZ_SECONDS=$(FUZZ_SECONDS) ctest --output-on-failure \
	  -j $(JOBS) -L fuzz $(CTEST_ARGS)

configure-tsan: deps
	@if [ ! -f $(TSAN_DIR)/build.ninja ]; then \
	  $(CLANG_CMAKE) -B $(TSAN_DIR) -DPSFLOW_SANITIZE=thread -DPSFLOW_BUILD_BENCHMARKS=OFF ; \
	fi

# Every process's reports (the tasks the multi-process tests start too) go
# to files under $(TSAN_DIR)/tsan-reports; any report fails the run.
tsan: configure-tsan
	cmake --build $(TSAN_DIR) -j $(JOBS)
	scripts/run-tsan-tests.sh $(TSAN_DIR) -j $(JOBS) --timeout 1800 \
	  -L 'unit|integration' -LE 'chaos|multihost' -E '$(TSAN_EXCLUDE)' $(CTEST_ARGS)

chaos: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j 1 --timeout 3600 -L chaos $(CTEST_ARGS)

demo: build
	$(BUILD_DIR)/psflow train

demo-dlrm: build
	$(BUILD_DIR)/psflow train --model dlrm --data-dir generated:200000 --epochs 3

bench: build
	python3 bench/run_benchmarks.py --build-dir $(BUILD_DIR)
	python3 bench/multihost_bench.py --build-dir $(BUILD_DIR)
	python3 bench/multihost_bandwidth.py --build-dir $(BUILD_DIR)
	python3 bench/overlap_bench.py --build-dir $(BUILD_DIR)
	python3 bench/gemm_backend.py --build-dir $(BUILD_DIR)
	python3 bench/train_vs_torch.py --build-dir $(BUILD_DIR)
	python3 bench/python_torch_vs_rpc.py --build-dir $(BUILD_DIR)
	python3 bench/embedding_fill.py --build-dir $(BUILD_DIR)
	python3 bench/dlrm_vs_torch.py --build-dir $(BUILD_DIR)

format: deps
	bash scripts/check-format.sh --fix

clean:
	rm -rf $(BUILD_DIR)
