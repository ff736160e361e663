# Mneme: the two entry points are `make demo` and `make test`; both set up a fresh machine first.
BUILD_DIR ?= build
JOBS ?= 2
PREFIX ?= /usr/local

.PHONY: all deps deps-sanitizers node-deps configure build demo test bench screenshots soak fuzz fuzz-ci test-asan test-tsan install package check-packages clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@if [ ! -f $(BUILD_DIR)/CMakeCache.txt ]; then \
	  cmake -S . -B $(BUILD_DIR) -G "$(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')" -DCMAKE_BUILD_TYPE=Release \
	    $(shell command -v ccache >/dev/null 2>&1 && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache); \
	fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

comma := ,

# The demo builds what it runs (the libraries, the plugins, the command line and two examples), not
# the test suite.
demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme_demo
	$(BUILD_DIR)/bin/standalone_memory
	@echo
	$(BUILD_DIR)/bin/research_crew

# The Node.js packages the MCP and REST tests talk to (pinned by tests/mcp/package-lock.json); the
# only step of `make test` that uses the network, and only when the lock file changed.
node-deps:
	@bash scripts/install-node-deps.sh $(BUILD_DIR)

test: build node-deps
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --label-exclude slow

bench: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme-bench mneme-bench-gui
	$(BUILD_DIR)/bin/mneme-bench
	$(BUILD_DIR)/bin/mneme-bench-gui

# Mneme Studio's main views rendered under Xvfb (the platform's real style and fonts) into
# docs/screenshots/*.png, shown in the README.
screenshots: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme-studio-screenshots
	xvfb-run -a -s "-screen 0 1600x1000x24" $(BUILD_DIR)/bin/mneme-studio-screenshots docs/screenshots

# The soak and scale tests (CTest label `slow`, left out of `make test`): crashes of a writer at
# random moments, sweeps of storage faults, thousands of recalls across sources, large stores.
soak: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L slow

# Sanitizers and fuzzing, each in a build folder of its own. `make test-asan` builds everything with
# AddressSanitizer and UndefinedBehaviorSanitizer (and the lock-order assertions of memory/
# memory_locks_p.h) and runs the whole suite but the package tests (an install built with sanitizers
# is not one a user gets); `make test-tsan` runs the concurrency tests under ThreadSanitizer;
# `make fuzz` builds the fuzz targets with clang's libFuzzer and runs each for FUZZ_SECONDS on a copy
# of its seed corpus (fuzz/corpus/), `make fuzz-ci` for a few seconds each.
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
CCACHE := $(shell command -v ccache >/dev/null 2>&1 && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
SANITIZER_SUPPRESSIONS := $(CURDIR)/tests/sanitizers

deps-sanitizers: deps
	@bash scripts/install-deps.sh sanitizers

# Configured on every run, not only the first: a build folder made before an option was added gets it.
define sanitized_configure
	cmake -S . -B $(1) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
	  -DCMAKE_CXX_FLAGS="$(2) -fno-omit-frame-pointer" -DCMAKE_EXE_LINKER_FLAGS="$(3)" \
	  -DCMAKE_SHARED_LINKER_FLAGS="$(4)" -DCMAKE_MODULE_LINKER_FLAGS="$(4)" \
	  -DMNEME_PRECOMPILE_HEADERS=OFF -DMNEME_INSTALL=OFF -DMNEME_TEST_TIMEOUT_SCALE=4 -DMNEME_HNSWLIB_NO_SIMD=ON $(5) $(CCACHE) >/dev/null
endef

test-asan: deps
	$(call sanitized_configure,$(ASAN_DIR),-fsanitize=address$(comma)undefined -fno-sanitize-recover=undefined,-fsanitize=address$(comma)undefined,-fsanitize=address$(comma)undefined,)
	cmake --build $(ASAN_DIR) -j $(JOBS)
	@bash scripts/install-node-deps.sh $(ASAN_DIR)
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1 \
	  LSAN_OPTIONS=suppressions=$(SANITIZER_SUPPRESSIONS)/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) --label-exclude "slow|package"

# die_after_fork=0: the tests start helper processes with QProcess while threads run (the child only
# execs); ThreadSanitizer would otherwise refuse every thread started after such a fork.
test-tsan: deps
	$(call sanitized_configure,$(TSAN_DIR),-fsanitize=thread,-fsanitize=thread,-fsanitize=thread,-DMNEME_BUILD_EXAMPLES=ON)
	cmake --build $(TSAN_DIR) -j $(JOBS) --target mneme_concurrency_tests
	cd $(TSAN_DIR) && TSAN_OPTIONS="suppressions=$(SANITIZER_SUPPRESSIONS)/tsan.supp halt_on_error=1 second_deadlock_stack=1 die_after_fork=0" \
	  ctest --output-on-failure -j $(JOBS) -L concurrency

fuzz-build: deps-sanitizers
	@if [ ! -f $(FUZZ_DIR)/CMakeCache.txt ]; then \
	  cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
	    -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DMNEME_PRECOMPILE_HEADERS=OFF \
	    -DMNEME_BUILD_FUZZERS=ON -DMNEME_HNSWLIB_NO_SIMD=ON -DMNEME_BUILD_TESTS=OFF -DMNEME_BUILD_EXAMPLES=OFF -DMNEME_BUILD_BENCH=OFF \
	    -DMNEME_BUILD_CLI=OFF -DMNEME_INSTALL=OFF $(CCACHE); \
	fi
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target mneme_fuzzers

fuzz: fuzz-build
	bash fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

fuzz-ci: FUZZ_SECONDS = 10
fuzz-ci: fuzz

install: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme_installable
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# Debian packages in $(BUILD_DIR)/packages: libmneme<version>, libmneme-dev, mneme.
package: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target mneme_installable
	cd $(BUILD_DIR) && cpack --config CPackConfig.cmake

# Installs the packages on this machine (root), checks them as a user would, and removes them.
check-packages: package
	bash scripts/check-packages.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
